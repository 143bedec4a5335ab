//! The protocol's types (`ex_bashkit_protocol`) to and from the VM's terms:
//! read with serde over rustler's terms (`term_reader.rs`), written with the
//! protocol's own serializer, so the NIF and a worker agree on every shape.

use ex_bashkit_core::script_error::ScriptError;
use rustler::{Decoder, Encoder, Env, Error, NifResult, Term};

/// A type of the protocol crate (`ex_bashkit_protocol`), read with serde
/// (`term_reader.rs`). Elixir checked and normalized the term, so a term
/// that does not fit is our bug: it raises, saying why.
pub struct Protocol<T>(pub T);

impl<'a, T: serde::Deserialize<'a> + 'a> Decoder<'a> for Protocol<T> {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        crate::term_reader::from_term(term)
            .map(Protocol)
            .map_err(|error| Error::RaiseTerm(Box::new(error.to_string())))
    }
}

/// Written by the protocol's own serializer, as the worker writes it.
impl<T: serde::Serialize> Encoder for Protocol<T> {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        crate::terms::protocol(env, &self.0)
    }
}

/// A script's error, `{reason, limit, message, stdout, stderr}`, as
/// `ExBashkit.Error` reads it.
pub type NifError = Protocol<ScriptError>;

impl From<String> for NifError {
    fn from(message: String) -> Self {
        Protocol(ScriptError::from(message))
    }
}
