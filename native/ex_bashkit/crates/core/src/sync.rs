//! Small synchronization helpers shared across modules.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long `block_on` waits awake before it parks.
const SPIN: Duration = Duration::from_micros(100);

/// Locks `mutex`; a panic elsewhere must not wedge a script's bookkeeping.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `future` to its end on this thread, parked between polls: for
/// synchronous code (a bashkit hook, a JavaScript engine's host function)
/// that needs an answer only an async channel or filesystem gives.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    // Outside tokio's cooperative budget: polled from within a task (a
    // builtin's), a tokio channel would otherwise answer Pending for ever
    // once the task's budget is spent, since this loop never yields to
    // the scheduler that refills it.
    let mut future = std::pin::pin!(tokio::task::unconstrained(future));
    let started = Instant::now();
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        // An answer from the host usually comes within microseconds:
        // waiting awake (yielding the core) for a moment saves a sleep
        // and a wake-up, as the interpreter threads do (`runtime.rs`).
        if started.elapsed() < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::park();
        }
    }
}
