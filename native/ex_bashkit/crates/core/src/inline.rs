//! A script's first poll on the thread that asked for it (a BEAM dirty
//! scheduler), on a stack of its own.
//!
//! Handing every script to an interpreter thread cost each call a thread's
//! wake-up, and a loaded machine makes a wake slow: tens of microseconds
//! where `exec("true")` itself takes seven. Most scripts end in their first
//! poll (no `sleep`, no network, no callback), so a caller may run that
//! poll itself. It runs on a lazily committed stack of 1 GiB (as big as an
//! interpreter thread's) kept per thread (bashkit recurses on the
//! native stack; a scheduler's own holds a few hundred KB), watched by the
//! allocator as our own threads' stacks are (`memory.rs`). A script that
//! has to wait comes back pending between polls, when nothing of it is on
//! that stack, and goes on on its session's interpreter thread.
//!
//! What our threads do that a scheduler must not, and what is done instead:
//! - A script past its hard memory cap inside work that cannot be
//!   interrupted is frozen: our thread sleeps for good. Here the scheduler
//!   leaves the stack instead, with the frozen script on it; both are kept
//!   for good, as a frozen thread keeps its own, and the watchdog answers
//!   the caller as it does for any frozen script.
//! - A script's deadline is a timer, which fires only when the script
//!   awaits. The watchdog raises the interpreter's cancellation flag of a
//!   script polled here past its deadline, which bashkit checks between
//!   commands ([`watch_deadline`]).
//! - Work that neither awaits nor reaches a next command (one huge `[[ ]]`)
//!   holds its caller until it ends, as it would in any dirty NIF. So at
//!   most [`slots`] scripts are polled here at once, one dirty scheduler
//!   always stays free of them, and the NIF keeps a session whose poll ran
//!   past [`BUDGET`] on the interpreter threads from then on.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use tokio::runtime::Handle;

use crate::memory;
use crate::sync::lock;

/// A first poll longer than this took its caller's scheduler too long: the
/// session's later scripts go to the interpreter threads. As long as an
/// interpreter thread's poll may take before it counts as hogged.
pub const BUDGET: Duration = Duration::from_millis(10);

/// The stack a first poll runs on: as big as an interpreter thread's.
const STACK_BYTES: usize = 1 << 30;

/// The most first polls at once, whatever the machine.
const MAX_SLOTS: usize = 64;

/// The BEAM's dirty CPU schedulers, as the NIF was loaded with; 0 unknown.
static DIRTY_SCHEDULERS: AtomicUsize = AtomicUsize::new(0);

/// Tells how many dirty CPU schedulers the BEAM runs: first polls leave
/// one of them free. Called when the NIF loads, before any poll.
pub fn set_dirty_schedulers(count: usize) {
    DIRTY_SCHEDULERS.store(count, Ordering::Relaxed);
}

/// How many first polls may run at once: one fewer than the cores, at
/// least one, and one fewer than the BEAM's dirty CPU schedulers when it
/// said how many it runs (none with a single one: a poll there would
/// hold every other dirty CPU call of the VM).
pub fn slots() -> usize {
    static SLOTS: OnceLock<usize> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let slots = cores.saturating_sub(1).max(1);
        let slots = match DIRTY_SCHEDULERS.load(Ordering::Relaxed) {
            0 => slots,
            dirty => slots.min(dirty - 1),
        };
        slots.min(MAX_SLOTS)
    })
}

/// A script polled here, as the watchdog sees it.
struct Deadline {
    at: Instant,
    cancel: Arc<AtomicBool>,
    passed: Arc<AtomicBool>,
    id: u64,
}

struct SlotState {
    busy: AtomicBool,
    deadline: Mutex<Option<Deadline>>,
}

static SLOTS: [SlotState; MAX_SLOTS] = [const {
    SlotState {
        busy: AtomicBool::new(false),
        deadline: Mutex::new(None),
    }
}; MAX_SLOTS];

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's stack for first polls, between them.
    static STACK: RefCell<Option<DefaultStack>> = const { RefCell::new(None) };
    /// The poll running on that stack now, for a freeze to leave it.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
    /// The slot of the poll running on this thread now.
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
    /// The poll running here made a call its caller must serve.
    static HELD: Cell<bool> = const { Cell::new(false) };
    /// The waker of polls here: it only notes that it was woken.
    static WOKEN: Arc<Woken> = Arc::new(Woken(AtomicBool::new(false)));
}

