//! The interpreter threads every script runs on.
//!
//! Scripts run here once they have to wait; a script's first poll may run
//! on its caller's dirty scheduler instead, on a stack of its own
//! (`inline.rs`). Never on a scheduler's own stack: bashkit's interpreter
//! recurses on the native stack, and a dirty scheduler's ~320 KB stack
//! overflows on hostile input, which would abort the whole VM. Our threads
//! get a large stack instead; Linux commits stack pages lazily, so an idle
//! thread costs only the pages it has touched.
//!
//! Each thread runs its own single-threaded tokio runtime. A session's
//! scripts go to its home thread, so a busy session keeps hitting a thread
//! that is already awake. A script that waits (`sleep`, a queued script, a
//! callback into Elixir) is a parked task, not a blocked thread, so thousands
//! can wait at once. After a job arrives a thread keeps polling its queue for
//! a short while before it sleeps: waking a sleeping thread costs tens of
//! microseconds here, more than a whole `exec("true")`, and agents send
//! scripts in bursts.
//!
//! Some bashkit work never yields (a pathological `[[ … ]]`, a deep parse):
//! the thread it runs on serves nothing else until it ends. So every thread
//! records when its current poll began; a thread inside one poll for longer
//! than [`HOG_THRESHOLD`] is taken as hogged. New sessions, and the next
//! script of a session whose home is busy with other work, go to a thread
//! that has none, and when every thread has some the pool starts another
//! (up to four per core): a script that never yields holds every script
//! started on its thread, so work shares a thread only when it must. Past
//! that, work goes to a thread that is not hogged, and when every thread
//! is hogged the pool starts another (up to [`MAX_THREADS`]). A job sent
//! to a thread just before it became hogged has not started yet: a
//! watchdog moves such jobs out of a hogged thread's
//! inbox every [`WATCH_INTERVAL`]. What had already started on a hogged
//! thread (a `sleep` of another session there) waits until the hog ends; its
//! caller is still answered at its deadline (see `ExBashkit.Caller`).
//!
//! On Linux the watchdog also moves a hogged thread whose poll burns CPU
//! (its own CPU clock, not the wall clock, says so) to `SCHED_IDLE` until
//! that poll ends: it then runs only on a core that nothing else
//! wants, so other sessions, and the BEAM itself, get the cores first (with
//! 4 hogs on 2 cores, the median `exec` of a new session stays near 0.1 ms
//! instead of 4 ms). The hog still ends, sooner or later, which matters
//! since whatever else was waiting on its thread waits for it. Where
//! moving it back is not permitted (an unprivileged VM past its
//! `RLIMIT_NICE`), the thread stays demoted: it finishes what it has, and
//! gets no new work. A thread that is hogged only by the wall clock keeps
//! its priority: one blocked in a call, or a cooperative script (CPython
//! yields every millisecond of guest work) preempted by other threads on a
//! busy machine. Lowering those would starve everything else they serve,
//! timers included, for as long as the machine stays busy.

use crate::error::SessionError;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use tokio::runtime::{Builder, Handle};
use tokio::sync::Notify;

// Paths, since tests/runtime.rs includes this file by #[path].
#[path = "runtime/load.rs"]
mod load;
#[path = "runtime/timed.rs"]
mod timed;

use load::{current_tid, set_background, CpuClock, Load};
pub use timed::job_done;
use timed::{collect, collect_owed, Timed};

/// Stack size of every interpreter thread. Generous because eval recursion is
/// not depth-limited upstream; it is virtual memory until used.
pub const INTERPRETER_STACK_BYTES: usize = 1 << 30;

/// How long an interpreter thread keeps looking for work before sleeping;
/// a worker process's reader looks for the VM's next frame as long.
pub const SPIN_WINDOW: Duration = Duration::from_micros(200);

/// How long an interpreter thread that freed much stays without work
/// before it hands the freed pages back to the OS.
const COLLECT_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);

/// Per-thread bound on tokio's blocking pool (bashkit parses big scripts there).
const MAX_BLOCKING_THREADS: usize = 8;

/// Stack size of a blocking-pool thread. Parsing recurses, but only as deep
/// as the nesting check (`nesting.rs`) lets a script go; evaluation, which
/// recurses without bound, stays on the interpreter thread.
const BLOCKING_STACK_BYTES: usize = 64 << 20;

