//! Memory: every byte this library allocates is counted, and what a script
//! allocates while it runs is charged to it.
//!
//! The global allocator wraps mimalloc. Each thread keeps a running total
//! of what it allocated and freed, added to the VM-wide [`live_bytes`] in
//! steps of [`FLUSH_BYTES`], so the count costs no shared write per
//! allocation. While a script's future is polled ([`Metered`]) its
//! [`Account`] is the thread's current one, and every allocation and free
//! on that thread is charged to it: the script's own work, its background
//! jobs (bashkit polls them inside the script's future) and its builtins.
//!
//! Two limits apply. A script whose net allocations pass its cap, or that
//! allocates while all interpreters together hold more than the VM-wide
//! budget, is stopped: its cancellation token is set, bashkit ends it at
//! the next command, and its caller gets `{:error, message}` naming the
//! limit. Some bashkit work never reaches a next command (a jq filter, a
//! parse): it keeps allocating. An allocator cannot fail an allocation
//! (Rust aborts the process) nor unwind, so a script that goes on to twice
//! its cap (at least [`MIN_FREEZE_MARGIN`] past it) is frozen instead: its
//! thread sleeps for good inside that allocation, holding what it had, and
//! its caller is answered at once by the watchdog. The memory stays
//! bounded; the cost is one thread, the memory it held, and its session,
//! which can run no more scripts. [`stats`] reports them.
//!
//! Not charged to a script: bashkit's parse of a script over 16 KB, which
//! runs on a blocking-pool thread (bounded by `:max_input_bytes` and the
//! parser limits instead), and work done for a session outside its scripts
//! (the file API, snapshots). Both count towards the VM-wide total.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::sync::lock;

/// The global allocator: `A`, with every allocation counted.
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded unchanged to `A`; the bookkeeping around
// it never allocates, never unwinds, and only touches atomics and
// const-initialized thread-locals without destructors.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size() as isize);
        self.0.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size() as isize);
        self.0.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout);
        charge(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        charge(new_size as isize - layout.size() as isize);
        self.0.realloc(ptr, layout, new_size)
    }
}

/// A thread adds its allocations to [`LIVE`] in steps of this many bytes.
const FLUSH_BYTES: isize = 256 * 1024;

/// A script that did not stop at its cap is frozen when it holds twice its
/// cap, or its cap plus this, whichever is more. Room for the command that
/// was running to notice the cancellation, and for what bashkit does after
/// it: gathering background jobs' output doubles a large buffer at once.
pub const MIN_FREEZE_MARGIN: isize = 32 * 1024 * 1024;

/// Bytes allocated by this library and not yet freed, all threads, up to
/// [`FLUSH_BYTES`] per thread not yet added.
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The VM-wide budget: unlimited until [`set_budget`] at load.
static BUDGET: AtomicIsize = AtomicIsize::new(isize::MAX);

/// What one thread has counted, and the account it charges.
struct Meter {
    account: Cell<*const Account>,
    /// The account's `used` when its current poll began.
    base: Cell<isize>,
    /// Bytes charged to `account` in its current poll.
    charged: Cell<isize>,
    /// `charged` past which the account is over a limit.
    check_at: Cell<isize>,
    /// Bytes not yet added to [`LIVE`].
    unflushed: Cell<isize>,
}

thread_local! {
    static METER: Meter = const {
        Meter {
            account: Cell::new(std::ptr::null()),
            base: Cell::new(0),
            charged: Cell::new(0),
            check_at: Cell::new(isize::MAX),
            unflushed: Cell::new(0),
        }
    };
}

#[inline]
fn charge(delta: isize) {
    let _ = METER.try_with(|meter| {
        let unflushed = meter.unflushed.get() + delta;
        if unflushed.abs() >= FLUSH_BYTES {
            meter.unflushed.set(0);
            flush(meter, unflushed);
        } else {
            meter.unflushed.set(unflushed);
        }
        if !meter.account.get().is_null() {
            let charged = meter.charged.get() + delta;
            meter.charged.set(charged);
            if charged > meter.check_at.get() {
                over_cap(meter, delta);
            }
        }
    });
}

fn flush(meter: &Meter, unflushed: isize) {
    let live = LIVE.fetch_add(unflushed, Ordering::Relaxed) + unflushed;
    if unflushed > 0 && !meter.account.get().is_null() && live > budget() {
        over_budget(meter);
    }
}

/// Why a script was stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Stop {
    Running = 0,
    Cap = 1,
    Budget = 2,
}

/// Where a script stopped while holding `used` bytes is frozen if it goes
/// on allocating.
fn freeze_point(used: isize) -> isize {
    used.saturating_add(used.max(MIN_FREEZE_MARGIN))
}

