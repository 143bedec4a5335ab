//! Sessions built ahead of need. `ExBashkit.Session.new()` with the default
//! options takes one off a small shelf, a hand-over of a microsecond or
//! two, instead of building bashkit's interpreter (tens of microseconds).
//! A thread of our own refills the shelf after each hand-over; sessions
//! with other options build as before. Shelved sessions are not counted as
//! live (`ExBashkit.Native.live_sessions/0`) until handed over.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ex_bashkit_core::options::SessionOptions;
use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::sync::lock;
use rustler::{Encoder, Env, ResourceArc, Term};

use crate::convert::NifOptions;
use crate::session::SessionResource;

/// The most sessions a shelf holds, whatever the configuration asks.
const MOST: usize = 64;

/// How often the refill thread looks at the shelf while sessions are being
/// taken: waking it from a caller would cost that caller a system call.
const GLANCE: Duration = Duration::from_millis(1);

/// The longest the refill thread waits, after a hand-over, for running
/// scripts to end before it builds beside them.
const PATIENCE: Duration = Duration::from_millis(100);

/// After how long without a hand-over the refill thread sleeps until woken.
const QUIET: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shelf {
    /// Names the options the shelved sessions were built with; a caller
    /// whose options have another generation gets none of them.
    generation: u64,
    options: Option<Arc<SessionOptions>>,
    capacity: usize,
    /// Made resources already, so a hand-over copies no interpreter.
    sessions: VecDeque<ResourceArc<SessionResource>>,
    /// Sessions of an older generation, freed by the refill thread rather
    /// than by the caller who replaced the options.
    stale: Vec<ResourceArc<SessionResource>>,
    /// When a session was last handed over.
    taken_at: Option<Instant>,
    /// Set while the refill thread waits to be woken; else it looks at the
    /// shelf every [`GLANCE`], and a hand-over makes no system call.
    asleep: bool,
}

struct Prepared {
    shelf: Mutex<Shelf>,
    /// Wakes the refill thread: a session was taken, or the options changed.
    wake: Condvar,
}

fn prepared() -> &'static Prepared {
    static PREPARED: OnceLock<Prepared> = OnceLock::new();
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
fn session_prepare(generation: u64, options: NifOptions, capacity: usize) -> rustler::Atom {
    let NifOptions(options) = options;
    let prepared = prepared();
    let mut shelf = lock(&prepared.shelf);
    let old = std::mem::take(&mut shelf.sessions);
    shelf.stale.extend(old);
    shelf.generation = generation;
    shelf.options = Some(Arc::new(options));
    shelf.capacity = capacity.min(MOST);
    prepared.wake.notify_one();
    crate::atoms::ok()
}

/// A prepared session built with the options of `generation`, as
/// `{:ok, session}`, or `:empty` when none is ready. It never waits: a
/// shelf the refill thread holds this instant counts as empty.
#[rustler::nif]
fn session_take(env: Env<'_>, generation: u64) -> Term<'_> {
    let prepared = prepared();
    let (taken, asleep) = match prepared.shelf.try_lock() {
        Ok(mut shelf) if shelf.generation == generation => {
            let taken = shelf.sessions.pop_front();
            if taken.is_some() {
                shelf.taken_at = Some(Instant::now());
            }
            (taken, shelf.asleep)
        }
        _ => (None, false),
    };
    match taken {
        Some(resource) => {
            if asleep {
                prepared.wake.notify_one();
            }
            resource.session.unshelve();
            (crate::atoms::ok(), resource).encode(env)
        }
        None => crate::atoms::empty().encode(env),
    }
}

/// How many sessions wait on the shelf.
pub fn shelved() -> usize {
    lock(&prepared().shelf).sessions.len()
}

/// The refill thread: frees stale sessions, and builds one whenever the
/// shelf is short of its capacity and no script runs. It runs at a lower
/// priority (nice 10) but not `SCHED_IDLE`: a build takes locks that
/// scripts and schedulers take too, and a thread that may be starved must
/// not hold them.
fn refill() {
    // SAFETY: setpriority only reads its arguments; 0 is this thread.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
    let prepared = prepared();
    loop {
        let (generation, options) = wanted(prepared);
        let built = catch_unwind(AssertUnwindSafe(|| {
            SessionResource::build_shelved(&options).map(ResourceArc::new)
        }));
        let mut shelf = lock(&prepared.shelf);
        match built {
            Ok(Ok(session)) if shelf.generation == generation => shelf.sessions.push_back(session),
            Ok(Ok(session)) => shelf.stale.push(session),
            // Options that cannot build stop the shelf; each caller then
            // builds its own and is told why that fails.
            _ if shelf.generation == generation => shelf.options = None,
            _ => {}
        }
    }
}

/// Waits until a session is wanted, freeing stale ones meanwhile.
fn wanted(prepared: &Prepared) -> (u64, Arc<SessionOptions>) {
    let mut shelf = lock(&prepared.shelf);
    loop {
        if !shelf.stale.is_empty() {
            let stale = std::mem::take(&mut shelf.stale);
            drop(shelf);
            drop(stale);
            shelf = lock(&prepared.shelf);
            continue;
        }
        let short = shelf.options.is_some() && shelf.sessions.len() < shelf.capacity;
        // A build beside a running script slowed a 30 ms restore by a
        // third: the shelf waits for the interpreter threads to be idle,
        // or for [`PATIENCE`], as a runaway may keep one busy for good.
        let patient = shelf.taken_at.is_some_and(|at| at.elapsed() < PATIENCE);
        if short && (!patient || scripts_idle()) {
            if let Some(options) = shelf.options.clone() {
                return (shelf.generation, options);
            }
        }
        let recent = shelf.taken_at.is_some_and(|at| at.elapsed() < QUIET);
        shelf = if short || recent {
            let (shelf, _) = prepared
                .wake
                .wait_timeout(shelf, GLANCE)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shelf
        } else {
            shelf.asleep = true;
            let mut shelf = prepared
                .wake
                .wait(shelf)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shelf.asleep = false;
            shelf
        };
    }
}

fn scripts_idle() -> bool {
    interpreters().is_ok_and(|pool| pool.all_idle())
}
