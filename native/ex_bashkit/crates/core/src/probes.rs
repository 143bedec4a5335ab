//! Test builds only (cargo feature `escape_probe`): the builtins the
//! suite attacks a worker from inside with, `escape` (the jail's layers,
//! tried) and `lie` (forged frames to the VM).

pub mod escape_probe;
pub mod lie_probe;
