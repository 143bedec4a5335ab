//! The worker process of `isolation: :process` sessions: the core's
//! interpreter (`ex_bashkit_core`) behind the Port's pipes, in an OS
//! process the VM can kill. Only wiring lives here.

mod calls;
mod code;
mod codec;
mod deadline;
// Without the network part, bashkit makes no requests to send.
#[cfg(feature = "network")]
mod egress;
mod frame;
mod job;
// JavaScript runs only here, never in the VM.
#[cfg(feature = "javascript")]
mod js;
pub mod protocol;
mod serve;
mod shells;
// `sqlite3` runs only here, never in the VM.
#[cfg(feature = "sqlite")]
mod sqlite;
pub mod zygote;

pub use serve::main;

/// The same allocator as in the VM, counting every allocation, so a
/// script's memory is bounded here as it is there (the core's `memory.rs`).
#[global_allocator]
static ALLOCATOR: ex_bashkit_core::memory::Counting<mimalloc::MiMalloc> =
    ex_bashkit_core::memory::Counting(mimalloc::MiMalloc);
