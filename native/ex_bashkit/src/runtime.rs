//! The tokio runtime every script runs on.
//!
//! Scripts never run on a BEAM scheduler thread (normal or dirty): bashkit's
//! interpreter recurses on the native stack, and a dirty scheduler's ~320 KB
//! stack overflows on hostile input, which would abort the whole VM. Our
//! worker threads get a large stack instead. Linux commits stack pages lazily,
//! so an idle worker costs only the pages it has touched.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Runtime};

/// Stack size of every interpreter thread. Generous because eval recursion is
/// not depth-limited upstream; it is virtual memory until used.
pub const INTERPRETER_STACK_BYTES: usize = 1 << 30;

/// Upper bound on tokio's blocking pool (bashkit parses large scripts there).
const MAX_BLOCKING_THREADS: usize = 32;

/// The process-wide runtime, started on first use.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Builder::new_multi_thread()
            // More workers than cores so a few CPU-bound scripts cannot stall
            // every other session; waiting scripts hold no thread at all.
            .worker_threads((cores * 2).max(4))
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .thread_stack_size(INTERPRETER_STACK_BYTES)
            .thread_name("ex_bashkit")
            .enable_all()
            .build()
            .expect("ex_bashkit: cannot start the interpreter runtime")
    })
}
