//! A job as its thread runs it: each poll is timed on the thread's
//! [`Load`] (a poll that runs long marks the thread hogged), and the job
//! counts as work there until it answers its caller or ends.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::load::Load;
use super::{now, Inbox, Job};

/// A poll that freed this much has its thread hand the free pages back to
/// the OS once it has had no work for a while ([`collect`]).
const COLLECT_AFTER_FREED_BYTES: isize = 64 << 20;

/// A job whose polls are timed on its thread's [`Load`], and which counts
/// in its `jobs` until it says it is done ([`job_done`]) or ends.
pub(super) struct Timed {
    pub(super) job: Job,
    /// Its thread's inbox, whose loop is woken when a collection is owed.
    pub(super) inbox: Arc<Inbox>,
    pub(super) load: Arc<Load>,
    pub(super) counted: bool,
}

thread_local! {
    /// While a job is polled: its thread's [`Load`], and whether the job
    /// said it is done.
    static POLLING: Cell<(*const Load, bool)> = const { Cell::new((std::ptr::null(), false)) };

    /// Whether a poll on this thread freed [`COLLECT_AFTER_FREED_BYTES`]
    /// since its last collection.
    static COLLECT_OWED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a poll on this thread freed much since its last collection.
pub(super) fn collect_owed() -> bool {
    COLLECT_OWED.with(Cell::get)
}

/// Hands the pages this thread freed back to the OS. Called once the
/// thread has had no work for a while (`serve`): made right after the
/// poll that freed them, the collection put the cost of faulting fresh
/// pages in on the thread's next large job (snapshot + restore of 10 MB
/// in a loop: 32.9 ms a round, against 25.1 ms deferred; `bench/README.md`).
pub(super) fn collect() {
    COLLECT_OWED.with(|owed| owed.set(false));
    // SAFETY: mi_collect has no preconditions.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// The job being polled on this thread has answered its caller: it no
/// longer counts as work there. Called before the answer is sent, so the
/// caller's next script finds the thread idle and stays on it.
pub fn job_done() {
    let _ = POLLING.try_with(|polling| {
        let (load, done) = polling.get();
        if !load.is_null() && !done {
            // SAFETY: set by `Timed::poll` from the `Arc<Load>` it holds,
            // for the duration of that poll, which is the caller's.
            unsafe { &*load }.jobs.fetch_sub(1, Ordering::Relaxed);
            polling.set((load, true));
        }
    });
}

/// A job's end, however it ends (finished, or dropped with its runtime).
impl Drop for Timed {
    fn drop(&mut self) {
        if self.counted {
            self.load.jobs.fetch_sub(1, Ordering::Relaxed);
        }
        // The last job gone, whatever a retired blocking thread left to
        // this one has been freed. A parse's thread retires after half a
        // second without work, often before the script it parsed ends.
        // (Thread-locals by `try_with`: a runtime dropped at the thread's
        // exit drops its jobs after them.)
        if self.load.jobs.load(Ordering::Relaxed) == 0 {
            if self.load.blocking_retired.swap(false, Ordering::Acquire) {
                let _ = COLLECT_OWED.try_with(|owed| owed.set(true));
            }
            super::job_ended();
        }
        // The thread's loop may be asleep waiting for a job, and would
        // collect only when the next one came (136 MB stayed resident
        // when the session's next script went to another thread).
        if COLLECT_OWED.try_with(Cell::get).unwrap_or(false) {
            self.inbox.arrived.notify_one();
        }
    }
}

impl Future for Timed {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.load.busy_since.store(now(), Ordering::Relaxed);
        let previous = POLLING.replace((Arc::as_ptr(&self.load), !self.counted));
        let poll = self.job.as_mut().poll(cx);
        let (_, done) = POLLING.replace(previous);
        self.counted &= !done;
        self.load.busy_since.store(0, Ordering::Relaxed);
        // A script that recursed deep leaves no resident stack behind, and
        // one that freed much leaves no freed pages resident once its
        // thread is idle: mimalloc keeps them for reuse until it is told
        // to collect.
        crate::memory::release_stack();
        if crate::memory::take_freed() > COLLECT_AFTER_FREED_BYTES {
            COLLECT_OWED.with(|owed| owed.set(true));
        }
        poll
    }
}
