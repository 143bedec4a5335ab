//! The interpreter threads every script runs on.
//!
//! Scripts never run on a BEAM scheduler thread (normal or dirty): bashkit's
//! interpreter recurses on the native stack, and a dirty scheduler's ~320 KB
//! stack overflows on hostile input, which would abort the whole VM. Our
//! threads get a large stack instead; Linux commits stack pages lazily, so an
//! idle thread costs only the pages it has touched.
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
//! caller is still answered at its deadline (see `ExBashkit.Execution`).
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

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use tokio::runtime::{Builder, Handle};
use tokio::sync::Notify;

/// Stack size of every interpreter thread. Generous because eval recursion is
/// not depth-limited upstream; it is virtual memory until used.
pub const INTERPRETER_STACK_BYTES: usize = 1 << 30;

/// How long an interpreter thread keeps looking for work before sleeping.
const SPIN_WINDOW: Duration = Duration::from_micros(200);

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

/// A poll after which its thread has freed this much since the last
/// collection hands the free pages back to the OS.
const COLLECT_AFTER_FREED_BYTES: isize = 64 << 20;

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

/// What a thread is doing, for placement decisions made elsewhere.
#[derive(Default)]
struct Load {
    /// Jobs started on the thread and not yet finished (running or waiting).
    jobs: AtomicUsize,
    /// When its current poll began ([`now`]), or 0 between polls.
    busy_since: AtomicU64,
    /// The OS thread id, for its priority (0 where unknown).
    tid: AtomicU64,
    /// Running at lowered priority.
    niced: AtomicBool,
    /// Lowered for good: restoring the priority was refused.
    demoted: AtomicBool,
    /// The thread's CPU clock, where the platform has one.
    cpu_clock: OnceLock<CpuClock>,
    /// The poll the watchdog last saw (its `busy_since`), and the thread's
    /// CPU time then, in nanoseconds.
    seen_poll: AtomicU64,
    cpu_when_seen: AtomicU64,
}

impl Load {
    fn hogged(&self, now: u64) -> bool {
        let since = self.busy_since.load(Ordering::Relaxed);
        since != 0 && now.saturating_sub(since) > HOG_THRESHOLD.as_nanos() as u64
    }

    /// Whether new work may go to this thread.
    fn available(&self, now: u64) -> bool {
        !self.hogged(now) && !self.demoted.load(Ordering::Relaxed)
    }

    /// Whether the thread is hogged and its poll has burned more than
    /// [`BURN_THRESHOLD`] of CPU since the watchdog first saw it. Where
    /// there is no CPU clock, whether it is hogged. Called by the watchdog
    /// alone, which keeps the first sighting.
    fn burning(&self, now: u64) -> bool {
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
    fn adjust_priority(&self, now: u64) {
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
struct CpuClock(#[cfg_attr(not(target_os = "linux"), allow(dead_code))] i64);

impl CpuClock {
    /// The calling thread's clock.
    #[cfg(target_os = "linux")]
    fn current() -> Option<Self> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; `clock` is ours.
        let status = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        (status == 0).then_some(Self(i64::from(clock)))
    }

    #[cfg(not(target_os = "linux"))]
    fn current() -> Option<Self> {
        None
    }

    /// CPU time the thread has used.
    #[cfg(target_os = "linux")]
    fn nanos(&self) -> Option<u64> {
        let mut time = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only `time`; a stale clock fails.
        let status = unsafe { libc::clock_gettime(self.0 as libc::clockid_t, &mut time) };
        (status == 0).then(|| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
    }

    #[cfg(not(target_os = "linux"))]
    fn nanos(&self) -> Option<u64> {
        None
    }
}

#[cfg(target_os = "linux")]
fn current_tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

#[cfg(not(target_os = "linux"))]
fn current_tid() -> u64 {
    0
}

/// Moves one thread to `SCHED_IDLE` (it runs only on a core nothing else
/// wants) or back to the normal policy. Linux keeps the policy per thread.
#[cfg(target_os = "linux")]
fn set_background(tid: u64, background: bool) -> bool {
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
fn set_background(_tid: u64, _background: bool) -> bool {
    false
}

/// Nanoseconds since the pool's epoch, never 0.
fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// A job whose polls are timed on its thread's [`Load`], and which counts
/// in its `jobs` until it says it is done ([`job_done`]) or ends.
struct Timed {
    job: Job,
    load: Arc<Load>,
    counted: bool,
}

thread_local! {
    /// While a job is polled: its thread's [`Load`], and whether the job
    /// said it is done.
    static POLLING: Cell<(*const Load, bool)> = const { Cell::new((std::ptr::null(), false)) };
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
        // one that freed much leaves no freed pages resident: mimalloc
        // keeps them for reuse until it is told to collect.
        crate::memory::release_stack();
        if crate::memory::take_freed() > COLLECT_AFTER_FREED_BYTES {
            // SAFETY: mi_collect has no preconditions.
            unsafe { libmimalloc_sys::mi_collect(true) };
        }
        poll
    }
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
pub fn interpreters() -> Result<&'static Interpreters, String> {
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
                crate::memory::answer_frozen();
            })
            .map_err(cannot_start)?;
        crate::memory::wake_on_freeze(watchdog.thread().clone());
        Ok(pool)
    });
    pool.as_ref().map_err(String::clone)
}

