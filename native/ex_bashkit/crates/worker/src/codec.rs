//! Building the worker's frames to the VM. What the frames carry (a
//! script's result or error, file entries, a callback's request) is the
//! protocol crate's, written with its serializer; this is the frame around
//! it.

use std::collections::HashMap;

use eetf::{Atom, Binary, List, Map, Term, Tuple};
use serde::Serialize;

use ex_bashkit_protocol::etf::{self, Etf, Terms};

pub fn atom(name: &str) -> Term {
    Term::Atom(Atom::from(name))
}

pub fn tuple(elements: Vec<Term>) -> Term {
    Term::Tuple(Tuple::from(elements))
}

pub fn binary(bytes: &[u8]) -> Term {
    Term::Binary(Binary::from(bytes))
}

/// A binary that takes `bytes` over instead of copying them (a snapshot,
/// a file's content: megabytes).
pub fn owned_binary(bytes: Vec<u8>) -> Term {
    Term::Binary(Binary::from(bytes))
}

pub fn list(elements: Vec<Term>) -> Term {
    Term::List(List::from(elements))
}

pub fn boolean(value: bool) -> Term {
    atom(if value { "true" } else { "false" })
}

pub fn integer(value: i64) -> Term {
    Etf.integer(value)
}

pub fn ok(value: Term) -> Term {
    tuple(vec![atom("ok"), value])
}

pub fn error(message: &str) -> Term {
    tuple(vec![atom("error"), binary(message.as_bytes())])
}

/// A protocol type's term. The protocol's types always make one; the
/// fallback only keeps a bug from panicking the worker.
pub fn protocol<T: Serialize + ?Sized>(value: &T) -> Term {
    etf::to_term(value).unwrap_or_else(|why| error(&why.to_string()))
}

/// A map with atom keys, as Elixir reads options and requests.
pub fn fields(pairs: Vec<(&str, Term)>) -> Term {
    let map: HashMap<Term, Term> = pairs.into_iter().map(|(k, v)| (atom(k), v)).collect();
    Term::Map(Map::from(map))
}

/// The hardening report: `{[{layer, :ok | {:missing, reason}}], cgroup_dirs, os_pid}`.
pub fn hardening(report: &ex_bashkit_jail::Report) -> Term {
    let dirs = report
        .cgroups
        .iter()
        .map(|dir| binary(dir.as_os_str().as_encoded_bytes()))
        .collect();
    // The worker's own pid: a zygote's child is not the Port's process.
    // SAFETY: a plain syscall.
    let pid = i64::from(unsafe { libc::getpid() });
    tuple(vec![layers(report), list(dirs), integer(pid)])
}

fn layers(report: &ex_bashkit_jail::Report) -> Term {
    list(
        report
            .layers
            .iter()
            .map(|(layer, outcome)| {
                let state = match outcome {
                    Ok(()) => atom("ok"),
                    Err(reason) => {
                        tuple(vec![atom("missing"), binary(reason.to_string().as_bytes())])
                    }
                };
                tuple(vec![atom(layer), state])
            })
            .collect(),
    )
}