/// Answers a frozen script's caller with the error message.
type Answer = Box<dyn FnOnce(String, &'static str) + Send>;

/// One script's memory: what it allocated net of what it freed.
pub struct Account {
    used: AtomicIsize,
    cap: isize,
    /// Past this the script is frozen (see [`freeze_point`]).
    hard: AtomicIsize,
    /// bashkit's cancellation token of the interpreter running the script.
    cancel: Arc<AtomicBool>,
    stop: AtomicU8,
    frozen: AtomicBool,
    /// Set when the script is frozen: its session can run nothing more.
    session_frozen: Arc<AtomicBool>,
    /// Answers the script's caller when it is frozen (called by the watchdog).
    on_freeze: Mutex<Option<Answer>>,
}

impl Account {
    pub fn new(cap: usize, cancel: Arc<AtomicBool>, session_frozen: Arc<AtomicBool>) -> Self {
        Self {
            used: AtomicIsize::new(0),
            cap: isize::try_from(cap).unwrap_or(isize::MAX),
            hard: AtomicIsize::new(freeze_point(isize::try_from(cap).unwrap_or(isize::MAX))),
            cancel,
            stop: AtomicU8::new(Stop::Running as u8),
            frozen: AtomicBool::new(false),
            session_frozen,
            on_freeze: Mutex::new(None),
        }
    }

    /// What answers the caller if the script is frozen.
    pub fn on_freeze(&self, answer: impl FnOnce(String, &'static str) + Send + 'static) {
        *lock(&self.on_freeze) = Some(Box::new(answer));
    }

    fn hard_cap(&self) -> isize {
        self.hard.load(Ordering::Relaxed)
    }

    fn stopped(&self) -> Stop {
        match self.stop.load(Ordering::Acquire) {
            1 => Stop::Cap,
            2 => Stop::Budget,
            _ => Stop::Running,
        }
    }

    fn stop(&self, why: Stop) {
        if self
            .stop
            .compare_exchange(0, why as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.cancel.store(true, Ordering::Release);
        }
    }

    /// The error for a script stopped over a limit, with the key that sets
    /// that limit; `None` for a script that was not stopped.
    pub fn verdict(&self) -> Option<(String, &'static str)> {
        Some(match self.stopped() {
            Stop::Running => return None,
            Stop::Cap => (
                format!(
                    "memory limit exceeded: the script allocated more than {} bytes \
                     (limit :max_script_memory_bytes)",
                    self.cap
                ),
                "max_script_memory_bytes",
            ),
            Stop::Budget => (
                format!(
                    "memory limit exceeded: the interpreters of this VM together hold more \
                     than {} bytes (config :ex_bashkit, :memory_budget_bytes)",
                    budget()
                ),
                "memory_budget_bytes",
            ),
        })
    }
}

/// `delta` is the allocation being made, which a freeze refuses.
#[cold]
fn over_cap(meter: &Meter, delta: isize) {
    // SAFETY: the account outlives every poll it is current for (`Metered`).
    let account = unsafe { &*meter.account.get() };
    let used = meter.base.get() + meter.charged.get();
    if used > account.hard_cap() {
        freeze(account, used - delta);
    }
    account.stop(Stop::Cap);
    meter
        .check_at
        .set(account.hard_cap().saturating_sub(meter.base.get()));
}

/// Over the budget, a script is frozen if it goes on to twice what it held
/// when it was stopped (at least [`MIN_FREEZE_MARGIN`] more), as over its
/// own cap.
#[cold]
fn over_budget(meter: &Meter) {
    // SAFETY: as in `over_cap`.
    let account = unsafe { &*meter.account.get() };
    if account.stopped() != Stop::Running {
        return;
    }
    account.stop(Stop::Budget);
    let used = meter.base.get() + meter.charged.get();
    let hard = account.hard_cap().min(freeze_point(used));
    account.hard.store(hard, Ordering::Relaxed);
    meter.check_at.set(hard.saturating_sub(meter.base.get()));
}

/// The most scripts whose callers the watchdog answers after a freeze;
/// beyond it callers are answered at their deadline.
const FREEZE_SLOTS: usize = 64;

static FROZEN: [AtomicPtr<Account>; FREEZE_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; FREEZE_SLOTS];
static FROZEN_SCRIPTS: AtomicUsize = AtomicUsize::new(0);
static FROZEN_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Frozen scripts whose callers are not answered yet.
static UNANSWERED: AtomicUsize = AtomicUsize::new(0);

/// Stops the calling thread for good, inside the allocation that went too
/// far. Never allocates.
fn freeze(account: &Account, used: isize) -> ! {
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
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
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

/// A script's future, with its allocations charged to `account`.
pub struct Metered<'a, T> {
    account: &'a Account,
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<'a, T> Metered<'a, T> {
    pub fn new(account: &'a Account, inner: impl Future<Output = T> + Send + 'a) -> Self {
        Self {
            account,
            inner: Box::pin(inner),
        }
    }
}

/// Puts the thread's meter back as it was when a poll ends, even by panic.
struct Restore<'m> {
    meter: &'m Meter,
    account: &'m Account,
    previous: (*const Account, isize, isize, isize),
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let meter = self.meter;
        self.account
            .used
            .fetch_add(meter.charged.get(), Ordering::Relaxed);
        let (account, base, charged, check_at) = self.previous;
        meter.account.set(account);
        meter.base.set(base);
        meter.charged.set(charged);
        meter.check_at.set(check_at);
    }
}

impl<T> Future for Metered<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let account = self.account;
        let used = account.used.load(Ordering::Relaxed);
        let limit = match account.stopped() {
            Stop::Running => account.cap,
            _ => account.hard_cap(),
        };
        METER.with(|meter| {
            let _restore = Restore {
                meter,
                account,
                previous: (
                    meter.account.replace(account),
                    meter.base.replace(used),
                    meter.charged.replace(0),
                    meter.check_at.replace(limit.saturating_sub(used)),
                ),
            };
            self.inner.as_mut().poll(cx)
        })
    }
}

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

/// This library's memory as the NIFs report it.
pub struct Stats {
    pub live_bytes: i64,
    pub budget_bytes: i64,
    pub frozen_scripts: u64,
    pub frozen_bytes: i64,
}

pub fn stats() -> Stats {
    Stats {
        live_bytes: LIVE.load(Ordering::Relaxed) as i64,
        budget_bytes: budget() as i64,
        frozen_scripts: FROZEN_SCRIPTS.load(Ordering::Relaxed) as u64,
        frozen_bytes: FROZEN_BYTES.load(Ordering::Relaxed) as i64,
    }
}