/// A waker that notes a wake-up. A wake-up during a poll means the script
/// can go on now (one stage of a pipeline wrote what the next reads);
/// after one, a poll that comes back pending is polled again elsewhere,
/// which looks at everything it waits for.
struct Woken(AtomicBool);

impl std::task::Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// Polls `future` here again for as long as each poll is woken before it
/// ends (as an executor would run a task woken while it ran), until it is
/// ready, made a call its caller must serve, waits on something else, or
/// has run [`BUDGET`].
fn poll_while_woken<F: Future + ?Sized>(future: &mut Pin<Box<F>>) -> Poll<F::Output> {
    let woken = WOKEN.with(Arc::clone);
    let waker = Waker::from(woken.clone());
    let mut cx = Context::from_waker(&waker);
    HELD.with(|held| held.set(false));
    let began = Instant::now();
    loop {
        woken.0.store(false, Ordering::Release);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Poll::Ready(output);
        }
        let again =
            woken.0.load(Ordering::Acquire) && !HELD.with(Cell::get) && began.elapsed() < BUDGET;
        if !again {
            return Poll::Pending;
        }
    }
}

/// Says that the poll running on this thread made a call (to Elixir) that
/// its caller serves once the poll ends: it must not be polled again here
/// before then.
pub fn hold() {
    HELD.with(|held| held.set(true));
}

/// The right to poll a script here; freed when dropped.
pub struct Slot(usize);

/// A free slot, if there is one.
pub fn admit() -> Option<Slot> {
    SLOTS[..slots()]
        .iter()
        .enumerate()
        .find_map(|(index, slot)| {
            slot.busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
                // Lazily: a `Slot` made for a slot not taken would free it
                // when dropped.
                .then(|| Slot(index))
        })
}

impl Drop for Slot {
    fn drop(&mut self) {
        *lock(&SLOTS[self.0].deadline) = None;
        SLOTS[self.0].busy.store(false, Ordering::Release);
    }
}

/// What came of a first poll.
pub enum FirstPoll<F: Future> {
    /// The script ended.
    Ready(F::Output),
    /// It waits: poll it on again elsewhere (nothing of it is on the
    /// stack), or here again with [`Slot::poll_again`] and its [`Resume`].
    Pending(Pin<Box<F>>, Resume),
    /// It was frozen over its memory cap: it stays where it stood, for good.
    Frozen,
    /// It panicked (the future is dropped).
    Panicked,
}

/// What a script waiting between two polls here keeps of the first: its
/// deadline, watched again while it is polled here again.
#[derive(Default)]
pub struct Resume(Option<Deadline>);

/// What the coroutine hands back: the poll's outcome, the future when it
/// waits.
enum Polled<F: Future> {
    Ready(F::Output),
    Pending(Pin<Box<F>>),
    Panicked,
}

impl Slot {
    /// Polls `future` once on this thread, on its stack for first polls,
    /// inside the runtime context `home` (the timers and blocking pool of
    /// the interpreter thread it goes on on), again while it wakes itself
    /// ([`poll_while_woken`]). A stack that
    /// cannot be made (an address-space limit) answers `Pending` with the
    /// future unpolled.
    pub fn first_poll<F>(&self, home: &Handle, future: Pin<Box<F>>) -> FirstPoll<F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.poll_again(home, future, Resume::default())
    }

    /// Polls a script that came back pending from a poll here (its reply
    /// from Elixir has come) once more, as [`Slot::first_poll`] does, with
    /// its deadline watched again.
    pub fn poll_again<F>(&self, home: &Handle, future: Pin<Box<F>>, resume: Resume) -> FirstPoll<F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let stack = match STACK.with(|kept| kept.borrow_mut().take()) {
            Some(stack) => stack,
            None => match DefaultStack::new(STACK_BYTES) {
                Ok(stack) => stack,
                Err(_) => return FirstPoll::Pending(future, resume),
            },
        };
        *lock(&SLOTS[self.0].deadline) = resume.0;
        let (low, top) = (stack.limit().get(), stack.base().get());
        let _context = home.enter();
        let mut coroutine = Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
            YIELDER.with(|current| current.set(yielder));
            let mut future = future;
            let polled =
                std::panic::catch_unwind(AssertUnwindSafe(|| poll_while_woken(&mut future)));
            let polled = match polled {
                Ok(Poll::Ready(output)) => Polled::Ready(output),
                Ok(Poll::Pending) => Polled::Pending(future),
                Err(_) => {
                    // Dropped here, on the big stack: a script's state can
                    // be deep.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(future)));
                    Polled::Panicked
                }
            };
            // The stack is shallow again: its deep pages go back.
            memory::release_stack();
            polled
        });
        let saved = memory::watch_stack_of(low, top);
        memory::set_escape(Some(escape));
        CURRENT.with(|current| current.set(Some(self.0)));
        let result = coroutine.resume(());
        CURRENT.with(|current| current.set(None));
        memory::set_escape(None);
        YIELDER.with(|current| current.set(std::ptr::null()));
        memory::put_back(saved);
        let deadline = lock(&SLOTS[self.0].deadline).take();
        match result {
            CoroutineResult::Return(polled) => {
                let stack = coroutine.into_stack();
                STACK.with(|kept| *kept.borrow_mut() = Some(stack));
                match polled {
                    Polled::Ready(output) => FirstPoll::Ready(output),
                    Polled::Pending(future) => FirstPoll::Pending(future, Resume(deadline)),
                    Polled::Panicked => FirstPoll::Panicked,
                }
            }
            CoroutineResult::Yield(()) => {
                // Frozen: the script, its future and the stack under it are
                // kept as they stand, never resumed and never dropped (a
                // drop would unwind through the frozen frames).
                std::mem::forget(coroutine);
                FirstPoll::Frozen
            }
        }
    }
}

