//! A script that goes past its cap inside work that cannot be interrupted
//! is frozen where it stands (its thread sleeps for good, holding what it
//! took), and the watchdog answers its caller at once.

use std::sync::atomic::{AtomicIsize, AtomicPtr, AtomicUsize, Ordering};

use super::{Account, Stop};
use crate::sync::lock;

/// The most scripts whose callers the watchdog answers after a freeze;
/// beyond it callers are answered at their deadline.
const FREEZE_SLOTS: usize = 64;

static FROZEN: [AtomicPtr<Account>; FREEZE_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; FREEZE_SLOTS];
pub(super) static FROZEN_SCRIPTS: AtomicUsize = AtomicUsize::new(0);
pub(super) static FROZEN_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Frozen scripts whose callers are not answered yet.
static UNANSWERED: AtomicUsize = AtomicUsize::new(0);

/// Stops the calling thread for good, inside the allocation that went too
/// far. Never allocates.
pub(super) fn freeze(account: &Account, used: isize) -> ! {
    if account.stopped() == Stop::Running {
        account.stop(Stop::Cap);
    }
    account.frozen.store(true, Ordering::Release);
    account.session_frozen.store(true, Ordering::Release);
    FROZEN_SCRIPTS.fetch_add(1, Ordering::Relaxed);
    FROZEN_BYTES.fetch_add(used, Ordering::Relaxed);
    let pointer = account as *const Account as *mut Account;
    if FROZEN.iter().any(|slot| {
        slot.compare_exchange(
            std::ptr::null_mut(),
            pointer,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_ok()
    }) {
        UNANSWERED.fetch_add(1, Ordering::Release);
        if let Some(watchdog) = WATCHDOG.get() {
            watchdog.unpark();
        }
    }
    super::stand_still()
}

/// The thread that runs [`answer_frozen`], woken by a thread that freezes
/// so its caller is answered at once, whatever the watchdog's interval.
static WATCHDOG: std::sync::OnceLock<std::thread::Thread> = std::sync::OnceLock::new();

/// Names the thread a freeze wakes (the runtime's watchdog).
pub fn wake_on_freeze(watchdog: std::thread::Thread) {
    let _ = WATCHDOG.set(watchdog);
}

/// Answers the callers of scripts frozen since the last call. Run by the
/// watchdog thread.
pub fn answer_frozen() {
    if UNANSWERED.load(Ordering::Acquire) == 0 {
        return;
    }
    for slot in &FROZEN {
        let pointer = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if pointer.is_null() {
            continue;
        }
        UNANSWERED.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: a frozen script's future is never dropped (its thread
        // never returns), so its account lives for good.
        let account = unsafe { &*pointer };
        let answer = lock(&account.on_freeze).take();
        if let (Some(answer), Some((message, limit))) = (answer, account.verdict()) {
            let message = format!(
                "{message}; it was inside work that cannot be interrupted and was frozen \
                 where it stood: the session can run no more scripts (start a new one)"
            );
            answer(message, limit);
        }
    }
}
