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
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::stack;
use crate::sync::lock;

// Explicit paths: tests/*.rs include this file by #[path], and a module
// included that way looks for its children beside it, not under memory/.
#[path = "memory/budget.rs"]
mod budget;
#[path = "memory/freeze.rs"]
mod freeze;
#[path = "memory/metered.rs"]
mod metered;

pub use budget::{budget, set_budget};
pub use freeze::{answer_frozen, wake_on_freeze};
use freeze::{freeze, FROZEN_BYTES, FROZEN_SCRIPTS};
pub use metered::Metered;

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

/// A thread never goes closer than this to the end of its stack: there an
/// allocation freezes it instead (an overflow would abort the VM).
const STACK_GUARD_BYTES: usize = 1 << 20;

/// The stack every script may use without it counting: its thread's own
/// frames, bashkit's and an ordinary script's (about 64 KB here).
const STACK_FREE_BYTES: usize = 1 << 20;

/// How deep the stack is at `sp`, past [`STACK_FREE_BYTES`]: 0 on a thread
/// that is not watched.
fn stack_depth(meter: &Meter, sp: usize) -> isize {
    let depth = meter.stack_top.get().saturating_sub(sp);
    isize::try_from(depth.saturating_sub(STACK_FREE_BYTES)).unwrap_or(isize::MAX)
}

/// A poll that took its thread's stack deeper than this gives the pages
/// back when it ends (`release_stack`).
const STACK_RELEASE_BYTES: usize = 4 << 20;

/// What one thread has counted, and the account it charges.
pub(super) struct Meter {
    pub(super) account: Cell<*const Account>,
    /// The account's `used` when its current poll began.
    pub(super) base: Cell<isize>,
    /// Bytes charged to `account` in its current poll.
    pub(super) charged: Cell<isize>,
    /// `charged` past which the account is over a limit.
    pub(super) check_at: Cell<isize>,
    /// The most `charged` was in the current poll.
    pub(super) peak: Cell<isize>,
    /// Bytes not yet added to [`LIVE`].
    unflushed: Cell<isize>,
    /// This thread's stack, on our own threads (`watch_stack`); 0 elsewhere.
    stack_low: Cell<usize>,
    stack_top: Cell<usize>,
    /// Below this stack pointer the thread is frozen ([`at_stack_guard`]);
    /// 0, never, on a thread that is not watched.
    stack_guard: Cell<usize>,
    /// The lowest stack pointer an allocation saw since the last release.
    stack_deepest: Cell<usize>,
    /// Bytes this thread freed since [`take_freed`] last asked.
    freed: Cell<isize>,
}

thread_local! {
    pub(super) static METER: Meter = const {
        Meter {
            account: Cell::new(std::ptr::null()),
            base: Cell::new(0),
            charged: Cell::new(0),
            check_at: Cell::new(isize::MAX),
            peak: Cell::new(0),
            unflushed: Cell::new(0),
            stack_low: Cell::new(0),
            stack_top: Cell::new(0),
            stack_guard: Cell::new(0),
            stack_deepest: Cell::new(usize::MAX),
            freed: Cell::new(0),
        }
    };

    /// On an interpreter thread: where its scripts' polls say who they are.
    pub(super) static OWN_HELPERS: RefCell<Option<Arc<Helped>>> = const { RefCell::new(None) };

    /// On one of its blocking-pool threads: whom to charge.
    static HELPING: RefCell<Option<Arc<Helped>>> = const { RefCell::new(None) };
    /// What a freeze calls instead of sleeping for good ([`set_escape`]).
    static ESCAPE: Cell<Option<fn()>> = const { Cell::new(None) };
}

/// The script an interpreter thread polled last, for the threads of its
/// blocking pool to charge. bashkit parses every `eval` and `source` text,
/// and every script over 16 KB, on that pool: `eval` nested 10,000 deep
/// held gigabytes of syntax trees there, charged to nobody. A parse runs
/// while its script waits, and the script that waits is nearly always the
/// one its thread polled last, so that one is charged.
#[derive(Default)]
pub struct Helped(Mutex<Weak<Account>>);

/// Makes the calling interpreter thread's polls name their script in
/// `helped`.
pub fn own_helpers(helped: Arc<Helped>) {
    let _ = OWN_HELPERS.try_with(|own| *own.borrow_mut() = Some(helped));
}

/// Whom a thread started from the calling one should charge: the calling
/// interpreter thread's running script, or the script the calling helper
/// charges (a shell started from a shell).
pub fn helpers() -> Option<Arc<Helped>> {
    let own = OWN_HELPERS
        .try_with(|own| own.borrow().clone())
        .ok()
        .flatten();
    own.or_else(|| {
        HELPING
            .try_with(|helping| helping.borrow().clone())
            .ok()
            .flatten()
    })
}

