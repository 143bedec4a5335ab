//! Building terms shared by the NIF modules.

use std::cell::RefCell;
use std::collections::HashMap;

use ex_bashkit_protocol::etf::{self, Terms};
use rustler::{Atom, Binary, Encoder, Env, NewBinary, Term};

/// Copies raw bytes into a binary term: output is never re-encoded.
pub fn bytes<'a>(env: Env<'a>, data: &[u8]) -> Binary<'a> {
    let mut binary = NewBinary::new(env, data.len());
    binary.as_mut_slice().copy_from_slice(data);
    binary.into()
}

/// The VM's own terms, for the protocol's serializer: the NIF writes every
/// protocol type exactly as the worker does.
#[derive(Clone, Copy)]
pub struct VmTerms<'a>(pub Env<'a>);

impl<'a> Terms for VmTerms<'a> {
    type Term = Term<'a>;

    fn atom(self, name: &str) -> Term<'a> {
        cached_atom(self.0, name).encode(self.0)
    }
    fn integer(self, value: i64) -> Term<'a> {
        value.encode(self.0)
    }
    fn unsigned(self, value: u64) -> Term<'a> {
        value.encode(self.0)
    }
    fn float(self, value: f64) -> Result<Term<'a>, etf::Error> {
        Ok(value.encode(self.0))
    }
    fn binary(self, data: &[u8]) -> Term<'a> {
        bytes(self.0, data).encode(self.0)
    }
    fn list(self, items: Vec<Term<'a>>) -> Term<'a> {
        items.encode(self.0)
    }
    fn tuple(self, items: Vec<Term<'a>>) -> Term<'a> {
        rustler::types::tuple::make_tuple(self.0, &items)
    }
    fn map(self, entries: Vec<(Term<'a>, Term<'a>)>) -> Term<'a> {
        let (keys, values): (Vec<_>, Vec<_>) = entries.into_iter().unzip();
        // Keys are distinct: struct fields, or a map's own keys.
        Term::map_from_term_arrays(self.0, &keys, &values).unwrap_or_else(|_| Term::map_new(self.0))
    }
}

thread_local! {
    /// Atoms already made, by name: making one takes the VM's atom table
    /// lock, which every script's answer would otherwise take (its
    /// `truncated` boolean), and a callback call for each of its keys.
    static ATOMS: RefCell<HashMap<String, Atom>> = RefCell::new(HashMap::new());
}

/// The atom `name`. Names come from our own types (struct fields, enum
/// variants): a fixed set, never a script's.
fn cached_atom(env: Env<'_>, name: &str) -> Atom {
    match name {
        "true" => return rustler::types::atom::true_(),
        "false" => return rustler::types::atom::false_(),
        "nil" => return rustler::types::atom::nil(),
        _ => {}
    }
    ATOMS.with(|atoms| {
        if let Some(atom) = atoms.borrow().get(name) {
            return *atom;
        }
        // Only a name past the atom table's limits fails: none of ours.
        let atom = Atom::from_str(env, name).unwrap_or_else(|_| rustler::types::atom::nil());
        atoms.borrow_mut().insert(name.to_owned(), atom);
        atom
    })
}

/// `value`, a protocol type, as a term of `env`.
pub fn protocol<'a, T: serde::Serialize + ?Sized>(env: Env<'a>, value: &T) -> Term<'a> {
    etf::write(VmTerms(env), value).unwrap_or_else(|error| error.to_string().encode(env))
}
