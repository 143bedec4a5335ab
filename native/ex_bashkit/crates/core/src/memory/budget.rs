//! The VM-wide memory budget: what every script of this process may hold
//! together.

use std::sync::atomic::{AtomicIsize, Ordering};

/// The VM-wide budget: unlimited until [`set_budget`] at load.
static BUDGET: AtomicIsize = AtomicIsize::new(isize::MAX);

/// The VM-wide budget.
pub fn budget() -> isize {
    BUDGET.load(Ordering::Relaxed)
}

/// Sets the VM-wide budget (`config :ex_bashkit, :memory_budget_bytes`);
/// `None` sets the default, a quarter of physical memory.
pub fn set_budget(bytes: Option<u64>) {
    let bytes = match bytes {
        Some(bytes) => isize::try_from(bytes).unwrap_or(isize::MAX),
        None => physical_memory().map_or(isize::MAX, |total| total / 4),
    };
    BUDGET.store(bytes.max(1), Ordering::Relaxed);
}

#[cfg(unix)]
fn physical_memory() -> Option<isize> {
    // SAFETY: sysconf only reads its argument.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page_size > 0).then(|| (pages as isize).saturating_mul(page_size as isize))
}

#[cfg(not(unix))]
fn physical_memory() -> Option<isize> {
    None
}
