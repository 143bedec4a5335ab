//! Small synchronization helpers shared across modules.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`; a panic elsewhere must not wedge a script's bookkeeping.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
