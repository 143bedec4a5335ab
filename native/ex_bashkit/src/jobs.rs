//! Jobs: work queued on an interpreter thread for an Elixir process, which
//! gets the outcome as a message `{tag, result}`.
//!
//! A job's [`JobHandle`] monitors the caller from the job's first wait, so
//! a caller that dies cancels its job. A caller that stops waiting (its
//! deadline passed) abandons the handle: from then on the job never
//! answers, so no late reply lands in a mailbox that has moved on.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ex_bashkit_core::inline::{self, FirstPoll};
use ex_bashkit_core::job::{Job, Outcome};
use ex_bashkit_core::runtime::{self, interpreters};
use ex_bashkit_core::script_error::ScriptError;
use ex_bashkit_core::stop::{Stop, StopSignal};
use ex_bashkit_core::streaming::Output;
use ex_bashkit_core::sync::lock;
use futures_util::FutureExt;
use rustler::env::SavedTerm;
use rustler::{Encoder, Env, LocalPid, Monitor, OwnedEnv, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::convert::Protocol;

/// A running script as seen from Elixir: its state, as a resource the
/// caller holds and the NIF monitors the caller with.
pub struct JobHandle(Arc<JobState>);

impl std::ops::Deref for JobHandle {
    type Target = JobState;

    fn deref(&self) -> &JobState {
        &self.0
    }
}

/// A running script's state. Firing `stop` (the caller died or gave up, or
/// `ExBashkit.Session.cancel/1`) makes the script stop at its next await
/// point. Kept apart from the resource because a job answered by its first
/// poll on a dirty scheduler never needs one, and making and freeing a
/// resource there cost more than the script (the BEAM's thread-progress
/// wake-ups: 14 µs).
pub struct JobState {
    stop: Mutex<Option<oneshot::Sender<Stop>>>,
    monitor: Mutex<Option<Monitor>>,
    /// Held while the reply is sent, so abandoning and answering exclude
    /// each other.
    progress: Mutex<Progress>,
    /// Taken by whoever answers: the job, or the watchdog for a frozen one.
    reply: Mutex<Option<Recipient>>,
    /// What the script printed so far, kept for its caller's error even if
    /// the job never answers (it did not stop at its deadline).
    output: Mutex<Option<Arc<Output>>>,
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
        self.stop(Stop::CallerExited);
    }
}

impl JobState {
    fn new(reply: Recipient) -> (Self, StopSignal) {
        let (tx, stop) = StopSignal::new();
        let handle = Self {
            stop: Mutex::new(Some(tx)),
            monitor: Mutex::new(None),
            progress: Mutex::new(Progress::Sent),
            reply: Mutex::new(Some(reply)),
            output: Mutex::new(None),
        };
        (handle, stop)
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

    /// Marks the job answered by its first poll's return value: nothing
    /// else answers it, and its reply's environment is kept for reuse.
    fn answered_here(&self) {
        *lock(&self.progress) = Progress::Answered;
        if let Some(reply) = lock(&self.reply).take() {
            reply.recycle();
        }
    }

    /// Answers `{tag, {:error, error}}`.
    pub fn fail(&self, error: impl Encoder) {
        self.answer(|env| (crate::atoms::error(), error).encode(env));
    }

    /// Stops the job (the first stop counts) at its next await point.
    pub fn stop(&self, stop: Stop) {
        if let Some(tx) = lock(&self.stop).take() {
            let _ = tx.send(stop);
        }
    }

    /// Moves the job forward from `from` to `to`, unless it is past `from`.
    fn advance(&self, from: Progress, to: Progress) {
        let mut progress = lock(&self.progress);
        if *progress == from {
            *progress = to;
        }
    }

    /// Keeps a handle on the output the job's script keeps, if it keeps any.
    pub fn follow_output(&self, output: Option<Arc<Output>>) {
        *lock(&self.output) = output;
    }

    /// What the script kept of its output so far: `(stdout, stderr)`.
    pub fn output_so_far(&self) -> (Vec<u8>, Vec<u8>) {
        lock(&self.output)
            .as_ref()
            .map(|output| output.take_kept())
            .unwrap_or_default()
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
        self.stop(Stop::Abandoned);
        match was {
            Progress::Sent => Whereabouts::Sent,
            Progress::Queued => Whereabouts::Queued,
            _ => Whereabouts::Running,
        }
    }
}

/// The job as the core's script runner sees it.
pub struct VmJob(pub Arc<JobState>);

impl Job for VmJob {
    fn started(&self) {
        self.0.started();
    }

    fn stop(&self, stop: Stop) {
        self.0.stop(stop);
    }

    fn fail(&self, error: ScriptError) {
        self.0.fail(Protocol(error));
    }

