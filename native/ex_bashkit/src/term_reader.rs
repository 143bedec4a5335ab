//! The protocol's types read straight from the VM's terms, with the
//! conventions of the protocol's own adapter (`ex_bashkit_protocol::etf`):
//! a struct is a map with atom keys (`__struct__` left out), a unit variant
//! an atom, a newtype or tuple variant a tagged tuple, `nil` is `None`.
//!
//! rustler's own serde support reads the same shapes, but it copies every
//! atom's name into a new `String` (each key of each map): 2.9 µs for
//! `%ExBashkit.Session.Options{}`, a tenth of a `Session.new/1`. Here a
//! name is read into a buffer on the stack and binaries are borrowed, as
//! the hand-written decoders this replaced did.

use std::fmt;

use rustler::types::atom;
use rustler::types::tuple::get_tuple;
use rustler::{Binary, ListIterator, MapIterator, Term, TermType};
use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

/// Why a term does not fit its type.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error(message.to_string())
    }
}

/// Terms deeper than this are refused: what Elixir sends is a few levels
/// deep, and serde recurses once per level.
const MAX_DEPTH: usize = 128;

/// `T` read from `term`.
pub fn from_term<'a, T: de::Deserialize<'a>>(term: Term<'a>) -> Result<T, Error> {
    T::deserialize(Deserializer { term, depth: 0 })
}

fn expected(what: &str, term: Term<'_>) -> Error {
    Error(format!("expected {what}, got {term:?}"))
}

/// Writes an atom's name into `buffer`: its length, if it is ASCII and
/// fits (every atom we read is a short name of ours).
fn atom_name(term: Term<'_>, buffer: &mut [u8; 256]) -> Option<usize> {
    // SAFETY: `term` belongs to its env, and the buffer is as long as we
    // say; enif_get_atom writes at most that, its NUL included.
    let written = unsafe {
        rustler::sys::enif_get_atom(
            term.get_env().as_c_arg(),
            term.as_c_arg(),
            buffer.as_mut_ptr().cast(),
            buffer.len() as u32,
            rustler::sys::ErlNifCharEncoding::ERL_NIF_LATIN1,
        )
    };
    let len = usize::try_from(written).ok()?.checked_sub(1)?;
    buffer[..len].is_ascii().then_some(len)
}

fn is_atom(term: Term<'_>, atom: rustler::Atom) -> bool {
    atom == term
}

/// Reads one term.
pub struct Deserializer<'a> {
    term: Term<'a>,
    depth: usize,
}

impl<'a> Deserializer<'a> {
    fn deeper(&self) -> Result<usize, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error(format!("a term nested deeper than {MAX_DEPTH}")));
        }
        Ok(self.depth + 1)
    }

    fn number<N: rustler::Decoder<'a>>(&self) -> Result<N, Error> {
        if !matches!(self.term.get_type(), TermType::Integer | TermType::Float) {
            return Err(expected("a number", self.term));
        }
        self.term
            .decode()
            .map_err(|_| expected("a number in range", self.term))
    }

    fn binary(&self) -> Result<&'a [u8], Error> {
        self.term
            .decode::<Binary<'a>>()
            .map(|binary| binary.as_slice())
            .map_err(|_| expected("a binary", self.term))
    }

    /// An atom's or a binary's text, for `visit`.
    fn name<V, R>(&self, visit: V) -> Result<R, Error>
    where
        V: FnOnce(&str) -> Result<R, Error>,
    {
        if self.term.is_atom() {
            // On the stack, not moved: a name is read for every key.
            let mut buffer = [0u8; 256];
            let len = atom_name(self.term, &mut buffer)
                .ok_or_else(|| expected("a short ASCII atom", self.term))?;
            let name =
                std::str::from_utf8(&buffer[..len]).map_err(|_| expected("ASCII", self.term))?;
            return visit(name);
        }
        let bytes = self.binary().map_err(|_| expected("an atom", self.term))?;
        visit(std::str::from_utf8(bytes).map_err(|_| expected("UTF-8 text", self.term))?)
    }
}

macro_rules! numbers {
    ($($method:ident => $visit:ident : $type:ty),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.$visit(self.number::<$type>()?)
        })*
    };
}