/// How long an idle blocking-pool thread lives (tokio's default is 10 s).
const BLOCKING_KEEP_ALIVE: Duration = Duration::from_millis(500);

/// A thread inside one poll for longer than this is hogged: no new work
/// goes to it. Ordinary polls take microseconds.
pub const HOG_THRESHOLD: Duration = Duration::from_millis(10);

/// CPU time a hogged thread's poll must burn, as the watchdog measures it
/// from when it first sees the poll, before the thread is lowered.
const BURN_THRESHOLD: Duration = Duration::from_millis(5);

/// The most interpreter threads the pool grows to when all are hogged.
pub const MAX_THREADS: usize = 64;

/// How many threads the pool grows to so that new work finds an idle one:
/// four per core, at least 8. Past it, work shares threads (a burst of
/// waiting scripts must not leave dozens of threads behind).
fn spread_threads() -> usize {
    static SPREAD: OnceLock<usize> = OnceLock::new();
    *SPREAD.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (cores * 4).clamp(8, MAX_THREADS)
    })
}

/// How often the watchdog looks for jobs waiting on a hogged thread.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(5);

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Worker {
    inbox: Arc<Inbox>,
    handle: Handle,
    load: Arc<Load>,
}

/// Jobs sent to a thread and not yet started. Anyone may take them out
/// again (the watchdog does, from a hogged thread).
#[derive(Default)]
struct Inbox {
    jobs: Mutex<VecDeque<Job>>,
    arrived: Notify,
}

impl Inbox {
    fn push(&self, job: Job) {
        self.queue().push_back(job);
        // Stores a permit when the thread is not waiting: no lost wake-up.
        self.arrived.notify_one();
    }

    fn pop(&self) -> Option<Job> {
        self.queue().pop_front()
    }

    fn take_all(&self) -> VecDeque<Job> {
        std::mem::take(&mut *self.queue())
    }

    fn is_empty(&self) -> bool {
        self.queue().is_empty()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Job>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Nanoseconds since the pool's epoch, never 0.
fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// The pool of interpreter threads. It only grows: an idle thread sleeps
/// and costs the stack pages it touched.
pub struct Interpreters {
    workers: Box<[OnceLock<Worker>]>,
    started: AtomicUsize,
    growing: Mutex<()>,
    next: AtomicUsize,
    /// The thread one-shot work went to last: still awake, most likely.
    warm: AtomicUsize,
}

/// Threads the pool starts with, when set before its first use: a worker
/// process holds one session and needs one (`worker.rs`).
static FIRST_THREADS: AtomicUsize = AtomicUsize::new(0);

/// What [`call_when_idle`] asked to be called, and whether it still waits.
static IDLE_HOOK: OnceLock<fn()> = OnceLock::new();
static IDLE_WANTED: AtomicBool = AtomicBool::new(false);

/// Calls `hook` once, when a job's end next leaves every interpreter thread
/// idle (on the thread whose job ended, after its caller was answered). The
/// NIF's refill thread builds sessions ahead of need only while no script
/// runs; without this it could only look again every few milliseconds, and
/// one-off scripts a few hundred microseconds apart emptied its shelf.
/// There is one hook: the last one given.
pub fn call_when_idle(hook: fn()) {
    let _ = IDLE_HOOK.set(hook);
    IDLE_WANTED.store(true, Ordering::Release);
}

/// A job ended on a thread it left without jobs.
fn job_ended() {
    if IDLE_WANTED.load(Ordering::Relaxed)
        && interpreters().is_ok_and(|pool| pool.all_idle())
        && IDLE_WANTED.swap(false, Ordering::AcqRel)
    {
        if let Some(hook) = IDLE_HOOK.get() {
            hook();
        }
    }
}

/// Sets how many threads the pool starts with; no effect once it started.
pub fn set_threads(count: usize) {
    FIRST_THREADS.store(count, Ordering::Relaxed);
}

/// How often the watchdog looks at the threads, in ms; 0 for
/// [`WATCH_INTERVAL`]. A worker process has one thread to look at, and a
/// thousand idle workers waking every 5 ms would keep a core busy.
static WATCH_MS: AtomicU64 = AtomicU64::new(0);

/// Sets the watchdog's interval (a worker's is long: a frozen script wakes
/// it at once, see `memory::wake_on_freeze`).
pub fn set_watch_interval(interval: Duration) {
    WATCH_MS.store(interval.as_millis().max(1) as u64, Ordering::Relaxed);
}

fn watch_interval() -> Duration {
    match WATCH_MS.load(Ordering::Relaxed) {
        0 => WATCH_INTERVAL,
        ms => Duration::from_millis(ms),
    }
}

/// How many interpreter threads there are, and how many are hogged now.
#[derive(Default)]
pub struct Stats {
    pub threads: usize,
    pub hogged: usize,
}

/// The process-wide pool, started on first use, with its watchdog. When
/// the threads cannot be started (a VM under `ulimit -v` has no room for
/// their stacks), every call that needs them gets the same error.
pub fn interpreters() -> Result<&'static Interpreters, SessionError> {
    static POOL: OnceLock<Result<Interpreters, String>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        // More threads than cores so one CPU-bound script delays only the
        // sessions placed next to it.
        let count = match FIRST_THREADS.load(Ordering::Relaxed) {
            0 => (cores * 2).max(4),
            count => count,
        };
        let pool = Interpreters::start(count).map_err(cannot_start)?;
        let watchdog = std::thread::Builder::new()
            .name("ex_bashkit_watchdog".into())
            .spawn(|| loop {
                std::thread::park_timeout(watch_interval());
                if let Ok(pool) = interpreters() {
                    pool.watch();
                }
                crate::inline::watch();
                crate::memory::answer_frozen();
            })
            .map_err(cannot_start)?;
        crate::memory::wake_on_freeze(watchdog.thread().clone());
        Ok(pool)
    });
    pool.as_ref().map_err(|error| SessionError::Threads {
        error: error.clone(),
        stack_mib: INTERPRETER_STACK_BYTES >> 20,
    })
}

