//! The interpreter threads every script runs on.
//!
//! Scripts never run on a BEAM scheduler thread (normal or dirty): bashkit's
//! interpreter recurses on the native stack, and a dirty scheduler's ~320 KB
//! stack overflows on hostile input, which would abort the whole VM. Our
//! threads get a large stack instead; Linux commits stack pages lazily, so an
//! idle thread costs only the pages it has touched.
//!
//! Each thread runs its own single-threaded tokio runtime and owns the
//! sessions pinned to it. A script that waits (`sleep`, a queued script, a
//! callback into Elixir) is a parked task, not a blocked thread, so thousands
//! can wait at once. After a job arrives a thread keeps polling its queue for
//! a short while before it sleeps: waking a sleeping thread costs tens of
//! microseconds here, more than a whole `exec("true")`, and agents send
//! scripts in bursts.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle};
use tokio::sync::mpsc::{self, error::TryRecvError, UnboundedReceiver, UnboundedSender};

/// Stack size of every interpreter thread. Generous because eval recursion is
/// not depth-limited upstream; it is virtual memory until used.
pub const INTERPRETER_STACK_BYTES: usize = 1 << 30;

/// How long an interpreter thread keeps looking for work before sleeping.
const SPIN_WINDOW: Duration = Duration::from_micros(200);

/// Per-thread bound on tokio's blocking pool (bashkit parses big scripts there).
const MAX_BLOCKING_THREADS: usize = 8;

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

struct Worker {
    jobs: UnboundedSender<Job>,
    handle: Handle,
}

/// The pool of interpreter threads.
pub struct Interpreters {
    workers: Vec<Worker>,
    next: AtomicUsize,
}

/// The process-wide pool, started on first use.
pub fn interpreters() -> &'static Interpreters {
    static POOL: OnceLock<Interpreters> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        // More threads than cores so one CPU-bound script delays only the
        // sessions pinned next to it.
        Interpreters::start((cores * 2).max(4))
    })
}

impl Interpreters {
    fn start(count: usize) -> Self {
        let workers = (0..count).map(start_worker).collect();
        Self {
            workers,
            next: AtomicUsize::new(0),
        }
    }

    /// Picks a thread for a new session (round robin).
    pub fn assign(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.workers.len()
    }

    /// Runs `job` on thread `worker`.
    pub fn spawn(&self, worker: usize, job: impl Future<Output = ()> + Send + 'static) {
        // Sending fails only if the thread is gone, i.e. the VM is exiting.
        let _ = self.workers[worker].jobs.send(Box::pin(job));
    }

    /// Drives `future` to completion on the calling (dirty scheduler)
    /// thread, inside thread `worker`'s runtime context. For short,
    /// non-recursive work only: filesystem calls and building interpreters.
    pub fn block_on<F: Future>(&self, worker: usize, future: F) -> F::Output {
        self.workers[worker].handle.block_on(future)
    }
}

fn start_worker(index: usize) -> Worker {
    let runtime = Builder::new_current_thread()
        .enable_all()
        .on_thread_start(mark_interpreter_thread)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_stack_size(INTERPRETER_STACK_BYTES)
        .thread_name(format!("ex_bashkit_{index}_blocking"))
        .build()
        .expect("ex_bashkit: cannot build an interpreter runtime");
    let handle = runtime.handle().clone();
    let (jobs, queue) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name(format!("ex_bashkit_{index}"))
        .stack_size(INTERPRETER_STACK_BYTES)
        .spawn(move || {
            mark_interpreter_thread();
            runtime.block_on(serve(queue))
        })
        .expect("ex_bashkit: cannot start an interpreter thread");
    Worker { jobs, handle }
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

/// Takes jobs off the queue and runs them as tasks on this thread.
async fn serve(mut queue: UnboundedReceiver<Job>) {
    loop {
        let job = match queue.try_recv() {
            Ok(job) => job,
            // While watching the queue, let this thread's other tasks run
            // (and the timer and I/O drivers be polled), and give the core
            // away whenever another thread wants it: on a small machine the
            // BEAM's own schedulers are spinning too.
            Err(TryRecvError::Empty) if recently_active() => {
                std::thread::yield_now();
                tokio::task::yield_now().await;
                continue;
            }
            Err(TryRecvError::Empty) => match queue.recv().await {
                Some(job) => job,
                None => return,
            },
            Err(TryRecvError::Disconnected) => return,
        };
        tokio::spawn(job);
        stay_awake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_on_interpreter_threads_and_report_back() {
        let pool = Interpreters::start(2);
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
        let pool = Interpreters::start(1);
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
        let pool = Interpreters::start(1);
        let (tx, rx) = mpsc::channel();
        pool.spawn(0, async move { tx.send(depth(20_000)).unwrap() });
        assert_eq!(rx.recv().unwrap(), 20_000);
    }
}
