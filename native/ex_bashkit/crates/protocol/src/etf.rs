//! serde over Erlang terms as the worker reads and writes them (`eetf`),
//! with the conventions rustler's serde support uses in the NIF, so one
//! type reads the same from either side of the boundary:
//!
//! | Rust                         | Erlang term                          |
//! |------------------------------|--------------------------------------|
//! | `bool`, integers, floats     | `true`/`false`, integers, floats     |
//! | `String`, `serde_bytes`      | a binary                             |
//! | `Option<T>`, `()`            | `nil` or the value; `nil`            |
//! | `Vec<T>`, tuples             | a list; a tuple                      |
//! | a struct                     | a map with atom keys (`__struct__` ignored on reading) |
//! | a unit variant               | an atom                              |
//! | a newtype or tuple variant   | `{:tag, value, ...}`                 |
//! | a struct variant             | `{:tag, %{field: value}}`            |
//!
//! A term of another shape than its type wants is an [`Error`] naming
//! both, never a panic: the worker decodes frames from the VM with it, and
//! the VM decodes the worker's with `:erlang.binary_to_term/2`.

use std::fmt;

use eetf::{Atom, Term};
use serde::{de, ser, Serialize};

mod de_term;
mod ser_term;
#[cfg(test)]
mod tests;

pub use de_term::Deserializer;
pub use ser_term::{write, Etf, Serializer, Terms};

/// Why a term does not fit its type, or a value does not make a term.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub(crate) String);

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error(message.to_string())
    }
}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error(message.to_string())
    }
}

/// Terms deeper than this are refused: a frame is a few levels deep, and
/// serde recurses once per level.
pub(crate) const MAX_DEPTH: usize = 128;

/// `T` read from `term`, which it takes apart: binaries move into the
/// value (a file's content, a snapshot: megabytes) rather than copied.
pub fn from_term<T: de::DeserializeOwned>(term: Term) -> Result<T, Error> {
    T::deserialize(Deserializer::new(term, 0))
}

/// `value` as an `eetf` term.
pub fn to_term<T: Serialize + ?Sized>(value: &T) -> Result<Term, Error> {
    write(Etf, value)
}

/// The atom named `name`.
pub fn atom(name: &str) -> Term {
    Term::Atom(Atom::from(name))
}
