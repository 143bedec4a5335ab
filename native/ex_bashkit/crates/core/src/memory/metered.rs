//! A script's future as its thread polls it: while it is polled, every
//! allocation of the thread (and of its blocking pool) is charged to the
//! script's account, and the thread's CPU time to its stats.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{Account, Meter, Stop, METER, OWN_HELPERS};
use crate::run_stats::thread_cpu_nanos;
use crate::sync::lock;

/// A script's future, with its allocations charged to `account`, and the
/// allocations of its thread's blocking pool while it is the last polled.
pub struct Metered<'a, T> {
    account: &'a Arc<Account>,
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<'a, T> Metered<'a, T> {
    pub fn new(account: &'a Arc<Account>, inner: impl Future<Output = T> + Send + 'a) -> Self {
        Self {
            account,
            inner: Box::pin(inner),
        }
    }
}

/// Puts the thread's meter back as it was when a poll ends, even by panic.
/// Also adds the poll's peak and CPU time to the account.
struct Restore<'m> {
    meter: &'m Meter,
    account: &'m Account,
    /// The thread's CPU time when the poll began.
    cpu_start: u64,
    previous: (*const Account, isize, isize, isize, isize),
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let meter = self.meter;
        let account = self.account;
        account.cpu_nanos.fetch_add(
            thread_cpu_nanos().saturating_sub(self.cpu_start),
            Ordering::Relaxed,
        );
        account
            .peak
            .fetch_max(meter.base.get() + meter.peak.get(), Ordering::Relaxed);
        account
            .used
            .fetch_add(meter.charged.get(), Ordering::Relaxed);
        let (previous, base, charged, check_at, peak) = self.previous;
        meter.account.set(previous);
        meter.base.set(base);
        meter.charged.set(charged);
        meter.check_at.set(check_at);
        meter.peak.set(peak);
    }
}

impl<T> Future for Metered<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let _ = OWN_HELPERS.try_with(|own| {
            if let Some(helped) = own.borrow().as_ref() {
                let previous =
                    std::mem::replace(&mut *lock(&helped.0), Arc::downgrade(self.account));
                drop(previous);
            }
        });
        let account: &Account = self.account;
        let used = account.used.load(Ordering::Relaxed);
        let limit = match account.stopped() {
            Stop::Running => account.cap,
            _ => account.hard_cap(),
        };
        METER.with(|meter| {
            let _restore = Restore {
                meter,
                account,
                cpu_start: thread_cpu_nanos(),
                previous: (
                    meter.account.replace(account),
                    meter.base.replace(used),
                    meter.charged.replace(0),
                    meter.check_at.replace(limit.saturating_sub(used)),
                    meter.peak.replace(0),
                ),
            };
            self.inner.as_mut().poll(cx)
        })
    }
}