/// Whether a first poll is running on the calling thread now: a panic
/// there is ours to report, and the thread may not send to a process.
pub fn polling_here() -> bool {
    YIELDER.with(|current| !current.get().is_null())
}

/// Leaves the stack of the poll running on this thread, for good: what a
/// freeze calls here instead of sleeping (`memory::set_escape`).
fn escape() {
    let yielder = YIELDER.with(Cell::get);
    if !yielder.is_null() {
        // SAFETY: set by the coroutine this thread is running, which lives
        // until `resume` returns to `first_poll`; it is never resumed after
        // this suspend, so the frames below are never run again.
        unsafe { (*yielder).suspend(()) };
    }
}

/// Watches the deadline of a script whose first poll runs on this thread:
/// past `timeout` from now the watchdog raises `cancel`, the interpreter's
/// cancellation flag, and [`DeadlineWatch::passed`] says so. `None` on any
/// other thread (there the script's timer stops it).
pub fn watch_deadline(timeout: Duration, cancel: &Arc<AtomicBool>) -> Option<DeadlineWatch> {
    let slot = CURRENT.with(Cell::get)?;
    let passed = Arc::new(AtomicBool::new(false));
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    *lock(&SLOTS[slot].deadline) = Some(Deadline {
        at: Instant::now() + timeout,
        cancel: cancel.clone(),
        passed: passed.clone(),
        id,
    });
    Some(DeadlineWatch { id, passed })
}

/// A deadline the watchdog watches until this is dropped.
pub struct DeadlineWatch {
    id: u64,
    passed: Arc<AtomicBool>,
}

impl DeadlineWatch {
    /// Whether the watchdog stopped the script at its deadline.
    pub fn passed(&self) -> bool {
        self.passed.load(Ordering::Acquire)
    }
}

impl Drop for DeadlineWatch {
    /// Under the slot's lock, so the flag is never raised after this. The
    /// script may be polled in another slot than its first (or in none).
    fn drop(&mut self) {
        for slot in &SLOTS[..slots()] {
            let mut deadline = lock(&slot.deadline);
            if deadline
                .as_ref()
                .is_some_and(|watched| watched.id == self.id)
            {
                *deadline = None;
                return;
            }
        }
    }
}

