//! Sessions built ahead of need. `ExBashkit.Session.new()` with the default
//! options takes one off a small shelf, a hand-over of a microsecond or
//! two, instead of building bashkit's interpreter (tens of microseconds).
//! A thread of our own refills the shelf when it runs low, or once
//! callers pause; sessions with other options build as before. Shelved
//! sessions are not counted as live (`ExBashkit.Native.live_sessions/0`)
//! until handed over.
//!
//! When a burst empties the shelf, a caller is not made to build: it gets
//! a session whose interpreter the refill thread builds next, before it
//! refills the shelf, and whose first call builds it if the thread has not
//! started on it yet (one build, what the caller would have paid here).
//! So a burst's callers go on at once, and the builds run on the core the
//! callers leave free. Only options that have built before are deferred.
//!
//! One-offs (`ExBashkit.exec/1`) take from the same shelf, and hand their
//! session back here, to be freed by the refill thread rather than by the
//! interpreter thread they ran on, where the caller's next one-off goes:
//! with the builds when it builds, else once the burst of one-offs pauses.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use ex_bashkit_core::options::SessionOptions;
use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::sync::lock;
use rustler::{Encoder, Env, ResourceArc, Term};

use crate::convert::Protocol;
use crate::session::{Interpreter, SessionResource};

/// The most sessions a shelf holds, whatever the configuration asks.
const MOST: usize = 64;

/// How often the refill thread looks again while scripts keep it from
/// building. Looking every millisecond slowed a 30 ms snapshot by a third:
/// its thread, demoted as a long poll (`runtime.rs`), lost the core to
/// each look.
const GLANCE: Duration = Duration::from_millis(20);

/// The longest the refill thread waits, after a call for a session, for
/// running scripts to end before it builds beside them.
const PATIENCE: Duration = Duration::from_millis(100);

/// How long without a call for a session ends a burst. A resting refill
/// thread waits this long before it frees one-offs' sessions, and before
/// it refills a shelf that hand-overs left short of full though above a
/// quarter (one-offs always leave it there: without this, every later
/// one-off built its own). Woken to free each one beside a burst of
/// one-offs, it made them 108-127 µs each from a full shelf on two cores;
/// they take 21-29 µs without it (`bench/README.md`, issue 62). Counted
/// from calls, not hand-overs: one-offs that find no spare and build
/// their own are a burst still, not to be built beside.
const QUIET: Duration = Duration::from_millis(2);

#[derive(Default)]
struct Shelf {
    /// Names the options the shelved sessions were built with; a caller
    /// whose options have another generation gets none of them.
    generation: u64,
    options: Option<Arc<SessionOptions>>,
    capacity: usize,
    /// Made resources already, so a hand-over copies no interpreter.
    sessions: VecDeque<ResourceArc<SessionResource>>,
    /// Sessions handed over before they were built, oldest first; one
    /// whose handle is gone is not built at all.
    deferred: VecDeque<Weak<Interpreter>>,
    /// Whether a session of this generation was built: only then are
    /// callers handed sessions to be built later.
    proven: bool,
    /// Sessions of an older generation, and one-offs' sessions once
    /// answered, freed by the refill thread rather than by the caller who
    /// replaced the options or the thread the one-off ran on.
    stale: Vec<ResourceArc<SessionResource>>,
    /// When a session was last asked for, whether one was handed over.
    asked_at: Option<Instant>,
    /// Set while the refill thread waits. A hand-over wakes it only when
    /// the shelf runs low ([`Shelf::wants_wake`]): a wake is a system call its caller
    /// pays, a few microseconds, more than the hand-over itself.
    waiting: bool,
    /// Set while it waits with no time set to look again.
    waiting_for_good: bool,
    /// Set when the shelf was full: nothing is built until hand-overs
    /// take it down to a quarter, or the callers pause for [`QUIET`],
    /// whatever else wakes the thread.
    resting: bool,
}

struct Prepared {
    shelf: Mutex<Shelf>,
    /// Wakes the refill thread: a session was taken, or the options changed.
    wake: Condvar,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();

fn prepared() -> &'static Prepared {
    PREPARED.get_or_init(|| {
        // Without the thread the shelf stays empty, and every session is
        // built by its caller, as without a shelf.
        let _ = std::thread::Builder::new()
            .name("ex_bashkit_prepare".into())
            .spawn(refill);
        Prepared {
            shelf: Mutex::new(Shelf::default()),
            wake: Condvar::new(),
        }
    })
}

