//! `src/nesting.rs` touches no rustler API, so its unit tests run here,
//! outside the BEAM.
#[path = "../src/nesting.rs"]
mod nesting;
