//! What the interpreters are doing, VM-wide, as `ExBashkit.stats/0`
//! reports it, and the memory budget it is measured against.

use rustler::NifMap;

use ex_bashkit_core::memory;
use ex_bashkit_core::runtime::{self, interpreters};

#[derive(NifMap)]
pub struct Stats {
    threads: usize,
    hogged: usize,
    live_bytes: i64,
    budget_bytes: i64,
    frozen_scripts: u64,
    frozen_bytes: i64,
    prepared: usize,
    caller_slots: usize,
}

#[rustler::nif]
fn stats() -> Stats {
    let threads = interpreters().map_or(runtime::Stats::default(), |pool| pool.stats());
    let memory = memory::stats();
    Stats {
        threads: threads.threads,
        hogged: threads.hogged,
        live_bytes: memory.live_bytes,
        budget_bytes: memory.budget_bytes,
        frozen_scripts: memory.frozen_scripts,
        frozen_bytes: memory.frozen_bytes,
        prepared: crate::prepared::shelved(),
        caller_slots: ex_bashkit_core::inline::slots(),
    }
}

/// `nil` restores the default budget.
#[rustler::nif]
fn set_memory_budget(bytes: Option<u64>) -> rustler::Atom {
    memory::set_budget(bytes);
    crate::atoms::ok()
}