/// Sets the options the shelf prepares sessions with, under `generation`,
/// and how many it keeps ready (0: none). Sessions prepared with earlier
/// options are dropped.
#[rustler::nif]
fn session_prepare(
    generation: u64,
    options: Protocol<SessionOptions>,
    capacity: usize,
) -> rustler::Atom {
    let Protocol(options) = options;
    let prepared = prepared();
    let mut shelf = lock(&prepared.shelf);
    let old = std::mem::take(&mut shelf.sessions);
    shelf.stale.extend(old);
    shelf.generation = generation;
    shelf.proven = false;
    shelf.resting = false;
    shelf.options = Some(Arc::new(options));
    shelf.capacity = capacity.min(MOST);
    prepared.wake.notify_one();
    crate::atoms::ok()
}

/// A prepared session built with the options of `generation`, as
/// `{:ok, session}`: one from the shelf, or, when a burst has emptied it,
/// one to be built by the refill thread or its first call. `:empty` when
/// neither can be had: a shelf the refill thread holds this instant, or
/// options that have not built yet. It never waits.
#[rustler::nif]
fn session_take(env: Env<'_>, generation: u64) -> Term<'_> {
    match take(generation, Taker::Session) {
        Some(resource) => (crate::atoms::ok(), resource).encode(env),
        None => crate::atoms::empty().encode(env),
    }
}

/// Who takes a session from the shelf, and so what it may take.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Taker {
    /// `Session.new()`: any shelved session, or, when the shelf is empty,
    /// one to be built later.
    Session,
    /// A one-off: a shelved session only while more than a quarter of the
    /// shelf is left after it, so that one-offs never set the refill thread
    /// building beside them. Back to back they outrun it, and with its
    /// builds on the second of two cores they came slower than each
    /// building its own: 1,000 in a row, 126 µs each against 92.
    OneOff,
}

/// A session of `generation` from the shelf, as `taker` may have one.
pub fn take(generation: u64, taker: Taker) -> Option<ResourceArc<SessionResource>> {
    let prepared = prepared();
    let (taken, wake) = match prepared.shelf.try_lock() {
        Ok(mut shelf) if shelf.generation == generation => {
            shelf.asked_at = Some(Instant::now());
            let spare = shelf.sessions.len() > shelf.capacity / 4 + 1;
            let taken = match taker {
                Taker::OneOff if !spare => None,
                Taker::OneOff => shelf.sessions.pop_front(),
                Taker::Session => shelf.sessions.pop_front().or_else(|| shelf.defer()),
            };
            (taken, shelf.wants_wake())
        }
        _ => (None, false),
    };
    if wake {
        prepared.wake.notify_one();
    }
    let resource = taken?;
    if resource.is_built() {
        resource.unshelve();
        // Placed as a session built now would be: the thread chosen
        // when it was prepared may have work now.
        if let Ok(pool) = interpreters() {
            resource
                .worker
                .store(pool.assign(), std::sync::atomic::Ordering::Relaxed);
        }
    }
    Some(resource)
}

impl Shelf {
    /// A session to be built later, by the refill thread or its first
    /// call; none while these options have not built.
    fn defer(&mut self) -> Option<ResourceArc<SessionResource>> {
        let options = self.options.clone().filter(|_| self.proven)?;
        let (resource, interpreter) = SessionResource::deferred(options);
        self.deferred.push_back(interpreter);
        Some(ResourceArc::new(resource))
    }

    /// Whether a hand-over should wake the waiting refill thread: only
    /// when a quarter of the shelf or less is left.
    fn wants_wake(&self) -> bool {
        self.waiting && (self.sessions.len() <= self.capacity / 4 || !self.deferred.is_empty())
    }

    fn short(&self) -> bool {
        self.options.is_some() && self.sessions.len() < self.capacity
    }

    /// Whether the refill thread should build now. A build beside a
    /// running script slowed a 30 ms restore by a third, so a short shelf
    /// waits for the interpreter threads to be idle, or for [`PATIENCE`]
    /// after a call, as a runaway may keep one busy for good.
    fn wants_build(&self) -> bool {
        let patient = self.asked_at.is_some_and(|at| at.elapsed() < PATIENCE);
        self.short() && !self.resting && (!patient || scripts_idle())
    }

    /// How much of [`QUIET`] is left since a session was last asked for;
    /// `None` once the callers have paused, or before any call.
    fn burst(&self) -> Option<Duration> {
        QUIET.checked_sub(self.asked_at?.elapsed())
    }
}