fn cannot_start(error: std::io::Error) -> String {
    error.to_string()
}

impl Interpreters {
    fn start(count: usize) -> std::io::Result<Self> {
        let workers: Box<[OnceLock<Worker>]> = (0..MAX_THREADS.max(count))
            .map(|_| OnceLock::new())
            .collect();
        for (index, slot) in workers.iter().take(count).enumerate() {
            let _ = slot.set(start_worker(index)?);
        }
        Ok(Self {
            workers,
            started: AtomicUsize::new(count),
            growing: Mutex::new(()),
            next: AtomicUsize::new(0),
            warm: AtomicUsize::new(0),
        })
    }

    fn worker(&self, index: usize) -> &Worker {
        self.workers[index]
            .get()
            .expect("ex_bashkit: interpreter thread index out of range")
    }

    /// Picks a thread for new work: the next one round robin that has
    /// nothing to do; else a new one, up to [`spread_threads`]; else the
    /// next one that is not hogged, or a new one when all are (up to
    /// [`MAX_THREADS`]).
    ///
    /// Idle threads first, because work that shares a thread shares its
    /// fate: a script that computes for seconds without yielding holds
    /// every other script started on its thread, a `sleep` whose time is
    /// up included (measured in this suite: a fork bomb held its thread
    /// for 9 s, a 3,000-line printf loop for 1.4 s).
    pub fn assign(&self) -> usize {
        let count = self.started.load(Ordering::Acquire);
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let now = now();
        let order = (0..count).map(|offset| (first + offset) % count);
        if let Some(idle) = order.clone().find(|&index| self.idle(index, now)) {
            return idle;
        }
        if count < spread_threads() {
            if let Some(grown) = self.grow() {
                return grown;
            }
        }
        order
            .clone()
            .find(|&index| self.worker(index).load.available(now))
            .unwrap_or_else(|| self.grow().unwrap_or(first % count))
    }

    /// Whether thread `index` takes new work and has none.
    /// Whether no interpreter thread has work: no job queued or running.
    pub fn all_idle(&self) -> bool {
        let now = now();
        (0..self.started.load(Ordering::Acquire)).all(|index| self.idle(index, now))
    }

    fn idle(&self, index: usize, now: u64) -> bool {
        let worker = self.worker(index);
        worker.load.available(now)
            && worker.load.jobs.load(Ordering::Relaxed) == 0
            && worker.inbox.is_empty()
    }

