//! NIF entry point for `ExBashkit.Native`. Only wiring lives here; each
//! concept has its own module.

mod atoms;
mod builtins;
mod callback;
mod error;
mod exec;
mod fs;
mod limits;
mod mounts;
mod network;
mod options;
mod reply;
pub mod runtime;
mod session;
mod virtual_fs;

rustler::init!("Elixir.ExBashkit.Native");
