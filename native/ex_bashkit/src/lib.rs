//! NIF entry point for `ExBashkit.Native`. Only wiring lives here; each
//! concept has its own module, and the interpreter itself is the core crate
//! (`crates/core`), which the worker executables share without the VM.

mod analysis;
mod atoms;
mod callback;
mod checkpoints;
mod convert;
mod egress;
mod envs;
mod exec;
mod exec_options;
mod features;
mod fork;
mod fs;
mod jobs;
mod json;
mod panics;
mod prepared;
mod session;
mod snapshot;
mod stats;
mod streaming;
mod term_reader;
mod terms;
mod worker_host;

use ex_bashkit_core::memory;

/// Inside the VM, glibc's malloc handed large buffers back to the kernel and
/// faulted them in again: a 10 MB snapshot took 2× as long as in a plain
/// Rust program, with ~50× the page faults. Our own allocator keeps this
/// library's memory behaviour the same wherever it is loaded; every
/// allocation is counted, to bound what scripts take (`memory.rs`).
#[global_allocator]
static ALLOCATOR: memory::Counting<mimalloc::MiMalloc> = memory::Counting(mimalloc::MiMalloc);

/// Runs when the library is loaded, before its first allocation maps
/// mimalloc's arena, so that no memory of ours asks for huge pages
/// (`memory::small_pages`).
#[used]
#[link_section = ".init_array"]
static SMALL_PAGES: extern "C" fn() = {
    extern "C" fn small_pages() {
        memory::small_pages();
    }
    small_pages
};

rustler::init!("Elixir.ExBashkit.Native", load = load);

/// Interpreter panics are reported through Logger, never printed with
/// script bytes on the VM's stderr (`panics.rs`). The memory budget starts
/// at its default until the application sets it from its config.
fn load(_env: rustler::Env, info: rustler::Term) -> bool {
    panics::install();
    if let Ok(dirty_cpu_schedulers) = info.decode::<usize>() {
        ex_bashkit_core::inline::set_dirty_schedulers(dirty_cpu_schedulers);
    }
    memory::set_budget(None);
    true
}
