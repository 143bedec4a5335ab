//! The interpreter thread pool, compiled standalone: it has no rustler
//! dependency, so its tests run without a BEAM.

#[path = "../src/runtime.rs"]
#[allow(dead_code)]
mod runtime;
