//! What each interpreter thread is doing, as the pool and its watchdog
//! see it: its jobs, how long its current poll has run, and its CPU clock,
//! by which a poll that burns CPU moves the thread to `SCHED_IDLE` until
//! the poll ends (see the pool's documentation in `runtime.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::{BURN_THRESHOLD, HOG_THRESHOLD};

/// What a thread is doing, for placement decisions made elsewhere.
#[derive(Default)]
pub(super) struct Load {
    /// Jobs started on the thread and not yet finished (running or waiting).
    pub(super) jobs: AtomicUsize,
    /// When its current poll began ([`super::now`]), or 0 between polls.
    pub(super) busy_since: AtomicU64,
    /// The OS thread id, for its priority (0 where unknown).
    pub(super) tid: AtomicU64,
    /// Running at lowered priority.
    pub(super) niced: AtomicBool,
    /// Lowered for good: restoring the priority was refused.
    pub(super) demoted: AtomicBool,
    /// The thread's CPU clock, where the platform has one.
    pub(super) cpu_clock: OnceLock<CpuClock>,
    /// The poll the watchdog last saw (its `busy_since`), and the thread's
    /// CPU time then, in nanoseconds.
    pub(super) seen_poll: AtomicU64,
    pub(super) cpu_when_seen: AtomicU64,
    /// A thread of its blocking pool retired since the thread last
    /// collected: what it allocated and left to this thread to free (a
    /// parse's syntax tree) is only handed back by a collection here.
    pub(super) blocking_retired: AtomicBool,
}

impl Load {
    pub(super) fn hogged(&self, now: u64) -> bool {
        let since = self.busy_since.load(Ordering::Relaxed);
        since != 0 && now.saturating_sub(since) > HOG_THRESHOLD.as_nanos() as u64
    }

    /// Whether new work may go to this thread.
    pub(super) fn available(&self, now: u64) -> bool {
        !self.hogged(now) && !self.demoted.load(Ordering::Relaxed)
    }

    /// Whether the thread is hogged and its poll has burned more than
    /// [`BURN_THRESHOLD`] of CPU since the watchdog first saw it. Where
    /// there is no CPU clock, whether it is hogged. Called by the watchdog
    /// alone, which keeps the first sighting.
    pub(super) fn burning(&self, now: u64) -> bool {
        let since = self.busy_since.load(Ordering::Relaxed);
        if since == 0 {
            return false;
        }
        let Some(cpu) = self.cpu_clock.get().and_then(CpuClock::nanos) else {
            return self.hogged(now);
        };
        if self.seen_poll.swap(since, Ordering::Relaxed) != since {
            self.cpu_when_seen.store(cpu, Ordering::Relaxed);
            return false;
        }
        let burned = cpu.saturating_sub(self.cpu_when_seen.load(Ordering::Relaxed));
        self.hogged(now) && burned > BURN_THRESHOLD.as_nanos() as u64
    }

    /// Lowers the priority of a thread burning CPU in one poll, and
    /// restores it afterwards.
    pub(super) fn adjust_priority(&self, now: u64) {
        let burning = self.burning(now);
        if burning == self.niced.load(Ordering::Relaxed) || self.demoted.load(Ordering::Relaxed) {
            return;
        }
        let tid = self.tid.load(Ordering::Relaxed);
        if burning {
            if set_background(tid, true) {
                self.niced.store(true, Ordering::Relaxed);
            }
        } else if set_background(tid, false) {
            self.niced.store(false, Ordering::Relaxed);
        } else {
            self.demoted.store(true, Ordering::Relaxed);
        }
    }
}

/// A thread's CPU-time clock, readable from any thread.
#[derive(Clone, Copy)]
pub(super) struct CpuClock(#[cfg_attr(not(target_os = "linux"), allow(dead_code))] i64);

impl CpuClock {
    /// The calling thread's clock.
    #[cfg(target_os = "linux")]
    pub(super) fn current() -> Option<Self> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; `clock` is ours.
        let status = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        (status == 0).then_some(Self(i64::from(clock)))
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn current() -> Option<Self> {
        None
    }

    /// CPU time the thread has used.
    #[cfg(target_os = "linux")]
    fn nanos(&self) -> Option<u64> {
        crate::run_stats::clock_nanos(self.0 as libc::clockid_t)
    }

    #[cfg(not(target_os = "linux"))]
    fn nanos(&self) -> Option<u64> {
        None
    }
}

#[cfg(target_os = "linux")]
pub(super) fn current_tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn current_tid() -> u64 {
    0
}

/// Moves one thread to `SCHED_IDLE` (it runs only on a core nothing else
/// wants) or back to the normal policy. Linux keeps the policy per thread.
#[cfg(target_os = "linux")]
pub(super) fn set_background(tid: u64, background: bool) -> bool {
    let policy = if background {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler only reads its arguments; a stale tid fails.
    tid != 0 && unsafe { libc::sched_setscheduler(tid as libc::pid_t, policy, &param) } == 0
}

#[cfg(not(target_os = "linux"))]
pub(super) fn set_background(_tid: u64, _background: bool) -> bool {
    false
}
