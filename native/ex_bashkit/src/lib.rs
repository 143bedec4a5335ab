//! NIF entry point for `ExBashkit.Native`. Only wiring lives here; each
//! concept has its own module.

mod analysis;
mod atoms;
mod builtins;
mod call_scope;
mod callback;
mod cancel;
mod egress;
mod error;
mod exec;
mod exec_options;
mod features;
mod file_kind;
mod fs;
mod hardening;
mod job;
mod jobs;
mod json;
mod limits;
mod memory;
#[cfg(feature = "python")]
mod monty_paths;
mod mounts;
mod nesting;
mod network;
mod options;
mod panics;
mod python;
pub mod runtime;
mod script_error;
mod session;
mod snapshot;
mod snapshot_bound;
mod stack;
mod stats;
mod streaming;
mod sync;
mod terms;
mod tidy;
mod virtual_fs;
pub mod worker;
mod worker_host;
mod zygote;

/// Inside the VM, glibc's malloc handed large buffers back to the kernel and
/// faulted them in again: a 10 MB snapshot took 2× as long as in a plain
/// Rust program, with ~50× the page faults. Our own allocator keeps this
/// library's memory behaviour the same wherever it is loaded; every
/// allocation is counted, to bound what scripts take (`memory.rs`).
#[global_allocator]
static ALLOCATOR: memory::Counting<mimalloc::MiMalloc> = memory::Counting(mimalloc::MiMalloc);

rustler::init!("Elixir.ExBashkit.Native", load = load);

/// Interpreter panics are reported through Logger, never printed with
/// script bytes on the VM's stderr (`panics.rs`). The memory budget starts
/// at its default until the application sets it from its config.
fn load(_env: rustler::Env, _info: rustler::Term) -> bool {
    panics::install();
    memory::set_budget(None);
    true
}