    /// A thread for one-shot work (`ExBashkit.exec/1`): the one the last
    /// one-shot went to, which polls for work a while after each job
    /// ([`SPIN_WINDOW`]), unless it is hogged. Spreading one-shots round
    /// robin would find each thread asleep, and waking one costs more than
    /// a trivial script.
    pub fn assign_warm(&self) -> usize {
        let warm = self.warm.load(Ordering::Relaxed);
        if self.idle(warm, now()) {
            return warm;
        }
        let moved = self.assign();
        self.warm.store(moved, Ordering::Relaxed);
        moved
    }

    /// `home` if it has nothing else to do; else an idle thread, which
    /// becomes home; else `home` if it is not hogged; else another thread.
    pub fn place(&self, home: &AtomicUsize) -> usize {
        let current = home.load(Ordering::Relaxed);
        let now = now();
        if self.idle(current, now) {
            return current;
        }
        let moved = self.assign();
        if moved != current && !self.idle(moved, now) && self.worker(current).load.available(now) {
            return current; // no idle thread anywhere: stay where it is warm
        }
        home.store(moved, Ordering::Relaxed);
        moved
    }

    /// Starts one more thread; `None` at [`MAX_THREADS`], or when no more
    /// threads can be started.
    fn grow(&self) -> Option<usize> {
        let _growing = self.growing.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.started.load(Ordering::Acquire);
        // Another caller may have grown the pool while this one waited.
        if index > 0 && self.idle(index - 1, now()) {
            return Some(index - 1);
        }
        let slot = self.workers.get(index)?;
        let _ = slot.set(start_worker(index).ok()?);
        self.started.store(index + 1, Ordering::Release);
        Some(index)
    }

    /// Runs `job` on thread `worker`.
    pub fn spawn(&self, worker: usize, job: impl Future<Output = ()> + Send + 'static) {
        self.worker(worker).inbox.push(Box::pin(job));
    }

    /// Moves jobs that wait on hogged threads to threads that are not, and
    /// adjusts thread priorities.
    fn watch(&self) {
        let now = now();
        for index in 0..self.started.load(Ordering::Acquire) {
            let worker = self.worker(index);
            worker.load.adjust_priority(now);
            if worker.load.hogged(now) {
                for job in worker.inbox.take_all() {
                    self.worker(self.assign()).inbox.push(job);
                }
            }
        }
    }

    /// Thread `worker`'s runtime: the timers and blocking pool a first poll
    /// of a script going on there uses (`inline.rs`).
    pub fn handle(&self, worker: usize) -> &Handle {
        &self.worker(worker).handle
    }

    /// Drives `future` to completion on the calling (dirty scheduler)
    /// thread, inside thread `worker`'s runtime context. For short,
    /// non-recursive work only: filesystem calls and building interpreters.
    pub fn block_on<F: Future>(&self, worker: usize, future: F) -> F::Output {
        self.worker(worker).handle.block_on(future)
    }

    pub fn stats(&self) -> Stats {
        let threads = self.started.load(Ordering::Acquire);
        let now = now();
        let hogged = (0..threads)
            .filter(|&index| self.worker(index).load.hogged(now))
            .count();
        Stats { threads, hogged }
    }
}

fn start_worker(index: usize) -> std::io::Result<Worker> {
    let helped = Arc::new(crate::memory::Helped::default());
    let helping = helped.clone();
    let load = Arc::new(Load::default());
    let retiring = load.clone();
    let runtime = Builder::new_current_thread()
        .enable_all()
        // A thread inherits its creator's scheduling policy, and blocking
        // threads are started by an interpreter thread, maybe a hogged one.
        // What they allocate (parses) is charged to the script that waits.
        .on_thread_start(move || {
            mark_interpreter_thread();
            set_background(current_tid(), false);
            crate::memory::help(helping.clone());
        })
        // bashkit parses scripts over 16 KB on the blocking pool, and a
        // hostile parse allocates hundreds of times the script's size.
        // mimalloc keeps what a thread allocated in that thread's heap even
        // after it is freed elsewhere, and an idle thread never returns it:
        // 150 MB stayed resident after one 1 MB script. So blocking threads
        // retire soon, returning their memory as they go.
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        // A thread that retires while the tree it parsed is still in use
        // leaves it in segments only a later collection reclaims, once the
        // interpreter thread has freed it (`Timed`'s drop).
        .on_thread_stop(move || {
            // SAFETY: mi_collect has no preconditions.
            unsafe { libmimalloc_sys::mi_collect(true) };
            retiring.blocking_retired.store(true, Ordering::Release);
        })
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_stack_size(BLOCKING_STACK_BYTES)
        .thread_name(format!("ex_bashkit_{index}_blocking"))
        .build()?;
    let handle = runtime.handle().clone();
    let inbox = Arc::new(Inbox::default());
    let helpers = helped.clone();
    let (thread_inbox, thread_load) = (inbox.clone(), load.clone());
    std::thread::Builder::new()
        .name(format!("ex_bashkit_{index}"))
        .stack_size(INTERPRETER_STACK_BYTES)
        .spawn(move || {
            mark_interpreter_thread();
            crate::memory::own_helpers(helpers);
            thread_load.tid.store(current_tid(), Ordering::Relaxed);
            if let Some(clock) = CpuClock::current() {
                let _ = thread_load.cpu_clock.set(clock);
            }
            runtime.block_on(serve(thread_inbox, thread_load))
        })?;
    Ok(Worker {
        inbox,
        handle,
        load,
    })
}

