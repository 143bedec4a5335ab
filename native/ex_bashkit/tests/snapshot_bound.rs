//! `src/snapshot_bound.rs` touches no rustler API, so its unit tests run
//! here, outside the BEAM (the cdylib's own test harness cannot link).
#[path = "../src/snapshot_bound.rs"]
mod snapshot_bound;