/// Frees a one-off's session on the refill thread: the thread it ran on
/// takes the caller's next one-off at once, and would make it wait for the
/// free.
pub fn retire(session: ResourceArc<SessionResource>) {
    let Some(prepared) = PREPARED.get() else {
        return drop(session);
    };
    let mut shelf = lock(&prepared.shelf);
    shelf.stale.push(session);
    // Read under the lock: a thread about to wait saw the session first.
    // One that waits with a time set frees it then; woken, a resting one
    // waits out the burst, and builds nothing.
    let wake = shelf.waiting_for_good;
    drop(shelf);
    if wake {
        prepared.wake.notify_one();
    }
}

/// How many sessions wait on the shelf; 0 when no shelf was ever asked
/// for (reading it starts no refill thread).
pub fn shelved() -> usize {
    PREPARED
        .get()
        .map_or(0, |prepared| lock(&prepared.shelf).sessions.len())
}

/// What the refill thread does next.
enum Work {
    /// Builds a session a caller holds already.
    Deferred(Arc<Interpreter>),
    /// Builds one for the shelf.
    Shelve(u64, Arc<SessionOptions>),
}

/// The refill thread: frees stale sessions, builds the sessions handed
/// over unbuilt, and builds one for the shelf whenever it is short of its
/// capacity and no script runs. It keeps the normal
/// priority: a build takes locks that scripts and schedulers take too (the
/// allocator's, the kernel's over the address space), and a thread of low
/// priority preempted while holding one would stall them.
fn refill() {
    let prepared = prepared();
    loop {
        let (generation, options) = match wanted(prepared) {
            Work::Deferred(interpreter) => {
                // A panic here is the caller's to see, at its first call.
                let _ = catch_unwind(AssertUnwindSafe(|| interpreter.build_now()));
                continue;
            }
            Work::Shelve(generation, options) => (generation, options),
        };
        let built = catch_unwind(AssertUnwindSafe(|| {
            SessionResource::build_shelved(&options).map(ResourceArc::new)
        }));
        let mut shelf = lock(&prepared.shelf);
        match built {
            Ok(Ok(session)) if shelf.generation == generation => {
                shelf.proven = true;
                shelf.sessions.push_back(session)
            }
            Ok(Ok(session)) => shelf.stale.push(session),
            // Options that cannot build stop the shelf; each caller then
            // builds its own and is told why that fails.
            _ if shelf.generation == generation => shelf.options = None,
            _ => {}
        }
    }
}

/// Waits until a session is wanted, freeing stale ones meanwhile.
fn wanted(prepared: &Prepared) -> Work {
    let mut shelf = lock(&prepared.shelf);
    loop {
        let burst = shelf.burst();
        // A resting thread's frees wait for the burst to pause; a
        // building one frees between builds.
        if !shelf.stale.is_empty() && (burst.is_none() || !shelf.resting) {
            let stale = std::mem::take(&mut shelf.stale);
            drop(shelf);
            drop(stale);
            shelf = lock(&prepared.shelf);
            continue;
        }
        while let Some(deferred) = shelf.deferred.pop_front() {
            if let Some(interpreter) = deferred.upgrade() {
                return Work::Deferred(interpreter);
            }
        }
        if shelf.sessions.len() <= shelf.capacity / 4 || burst.is_none() {
            shelf.resting = false;
        }
        if shelf.wants_build() {
            if let Some(options) = shelf.options.clone() {
                return Work::Shelve(shelf.generation, options);
            }
        }
        shelf.waiting = true;
        shelf.resting |= !shelf.short();
        shelf = if shelf.short() && !shelf.resting {
            // Scripts run: woken when the last ends (or at the next glance).
            ex_bashkit_core::runtime::call_when_idle(wake_refill);
            let (shelf, _) = prepared
                .wake
                .wait_timeout(shelf, GLANCE)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shelf
        } else if let Some(left) = burst.filter(|_| !shelf.stale.is_empty() || shelf.short()) {
            // Stale sessions to free, or a short shelf resting: both once
            // the burst pauses.
            let (shelf, _) = prepared
                .wake
                .wait_timeout(shelf, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shelf
        } else {
            shelf.waiting_for_good = true;
            let mut shelf = prepared
                .wake
                .wait(shelf)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shelf.waiting_for_good = false;
            shelf
        };
        shelf.waiting = false;
    }
}

/// Wakes the refill thread, under the shelf's lock so that a thread about
/// to wait misses no wake.
fn wake_refill() {
    if let Some(prepared) = PREPARED.get() {
        let _shelf = lock(&prepared.shelf);
        prepared.wake.notify_one();
    }
}

fn scripts_idle() -> bool {
    interpreters().is_ok_and(|pool| pool.all_idle())
}
