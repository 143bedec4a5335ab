//! Jobs: work queued on an interpreter thread for an Elixir process, which
//! gets the outcome as a message `{tag, result}`.
//!
//! A job's [`JobHandle`] monitors the caller, so a caller that dies cancels
//! its job. A caller that stops waiting (its deadline passed) abandons the
//! handle: from then on the job never answers, so no late reply lands in a
//! mailbox that has moved on.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

use futures_util::FutureExt;
use rustler::env::SavedTerm;
use rustler::{Encoder, Env, LocalPid, Monitor, OwnedEnv, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::runtime::interpreters;
use crate::sync::lock;

/// A running script as seen from Elixir. Firing `cancel` (the caller died
/// or gave up) makes the script stop at its next await point.
pub struct JobHandle {
    cancel: Mutex<Option<oneshot::Sender<()>>>,
    monitor: Mutex<Option<Monitor>>,
    /// Held while the reply is sent, so abandoning and answering exclude
    /// each other.
    progress: Mutex<Progress>,
    /// Taken by whoever answers: the job, or the watchdog for a frozen one.
    reply: Mutex<Option<Recipient>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// Sent to an interpreter thread, not yet begun there.
    Sent,
    /// Waiting for its session (scripts queued before it).
    Queued,
    /// Its own work has started.
    Running,
    /// The reply has been sent.
    Answered,
    /// The caller stopped waiting; the reply will not be sent.
    Abandoned,
}

#[rustler::resource_impl]
impl Resource for JobHandle {
    const IMPLEMENTS_DOWN: bool = true;

    fn down<'a>(&'a self, _env: Env<'a>, _pid: LocalPid, _monitor: Monitor) {
        self.cancel();
    }
}

impl JobHandle {
    fn new(reply: Recipient) -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let handle = Self {
            cancel: Mutex::new(Some(tx)),
            monitor: Mutex::new(None),
            progress: Mutex::new(Progress::Sent),
            reply: Mutex::new(Some(reply)),
        };
        (handle, rx)
    }

    /// Sends `{tag, payload}` unless the job has answered already or its
    /// caller stopped waiting. Must run on a non-BEAM thread.
    fn answer<F>(&self, payload: F)
    where
        F: for<'b> FnOnce(Env<'b>) -> Term<'b>,
    {
        let mut progress = lock(&self.progress);
        if matches!(*progress, Progress::Abandoned | Progress::Answered) {
            return;
        }
        *progress = Progress::Answered;
        if let Some(reply) = lock(&self.reply).take() {
            reply.send(payload);
        }
    }

    /// Answers `{tag, {:error, message}}`.
    pub fn fail(&self, message: String) {
        self.answer(|env| (crate::atoms::error(), message).encode(env));
    }

    fn cancel(&self) {
        if let Some(tx) = lock(&self.cancel).take() {
            let _ = tx.send(());
        }
    }

    /// Moves the job forward from `from` to `to`, unless it is past `from`.
    fn advance(&self, from: Progress, to: Progress) {
        let mut progress = lock(&self.progress);
        if *progress == from {
            *progress = to;
        }
    }

    /// Marks the job's own work as started (it no longer waits in a queue).
    pub fn started(&self) {
        self.advance(Progress::Queued, Progress::Running);
    }

    /// Stops the caller's interest in the job: unless it has answered
    /// already, it never will, and it is cancelled at its next await point.
    /// Returns where the job was.
    pub fn abandon(&self) -> Whereabouts {
        let mut progress = lock(&self.progress);
        let was = *progress;
        if was == Progress::Answered {
            return Whereabouts::Answered;
        }
        *progress = Progress::Abandoned;
        drop(progress);
        self.cancel();
        match was {
            Progress::Sent => Whereabouts::Sent,
            Progress::Queued => Whereabouts::Queued,
            _ => Whereabouts::Running,
        }
    }
}

/// Where an abandoned job was, as `ExBashkit.Execution` reads it: not begun
/// on its thread, behind its session's other scripts, running, or answered
/// (the reply is then in the caller's mailbox).
#[derive(rustler::NifUnitEnum)]
pub enum Whereabouts {
    Sent,
    Queued,
    Running,
    Answered,
}

/// What a finished job reports back: a value, or an error message.
pub type Outcome<T> = Result<T, String>;

/// Starts the job `start` builds on interpreter thread `worker` for the
/// process `pid`, which gets `{tag, {:ok, encode(value)}}` or
/// `{tag, {:error, message}}`. The job gets its handle to say when its own
/// work starts. It is dropped (cancelled) when the caller dies first or
/// abandons it.
pub fn spawn_job<'a, S, F, T>(
    env: Env<'a>,
    worker: usize,
    pid: LocalPid,
    tag: Term<'a>,
    start: S,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
) -> Result<ResourceArc<JobHandle>, String>
where
    S: FnOnce(ResourceArc<JobHandle>) -> F,
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: Send + 'static,
{
    let pool = interpreters()?;
    let (handle, cancelled) = JobHandle::new(Recipient::new(pid, tag));
    let handle = ResourceArc::new(handle);
    let job = start(handle.clone());
    match handle.monitor(Some(env), &pid) {
        Some(monitor) => *lock(&handle.monitor) = Some(monitor),
        None => handle.cancel(), // the caller is already gone
    }
    let running = handle.clone();
    pool.spawn(worker, async move {
        running.advance(Progress::Sent, Progress::Queued);
        let outcome = tokio::select! {
            biased;
            _ = cancelled => Err("execution cancelled: the caller exited".to_string()),
            // A panic in the interpreter must still answer the caller, who
            // would otherwise wait forever.
            outcome = AssertUnwindSafe(job).catch_unwind() => outcome
                .unwrap_or_else(|_| Err("internal error: the interpreter panicked".to_string())),
        };
        if let Some(monitor) = lock(&running.monitor).take() {
            running.demonitor(None, &monitor);
        }
        running.answer(|env| match outcome {
            Ok(value) => (crate::atoms::ok(), encode(env, value)).encode(env),
            Err(message) => (crate::atoms::error(), message).encode(env),
        });
    });
    Ok(handle)
}

/// Where and under which tag an asynchronous result is sent: the message is
/// `{tag, payload}`.
pub struct Recipient {
    pid: LocalPid,
    env: OwnedEnv,
    tag: SavedTerm,
}

impl Recipient {
    /// Captures `tag` (any term, usually a reference) for a later reply.
    pub fn new(pid: LocalPid, tag: Term<'_>) -> Self {
        let env = OwnedEnv::new();
        let tag = env.save(tag);
        Self { pid, env, tag }
    }

    /// Sends `{tag, payload}`. Must run on a non-BEAM thread (the runtime's).
    /// A dead recipient is not an error: nobody is waiting any more.
    pub fn send<F>(mut self, payload: F)
    where
        F: for<'a> FnOnce(Env<'a>) -> Term<'a>,
    {
        let tag = &self.tag;
        let _ = self
            .env
            .send_and_clear(&self.pid, |env| (tag.load(env), payload(env)).encode(env));
    }
}
