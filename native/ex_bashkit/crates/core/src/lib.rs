//! The interpreter core of ex_bashkit: sessions over bashkit, their
//! options, limits and memory accounting, the scripts' runtime, the file
//! API, snapshots, and what a session needs of a worker's jail (the jail
//! itself is `crates/jail`). It knows nothing of the BEAM: the NIF crate (`native/ex_bashkit`) and the worker
//! crate (`crates/worker`) each reach Elixir their own way, through the
//! traits here (`callback::Remote`, `job::Job`, `streaming::Listen`).

pub mod builtins;
pub mod call;
pub mod call_scope;
pub mod callback;
pub mod cancel;
pub mod checkpoints;
pub mod cow_fs;
pub mod error;
pub mod exec;
pub mod file_kind;
pub mod fs;
#[cfg(feature = "git")]
pub mod git;
pub mod inline;
pub mod job;
pub mod limits;
pub mod memory;
#[cfg(feature = "mounts")]
pub mod metadata_guard;
#[cfg(feature = "python")]
mod monty_paths;
#[cfg(feature = "mounts")]
mod mount_reads;
pub mod mounts;
pub mod nesting;
pub mod network;
pub mod options;
/// `npm ci`/`npm install` and the host's package cache.
#[cfg(feature = "network")]
pub use ex_bashkit_packages as packages;
#[cfg(all(feature = "network", feature = "git"))]
pub mod pack_transport;
pub mod policy;
#[cfg(feature = "escape_probe")]
pub mod probes;
pub mod python;
#[cfg(feature = "python")]
mod python_tools;
pub mod run_stats;
pub mod runtime;
pub mod script_error;
pub mod session;
#[cfg(feature = "cpython")]
pub mod site_packages;
pub mod snapshot;
pub mod snapshot_bound;
pub mod stack;
pub mod stop;
pub mod streaming;
pub mod sync;
pub mod tidy;
pub mod tool_bridge;
pub mod virtual_fs;
pub mod written;
