//! Building terms shared by the NIF modules.

use rustler::{Binary, Decoder, Encoder, Env, NewBinary, NifResult, Term};

/// Copies raw bytes into a binary term: output is never re-encoded.
pub fn bytes<'a>(env: Env<'a>, data: &[u8]) -> Binary<'a> {
    let mut binary = NewBinary::new(env, data.len());
    binary.as_mut_slice().copy_from_slice(data);
    binary.into()
}

/// A binary from Elixir, copied out of the term.
pub struct Bytes(pub Vec<u8>);

impl<'a> Decoder<'a> for Bytes {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        Ok(Bytes(term.decode::<Binary>()?.as_slice().to_vec()))
    }
}

impl Encoder for Bytes {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        bytes(env, &self.0).encode(env)
    }
}
