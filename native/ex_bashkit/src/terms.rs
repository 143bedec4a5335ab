//! Building terms shared by the NIF modules.

use rustler::{Binary, Env, NewBinary};

/// Copies raw bytes into a binary term: output is never re-encoded.
pub fn bytes<'a>(env: Env<'a>, data: &[u8]) -> Binary<'a> {
    let mut binary = NewBinary::new(env, data.len());
    binary.as_mut_slice().copy_from_slice(data);
    binary.into()
}