    fn follow_output(&self, output: Option<Arc<Output>>) {
        self.0.follow_output(output);
    }
}

/// Where an abandoned job was, as `ExBashkit.Caller` reads it: not begun
/// on its thread, behind its session's other scripts, running, or answered
/// (the reply is then in the caller's mailbox).
#[derive(rustler::NifUnitEnum)]
pub enum Whereabouts {
    Sent,
    Queued,
    Running,
    Answered,
}

/// Starts the job `start` builds on interpreter thread `worker` for the
/// process `pid`, which gets `{tag, {:ok, encode(value)}}` or
/// `{tag, {:error, error}}`. The job gets its handle, to say when its own
/// work starts, and its [`StopSignal`], to end when the caller dies first
/// (watched from the job's first wait), abandons it, or cancels it.
pub fn spawn_job<'a, S, F, T, E>(
    worker: usize,
    pid: LocalPid,
    tag: Term<'a>,
    start: S,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
) -> Result<ResourceArc<JobHandle>, String>
where
    S: FnOnce(Arc<JobState>, StopSignal) -> F + Send + 'static,
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    let pool = interpreters()?;
    let (state, stop) = JobState::new(Recipient::new(pid, tag));
    let state = Arc::new(state);
    let handle = ResourceArc::new(JobHandle(state.clone()));
    let running = handle.clone();
    // The job's future is made, and boxed, on the interpreter thread: it
    // holds bashkit's (kilobytes; 25 KB for a one-off run), and every move
    // of it on the caller's scheduler was a copy of all of it, a tenth of
    // `exec("true")` there. What crosses threads is the small `start`.
    pool.spawn(worker, async move {
        running.advance(Progress::Sent, Progress::Queued);
        let job = Box::pin(start(state, stop));
        drive(running, pid, job, encode).await;
    });
    Ok(handle)
}

/// What came of a job whose first poll ran on its caller's thread.
pub enum Inline<T, E> {
    /// It ended there: the outcome, which nobody else sends.
    Ran(Outcome<T, E>),
    /// It goes on (or was frozen): answered as any job, `{tag, result}`.
    Later(ResourceArc<JobHandle>),
}

/// Runs the first poll of the job `start` builds here, on the calling
/// dirty scheduler, holding `slot` (see `ex_bashkit_core::inline`). A job
/// that ends there is answered by the return value, with no message and
/// no thread woken; one that waits goes on on interpreter thread `worker`
/// as [`spawn_job`]'s do. Also returns how long the poll took.
pub fn run_inline<'a, S, F, T, E>(
    slot: inline::Slot,
    worker: usize,
    pid: LocalPid,
    tag: Term<'a>,
    start: S,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
) -> Result<(Inline<T, E>, Duration), String>
where
    S: FnOnce(Arc<JobState>, StopSignal) -> F,
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    let pool = interpreters()?;
    // The reply is ready before the poll: a script frozen there is
    // answered by the watchdog, which may come first.
    let (state, stop) = JobState::new(Recipient::new(pid, tag));
    *lock(&state.progress) = Progress::Queued;
    let state = Arc::new(state);
    let began = Instant::now();
    let polled = slot.first_poll(pool.handle(worker), Box::pin(start(state.clone(), stop)));
    let took = began.elapsed();
    drop(slot);
    let inline = match polled {
        FirstPoll::Ready(outcome) => {
            state.answered_here();
            Inline::Ran(outcome)
        }
        FirstPoll::Panicked => {
            state.answered_here();
            Inline::Ran(Err(E::from(PANICKED.to_string())))
        }
        FirstPoll::Pending(job) => {
            let handle = ResourceArc::new(JobHandle(state));
            pool.spawn(worker, drive(handle.clone(), pid, job, encode));
            Inline::Later(handle)
        }
        FirstPoll::Frozen => Inline::Later(ResourceArc::new(JobHandle(state))),
    };
    Ok((inline, took))
}

const PANICKED: &str = "internal error: the interpreter panicked";

/// Polls `job` to its end on an interpreter thread and answers its caller.
async fn drive<F, T, E>(
    running: ResourceArc<JobHandle>,
    pid: LocalPid,
    job: Pin<Box<F>>,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
) where
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    let job = WatchOnWait {
        job,
        first_wait: Some(|| watch(&running, &pid)),
    };
    // A panic in the interpreter must still answer the caller, who
    // would otherwise wait forever.
    let outcome = AssertUnwindSafe(job)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(E::from(PANICKED.to_string())));
    runtime::job_done();
    running.answer(|env| match outcome {
        Ok(value) => (crate::atoms::ok(), encode(env, value)).encode(env),
        Err(error) => (crate::atoms::error(), error).encode(env),
    });
    // After the answer, which the caller waits for: a demonitor is a
    // signal to the caller's process, a microsecond here. A caller
    // that dies in between stops a job that is over, which is nothing.
    if let Some(monitor) = lock(&running.monitor).take() {
        running.demonitor(None, &monitor);
    }
}

/// Monitors the caller `pid` of `job` from an interpreter thread: its exit
/// stops the job. A caller already gone stops it now.
fn watch(job: &ResourceArc<JobHandle>, pid: &LocalPid) {
    match job.monitor(None, pid) {
        Some(monitor) => *lock(&job.monitor) = Some(monitor),
        None => job.stop(Stop::CallerExited),
    }
}

/// A job's future, and what to do the first time it has to wait. A job
/// is stopped by its caller's exit only at an await point, so one that
/// finishes in its first poll (most scripts: microseconds) need not watch
/// its caller: the monitor, and the demonitor after the answer, were two
/// signals to the caller's process per `exec`.
struct WatchOnWait<F, W> {
    job: Pin<Box<F>>,
    first_wait: Option<W>,
}

impl<F: Future, W: FnOnce() + Unpin> Future for WatchOnWait<F, W> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let poll = self.job.as_mut().poll(cx);
        if poll.is_pending() {
            if let Some(first_wait) = self.first_wait.take() {
                first_wait();
            }
        }
        poll
    }
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
        let env = crate::envs::take();
        let tag = env.save(tag);
        Self { pid, env, tag }
    }

    /// Gives back the environment unsent, cleared, for a later message.
    fn recycle(mut self) {
        self.env.clear();
        crate::envs::keep(self.env);
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
        crate::envs::keep(self.env);
    }
}
