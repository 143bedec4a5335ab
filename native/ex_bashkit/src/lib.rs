//! NIF entry point for `ExBashkit.Native`. Only wiring lives here; each
//! concept has its own module.

mod atoms;
mod error;
mod exec;
mod fs;
mod options;
mod reply;
pub mod runtime;
mod session;

rustler::init!("Elixir.ExBashkit.Native");