/// Stops scripts polled here that are past their deadline. Run by the
/// runtime's watchdog.
pub fn watch() {
    let now = Instant::now();
    for slot in &SLOTS[..slots()] {
        if !slot.busy.load(Ordering::Acquire) {
            continue;
        }
        if let Some(deadline) = lock(&slot.deadline).as_ref() {
            if now >= deadline.at && !deadline.passed.swap(true, Ordering::AcqRel) {
                deadline.cancel.store(true, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime standing in for an interpreter thread's.
    fn home() -> &'static tokio::runtime::Runtime {
        static HOME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
        HOME.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        })
    }

    fn poll_here<F>(future: F) -> FirstPoll<F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // Slots are shared with every test of this binary: wait for one.
        let slot = loop {
            match admit() {
                Some(slot) => break slot,
                None => std::thread::yield_now(),
            }
        };
        slot.first_poll(home().handle(), Box::pin(future))
    }

    #[test]
    fn a_refused_admission_leaves_the_slots_taken() {
        let mut held = Vec::new();
        while held.len() < slots() {
            match admit() {
                Some(slot) => held.push(slot),
                None => std::thread::yield_now(),
            }
        }
        assert!(admit().is_none());
        // A refusal frees nothing (a `Slot` made and dropped for it did).
        assert!(admit().is_none());
        assert!(held
            .iter()
            .all(|slot| SLOTS[slot.0].busy.load(Ordering::Acquire)));
    }

    #[test]
    fn a_future_that_ends_in_its_first_poll_answers_here() {
        assert!(matches!(poll_here(async { 7 }), FirstPoll::Ready(7)));
    }

    #[test]
    fn a_waiting_future_comes_back_to_be_polled_on_elsewhere() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let FirstPoll::Pending(future, _) = poll_here(async move { rx.await.unwrap() + 1 }) else {
            panic!("a future waiting for a channel is pending");
        };
        tx.send(41).unwrap();
        assert_eq!(home().block_on(future), 42);
    }

    /// A future that wakes itself and comes back pending `times` times
    /// (calling `before_each` first), then ends with how often it ran.
    fn waking_itself(times: u32, before_each: fn()) -> impl Future<Output = u32> {
        let mut polls = 0;
        std::future::poll_fn(move |cx| {
            polls += 1;
            if polls > times {
                return Poll::Ready(polls);
            }
            before_each();
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    }

    #[test]
    fn a_future_woken_while_polled_is_polled_on_here() {
        // What a pipeline does: one stage writes, waking the next.
        assert!(matches!(
            poll_here(waking_itself(3, || ())),
            FirstPoll::Ready(4)
        ));
    }

    #[test]
    fn a_poll_that_made_a_call_for_its_caller_ends_there() {
        let FirstPoll::Pending(future, _) = poll_here(waking_itself(1, hold)) else {
            panic!("a poll holding a call for its caller ends pending");
        };
        // Its next poll (after the caller served the call) goes on.
        assert!(matches!(poll_here(future), FirstPoll::Ready(2)));
    }

    #[test]
    fn a_frozen_poll_leaves_its_stack_and_the_thread_goes_on() {
        let frozen = poll_here(async {
            escape();
            unreachable!("a frozen poll never resumes")
        });
        assert!(matches!(frozen, FirstPoll::Frozen));
        assert!(matches!(
            poll_here(async { "after" }),
            FirstPoll::Ready("after")
        ));
    }

    #[test]
    fn a_poll_past_its_deadline_is_cancelled_by_the_watchdog() {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let polled = poll_here(async move {
            let watch = watch_deadline(Duration::from_millis(1), &flag).expect("polled here");
            spin_until_cancelled(&flag);
            watch.passed()
        });
        assert!(matches!(polled, FirstPoll::Ready(true)));
        assert!(cancel.load(Ordering::Acquire));
    }

    #[test]
    fn a_script_polled_here_again_keeps_its_deadline() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let FirstPoll::Pending(future, resume) = poll_here(async move {
            let watch = watch_deadline(Duration::from_millis(1), &flag).expect("polled here");
            rx.await.unwrap();
            spin_until_cancelled(&flag);
            watch.passed()
        }) else {
            panic!("a future waiting for a channel is pending");
        };
        // Between the polls nothing watches it: the flag stays down.
        std::thread::sleep(Duration::from_millis(5));
        watch_from_here();
        assert!(!cancel.load(Ordering::Acquire));
        tx.send(()).unwrap();
        let slot = loop {
            match admit() {
                Some(slot) => break slot,
                None => std::thread::yield_now(),
            }
        };
        let polled = slot.poll_again(home().handle(), future, resume);
        assert!(matches!(polled, FirstPoll::Ready(true)));
    }

    /// Work that never awaits, until the watchdog raises `flag`.
    fn spin_until_cancelled(flag: &AtomicBool) {
        let started = Instant::now();
        while !flag.load(Ordering::Acquire) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never cancelled"
            );
            watch_from_here();
        }
    }

    /// What the watchdog does, run from another thread.
    fn watch_from_here() {
        std::thread::scope(|scope| {
            scope.spawn(watch);
        });
    }

    #[test]
    fn no_deadline_is_watched_off_a_first_poll() {
        let cancel = Arc::new(AtomicBool::new(false));
        assert!(watch_deadline(Duration::from_millis(1), &cancel).is_none());
    }
}
