//! NIF entry point for `ExBashkit.Native`. Only wiring lives here; each
//! concept has its own module.

mod atoms;
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

rustler::init!("Elixir.ExBashkit.Native");