/// Charges the calling blocking-pool thread's allocations to the script
/// its interpreter thread names in `helped`.
pub fn help(helped: Arc<Helped>) {
    let _ = HELPING.try_with(|helping| *helping.borrow_mut() = Some(helped));
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
        // Code on a stack of its own (wasmtime's fibers) is not ours to
        // watch: there `sp` reads as the top of all (no depth, no guard).
        let sp = stack::pointer();
        let sp = if meter.stack_low.get() <= sp && sp < meter.stack_top.get() {
            sp
        } else {
            usize::MAX
        };
        // Checked on frees too: dropping a deeply nested value recurses.
        if sp < meter.stack_guard.get() {
            at_stack_guard(meter, delta.max(0), sp);
        }
        if delta < 0 {
            meter.freed.set(meter.freed.get() - delta);
            if !meter.account.get().is_null() {
                meter.charged.set(meter.charged.get() + delta);
            }
            return;
        }
        if sp < meter.stack_deepest.get() {
            meter.stack_deepest.set(sp);
        }
        if !meter.account.get().is_null() {
            let charged = meter.charged.get() + delta;
            meter.charged.set(charged);
            if charged > meter.peak.get() {
                meter.peak.set(charged);
            }
            // The script's stack counts with its heap, past the first
            // [`STACK_FREE_BYTES`] that every script uses.
            let depth = stack_depth(meter, sp);
            if charged + depth > meter.check_at.get() {
                over_cap(meter, delta, depth);
            }
        }
    });
}

/// Watches the calling thread's stack from now on: one of our interpreter
/// or blocking-pool threads (a scheduler watches the stack it switched to
/// instead, [`watch_stack_of`]).
pub fn watch_stack() {
    if let Some((low, top)) = stack::bounds() {
        let _ = METER.try_with(|meter| {
            meter.stack_low.set(low);
            meter.stack_top.set(top);
            meter.stack_guard.set(low + STACK_GUARD_BYTES);
        });
    }
}

/// Gives back the stack pages a poll took deeper than
/// [`STACK_RELEASE_BYTES`]; called between polls, the stack shallow again.
pub fn release_stack() {
    let _ = METER.try_with(|meter| {
        let deepest = meter.stack_deepest.replace(usize::MAX);
        let top = meter.stack_top.get();
        if top != 0 && deepest < top.saturating_sub(STACK_RELEASE_BYTES) {
            stack::release_below(deepest);
        }
    });
}

/// An allocation with the stack pointer within [`STACK_GUARD_BYTES`] of the
/// end of the thread's stack: the thread is frozen there rather than
/// overflow, whatever it runs.
#[cold]
fn at_stack_guard(meter: &Meter, delta: isize, sp: usize) {
    let account = meter.account.get();
    if account.is_null() {
        freeze_thread();
    }
    // SAFETY: as in `over_cap`.
    let account = unsafe { &*account };
    let depth = stack_depth(meter, sp);
    account.stop(Stop::Stack);
    freeze(
        account,
        meter.base.get() + meter.charged.get() + depth - delta,
    );
}

/// Stops a thread that runs no script (a parse on the blocking pool) for
/// good, short of the end of its stack. Its caller is answered by the
/// parser's own timeout. Never allocates.
fn freeze_thread() -> ! {
    FROZEN_SCRIPTS.fetch_add(1, Ordering::Relaxed);
    stand_still()
}