fn cannot_start(error: std::io::Error) -> String {
    format!(
        "cannot start the interpreter threads: {error} (each reserves a {} MiB stack \
         of address space; is the VM's address space limited, as by ulimit -v?)",
        INTERPRETER_STACK_BYTES >> 20
    )
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
        // SAFETY: mi_collect has no preconditions.
        .on_thread_stop(|| unsafe { libmimalloc_sys::mi_collect(true) })
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_stack_size(BLOCKING_STACK_BYTES)
        .thread_name(format!("ex_bashkit_{index}_blocking"))
        .build()?;
    let handle = runtime.handle().clone();
    let inbox = Arc::new(Inbox::default());
    let helpers = helped.clone();
    let load = Arc::new(Load::default());
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

/// Takes jobs out of the inbox and runs them as tasks on this thread.
async fn serve(inbox: Arc<Inbox>, load: Arc<Load>) {
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
            None => {
                inbox.arrived.notified().await;
                continue;
            }
        };
        load.jobs.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(Timed {
            job,
            load: load.clone(),
            counted: true,
        });
        stay_awake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_on_interpreter_threads_and_report_back() {
        let pool = Interpreters::start(2).unwrap();
        let (tx, rx) = mpsc::channel();
        for worker in 0..2 {
            let tx = tx.clone();
            pool.spawn(worker, async move {
                let name = std::thread::current().name().map(str::to_owned);
                tx.send(name).unwrap();
            });
        }
        let mut names: Vec<_> = (0..2).map(|_| rx.recv().unwrap().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["ex_bashkit_0", "ex_bashkit_1"]);
    }

    #[test]
    fn waiting_jobs_hold_no_thread() {
        // One thread, many sleepers: they can only overlap if a sleeping
        // job yields the thread.
        let pool = Interpreters::start(1).unwrap();
        let (tx, rx) = mpsc::channel();
        let started = Instant::now();
        for _ in 0..100 {
            let tx = tx.clone();
            pool.spawn(0, async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                tx.send(()).unwrap();
            });
        }
        for _ in 0..100 {
            rx.recv().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn only_a_poll_that_burns_cpu_is_lowered() {
        let pool = Interpreters::start(2).unwrap();
        let hold = Duration::from_millis(400);
        pool.spawn(0, async move { std::thread::sleep(hold) });
        pool.spawn(1, async move {
            let started = Instant::now();
            while started.elapsed() < hold {
                std::hint::spin_loop();
            }
        });
        let (blocked, spinning) = (&pool.worker(0).load, &pool.worker(1).load);
        let (mut blocked_hogged, mut burned) = (false, false);
        let started = Instant::now();
        while started.elapsed() < hold / 2 {
            let now = now();
            assert!(!blocked.burning(now), "a blocked poll burns no CPU");
            blocked_hogged |= blocked.hogged(now);
            burned |= spinning.burning(now);
            std::thread::sleep(WATCH_INTERVAL);
        }
        // No new work goes to either; only the spinning one is lowered.
        assert!(blocked_hogged);
        assert!(burned || CpuClock::current().is_none());
    }

    #[test]
    fn deep_recursion_fits_the_interpreter_stack() {
        // 20 MiB of frames: far past a dirty scheduler's or a default
        // thread's stack, well within ours.
        fn depth(n: u64) -> u64 {
            let frame = std::hint::black_box([0u8; 1024]);
            if n == 0 {
                u64::from(frame[0])
            } else {
                depth(n - 1) + 1
            }
        }
        let pool = Interpreters::start(1).unwrap();
        let (tx, rx) = mpsc::channel();
        pool.spawn(0, async move { tx.send(depth(20_000)).unwrap() });
        assert_eq!(rx.recv().unwrap(), 20_000);
    }
}