impl<'de, 'a: 'de> de::Deserializer<'de> for Deserializer<'a> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.term.get_type() {
            TermType::Atom if is_atom(self.term, atom::nil()) => visitor.visit_unit(),
            TermType::Atom if is_atom(self.term, atom::true_()) => visitor.visit_bool(true),
            TermType::Atom if is_atom(self.term, atom::false_()) => visitor.visit_bool(false),
            TermType::Atom => self.name(|name| visitor.visit_str(name)),
            TermType::Integer => match self.term.decode::<i64>() {
                Ok(value) => visitor.visit_i64(value),
                Err(_) => visitor.visit_u64(self.number()?),
            },
            TermType::Float => visitor.visit_f64(self.number()?),
            TermType::Binary => {
                let bytes = self.binary()?;
                match std::str::from_utf8(bytes) {
                    Ok(text) => visitor.visit_borrowed_str(text),
                    Err(_) => visitor.visit_borrowed_bytes(bytes),
                }
            }
            TermType::List | TermType::Tuple => self.deserialize_seq(visitor),
            TermType::Map => self.deserialize_map(visitor),
            _ => Err(expected("a plain term", self.term)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if is_atom(self.term, atom::true_()) {
            visitor.visit_bool(true)
        } else if is_atom(self.term, atom::false_()) {
            visitor.visit_bool(false)
        } else {
            Err(expected("a boolean", self.term))
        }
    }

    numbers! {
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64,
        deserialize_f32 => visit_f32: f32,
        deserialize_f64 => visit_f64: f64,
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let bytes = self.binary()?;
        visitor.visit_borrowed_str(
            std::str::from_utf8(bytes).map_err(|_| expected("UTF-8 text", self.term))?,
        )
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_bytes(self.binary()?)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if is_atom(self.term, atom::nil()) {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if is_atom(self.term, atom::nil()) {
            visitor.visit_unit()
        } else {
            Err(expected("nil", self.term))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        if self.term.get_type() == TermType::Tuple {
            let items = get_tuple(self.term).map_err(|_| expected("a tuple", self.term))?;
            return visitor.visit_seq(Items::Tuple(items.into_iter(), depth));
        }
        let list = self
            .term
            .decode::<ListIterator<'a>>()
            .map_err(|_| expected("a list", self.term))?;
        visitor.visit_seq(Items::List(list, depth))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match get_tuple(self.term) {
            Ok(items) if items.len() == len => {
                visitor.visit_seq(Items::Tuple(items.into_iter(), depth))
            }
            _ => Err(expected(&format!("a tuple of {len}"), self.term)),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        let entries = MapIterator::new(self.term).ok_or_else(|| expected("a map", self.term))?;
        visitor.visit_map(Entries {
            entries,
            value: None,
            depth,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let depth = self.deeper()?;
        match self.term.get_type() {
            TermType::Atom | TermType::Binary => visitor.visit_enum(Variant {
                tag: self.term,
                values: Vec::new(),
                depth,
            }),
            TermType::Tuple => {
                let mut values =
                    get_tuple(self.term).map_err(|_| expected("a tuple", self.term))?;
                if values.len() < 2 {
                    return Err(expected("a tagged tuple", self.term));
                }
                let tag = values.remove(0);
                visitor.visit_enum(Variant { tag, values, depth })
            }
            _ => Err(expected("an atom or a tagged tuple", self.term)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.term.is_atom() {
            self.name(|name| visitor.visit_str(name))
        } else {
            self.deserialize_str(visitor)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// A list's or a tuple's elements, in order.
enum Items<'a> {
    List(ListIterator<'a>, usize),
    Tuple(std::vec::IntoIter<Term<'a>>, usize),
}

impl<'de, 'a: 'de> SeqAccess<'de> for Items<'a> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let (item, depth) = match self {
            Items::List(list, depth) => (list.next(), *depth),
            Items::Tuple(tuple, depth) => (tuple.next(), *depth),
        };
        item.map(|term| seed.deserialize(Deserializer { term, depth }))
            .transpose()
    }
}

/// A map's entries, `__struct__` left out.
struct Entries<'a> {
    entries: MapIterator<'a>,
    value: Option<Term<'a>>,
    depth: usize,
}

mod atoms {
    rustler::atoms! { __struct__ }
}

impl<'de, 'a: 'de> MapAccess<'de> for Entries<'a> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        for (key, value) in self.entries.by_ref() {
            if is_atom(key, atoms::__struct__()) {
                continue;
            }
            self.value = Some(value);
            let depth = self.depth;
            return seed
                .deserialize(Deserializer { term: key, depth })
                .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let term = self
            .value
            .take()
            .ok_or_else(|| Error("a value without its key".into()))?;
        seed.deserialize(Deserializer {
            term,
            depth: self.depth,
        })
    }
}

/// An enum's variant: its tag, and what follows it in its tuple.
struct Variant<'a> {
    tag: Term<'a>,
    values: Vec<Term<'a>>,
    depth: usize,
}

impl<'de, 'a: 'de> EnumAccess<'de> for Variant<'a> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let tag = Deserializer {
            term: self.tag,
            depth: self.depth,
        };
        // As the protocol's adapter: `{:ok, _}` and `{:error, _}` are `Ok`
        // and `Err`.
        let variant = tag.name(|name| {
            let name = match name {
                "ok" => "Ok",
                "error" => "Err",
                name => name,
            };
            seed.deserialize(name.into_deserializer())
        })?;
        Ok((variant, self))
    }
}

impl<'de, 'a: 'de> VariantAccess<'de> for Variant<'a> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        if self.values.is_empty() {
            Ok(())
        } else {
            Err(expected("an atom", self.tag))
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.values.as_slice() {
            [term] => seed.deserialize(Deserializer {
                term: *term,
                depth: self.depth,
            }),
            _ => Err(expected("a tag and one value", self.tag)),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        if self.values.len() != len {
            return Err(expected(&format!("a tag and {len} values"), self.tag));
        }
        visitor.visit_seq(Items::Tuple(self.values.into_iter(), self.depth))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.values.as_slice() {
            [term] => de::Deserializer::deserialize_map(
                Deserializer {
                    term: *term,
                    depth: self.depth,
                },
                visitor,
            ),
            _ => Err(expected("a tag and a map", self.tag)),
        }
    }
}