/// Where a frozen script stays: its thread sleeps for good, unless the
/// thread runs it on a stack of its own and can leave that stack instead
/// ([`set_escape`]). Never allocates.
pub(super) fn stand_still() -> ! {
    if let Some(escape) = ESCAPE.try_with(Cell::get).ok().flatten() {
        escape();
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Makes a freeze on the calling thread call `escape` instead of sleeping
/// for good: a BEAM scheduler running a script on a stack of its own
/// (`inline.rs`) leaves that stack, with the frozen script on it, and goes
/// on. `None` puts the sleep back.
pub fn set_escape(escape: Option<fn()>) {
    let _ = ESCAPE.try_with(|current| current.set(escape));
}

/// A thread's meter as it was before it watched a stack of its own.
pub struct SavedMeter {
    account: *const Account,
    base: isize,
    charged: isize,
    check_at: isize,
    stack: (usize, usize, usize, usize),
}

/// Watches `[low, top)`, a stack the calling thread switched to, from now
/// on: its depth counts and its end freezes, as on our own threads.
/// Returns the meter as it was, for [`put_back`].
pub fn watch_stack_of(low: usize, top: usize) -> SavedMeter {
    METER.with(|meter| SavedMeter {
        account: meter.account.get(),
        base: meter.base.get(),
        charged: meter.charged.get(),
        check_at: meter.check_at.get(),
        stack: (
            meter.stack_low.replace(low),
            meter.stack_top.replace(top),
            meter.stack_guard.replace(low + STACK_GUARD_BYTES),
            meter.stack_deepest.replace(usize::MAX),
        ),
    })
}

/// Puts back the meter [`watch_stack_of`] saved: after the stack was left,
/// whether the script on it ended or froze there (then nothing restored
/// what its poll changed).
pub fn put_back(saved: SavedMeter) {
    let _ = METER.try_with(|meter| {
        meter.account.set(saved.account);
        meter.base.set(saved.base);
        meter.charged.set(saved.charged);
        meter.check_at.set(saved.check_at);
        let (low, top, guard, deepest) = saved.stack;
        meter.stack_low.set(low);
        meter.stack_top.set(top);
        meter.stack_guard.set(guard);
        meter.stack_deepest.set(deepest);
    });
}

fn flush(meter: &Meter, unflushed: isize) {
    let live = LIVE.fetch_add(unflushed, Ordering::Relaxed) + unflushed;
    if meter.account.get().is_null() {
        charge_helped(unflushed, live);
    } else if unflushed > 0 && live > budget() {
        over_budget(meter);
    }
}

/// On a blocking-pool thread, charges `delta` to the script its
/// interpreter thread polled last (see [`Helped`]): stopped past its cap
/// or the budget, frozen here past its hard cap.
fn charge_helped(delta: isize, live: isize) {
    let account = HELPING
        .try_with(|helping| {
            let helping = helping.try_borrow().ok()?;
            let account = lock(&helping.as_ref()?.0).upgrade();
            account
        })
        .ok()
        .flatten();
    // Dropped outside the lock: the last reference frees the account,
    // which charges this thread again.
    let Some(account) = account else { return };
    let used = account.used.fetch_add(delta, Ordering::Relaxed) + delta;
    if delta > 0 {
        account.peak.fetch_max(used, Ordering::Relaxed);
        if used > account.hard_cap() {
            // The frozen thread keeps `account` alive for good.
            freeze(&account, used - delta);
        }
        if used > account.cap {
            account.stop(Stop::Cap);
        } else if live > budget() {
            account.stop(Stop::Budget);
        }
    }
}

/// Bytes the calling thread freed since the last call.
pub fn take_freed() -> isize {
    METER.try_with(|meter| meter.freed.replace(0)).unwrap_or(0)
}

/// Why a script was stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Stop {
    Running = 0,
    Cap = 1,
    Budget = 2,
    /// Over its cap with its stack counted.
    Stack = 3,
}

/// Where a script stopped while holding `used` bytes is frozen if it goes
/// on allocating.
fn freeze_point(used: isize) -> isize {
    used.saturating_add(used.max(MIN_FREEZE_MARGIN))
}

/// Answers a frozen script's caller with the error message.
type Answer = Box<dyn FnOnce(String, &'static str) + Send>;

/// One script's account: the memory it allocated net of what it freed,
/// the most it held, and the CPU time its polls took.
pub struct Account {
    used: AtomicIsize,
    /// The most `used` was (at least as exact as a flush step on a
    /// blocking-pool thread, exact on the script's own thread).
    peak: AtomicIsize,
    /// CPU time of the threads that polled the script, in nanoseconds.
    cpu_nanos: AtomicU64,
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
            peak: AtomicIsize::new(0),
            cpu_nanos: AtomicU64::new(0),
            cap: isize::try_from(cap).unwrap_or(isize::MAX),
            hard: AtomicIsize::new(freeze_point(isize::try_from(cap).unwrap_or(isize::MAX))),
            cancel,
            stop: AtomicU8::new(Stop::Running as u8),
            frozen: AtomicBool::new(false),
            session_frozen,
            on_freeze: Mutex::new(None),
        }
    }

    /// The most the script held at once, in bytes.
    pub fn peak_bytes(&self) -> u64 {
        u64::try_from(self.peak.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// CPU time the threads polling the script spent in its polls.
    pub fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.cpu_nanos.load(Ordering::Relaxed))
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
            3 => Stop::Stack,
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
            Stop::Stack => (
                format!(
                    "memory limit exceeded: the script's memory, its stack included, passed {} \
                     bytes: it recursed too deep (limit :max_script_memory_bytes)",
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
fn over_cap(meter: &Meter, delta: isize, depth: isize) {
    // SAFETY: the account outlives every poll it is current for (`Metered`).
    let account = unsafe { &*meter.account.get() };
    let heap = meter.base.get() + meter.charged.get();
    let used = heap + depth;
    // Named for what took most of it: the stack of a recursion, or the heap.
    account.stop(if depth > heap { Stop::Stack } else { Stop::Cap });
    if used > account.hard_cap() {
        freeze(account, used - delta);
    }
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

/// mimalloc's `mi_option_allow_thp` (mimalloc.h, v3).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Stops mimalloc from asking for transparent huge pages on the memory it
/// maps from now on. A session touches a few kilobytes here and there; with
/// huge pages each first touch made the kernel zero 2 MiB (a burst of
/// 10,000 sessions' first scripts spent 38 % of its time in it) and an
/// idle session kept more of them resident. mimalloc is initialized first:
/// the option set before would make its initialization disable huge pages
/// for the whole host process (a `prctl`), not only for its own memory. To
/// be called before the first allocation, which maps the arena most
/// allocations come from (asking for huge pages then).
pub fn small_pages() {
    // SAFETY: mimalloc's initialization (once per process, allocating
    // nothing from its heaps), then an option it reads on each mapping.
    unsafe {
        libmimalloc_sys::mi_process_init();
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
    }
}
