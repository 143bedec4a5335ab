//! The interpreter thread pool, compiled standalone: it has no rustler
//! dependency, so its tests run without a BEAM.

#[path = "../src/runtime.rs"]
#[allow(dead_code, unused_imports)]
mod runtime;
// The watchdog answers frozen scripts (`memory.rs`).
#[path = "../src/memory.rs"]
#[allow(dead_code, unused_imports)]
mod memory;
#[path = "../src/stack.rs"]
mod stack;
#[path = "../src/sync.rs"]
mod sync;