thread_local! {
    /// Whether this is one of our threads rather than a BEAM scheduler.
    static INTERPRETER_THREAD: Cell<bool> = const { Cell::new(false) };

    /// When this thread last had reason to expect work soon: a job started,
    /// or a script sent a callback to Elixir whose answer will wake it.
    static LAST_ACTIVITY: Cell<Instant> = Cell::new(Instant::now());
}

fn mark_interpreter_thread() {
    INTERPRETER_THREAD.with(|ours| ours.set(true));
    crate::memory::watch_stack();
}

/// Whether the calling thread is one of the interpreter threads (or their
/// blocking pools). Anything that waits on Elixir, or sends to it through an
/// `OwnedEnv`, may only run here: on a BEAM scheduler thread it would block
/// the scheduler or panic.
pub fn on_interpreter_thread() -> bool {
    INTERPRETER_THREAD.with(Cell::get)
}

/// Keeps the calling interpreter thread polling instead of sleeping for the
/// next [`SPIN_WINDOW`]: an answer is expected within microseconds.
pub fn stay_awake() {
    LAST_ACTIVITY.with(|last| last.set(Instant::now()));
}

fn recently_active() -> bool {
    LAST_ACTIVITY.with(|last| last.get().elapsed() < SPIN_WINDOW)
}

/// How often an idle interpreter thread's timer driver wakes.
///
/// A script polled first on its caller's thread (`inline.rs`) sets its
/// deadline's timer on its home thread's driver. A timer sooner than any
/// the driver waits for wakes the thread to wait for it instead: with no
/// timer at all, every such call woke it (a write to its eventfd, and a
/// thread that competes for the cores; 10–40 µs of `exec("true")` here).
/// This tick keeps the driver's next wake at most this far ahead, so a
/// deadline past it wakes nobody; the cost is one wake a second per thread.
const TICK: Duration = Duration::from_secs(1);

/// Takes jobs out of the inbox and runs them as tasks on this thread.
async fn serve(inbox: Arc<Inbox>, load: Arc<Load>) {
    tokio::spawn(async {
        loop {
            tokio::time::sleep(TICK).await;
        }
    });
    loop {
        let job = match inbox.pop() {
            Some(job) => job,
            // While watching the inbox, let this thread's other tasks run
            // (and the timer and I/O drivers be polled), and give the core
            // away whenever another thread wants it: on a small machine the
            // BEAM's own schedulers are spinning too.
            None if recently_active() => {
                std::thread::yield_now();
                tokio::task::yield_now().await;
                continue;
            }
            // Pages a large free left go back to the OS once no job came
            // for a while: a loop of large jobs keeps reusing them.
            None if collect_owed() => {
                let idle = tokio::time::timeout(COLLECT_WHEN_IDLE_FOR, inbox.arrived.notified());
                if idle.await.is_err() {
                    collect();
                }
                continue;
            }
            None => {
                inbox.arrived.notified().await;
                continue;
            }
        };
        load.jobs.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(Timed {
            job,
            inbox: inbox.clone(),
            load: load.clone(),
            counted: true,
        });
        stay_awake();
        // The job runs at once: its caller is waiting. Giving the core away
        // first (above) put a system call before every job.
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
#[path = "runtime/tests.rs"]
mod tests;
