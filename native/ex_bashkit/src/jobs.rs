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
use std::time::Instant;

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
    /// The script, between two polls on its caller's thread: it waits for
    /// a callback its caller serves, and its caller polls it on when the
    /// reply has come ([`resume`]). Anything else that must move it (a
    /// stop, its caller's deadline or exit) sends it to its interpreter
    /// thread instead.
    parked: Mutex<Option<Box<dyn Parked>>>,
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

impl Drop for JobHandle {
    /// A parked job's caller let go of it without resuming it (it died):
    /// nothing would ever poll it, and it holds its session.
    fn drop(&mut self) {
        if lock(&self.parked).is_some() {
            self.stop(Stop::CallerExited);
        }
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
            parked: Mutex::new(None),
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

    /// Stops the job (the first stop counts) at its next await point; a
    /// parked one goes to its interpreter thread, which polls it there.
    pub fn stop(&self, stop: Stop) {
        if let Some(tx) = lock(&self.stop).take() {
            let _ = tx.send(stop);
        }
        self.unpark(None);
    }

    /// Parks the job between two polls on its caller's thread; one stopped
    /// meanwhile goes on on its interpreter thread at once.
    fn park(&self, parked: Box<dyn Parked>) {
        *lock(&self.parked) = Some(parked);
        if lock(&self.stop).is_none() {
            self.unpark(None);
        }
    }

    /// Sends a parked job on to its interpreter thread (its caller, if
    /// `watch` is given, watched from there as any job's).
    fn unpark(&self, watch: Option<ResourceArc<JobHandle>>) {
        let parked = lock(&self.parked).take();
        if let Some(parked) = parked {
            parked.ship(watch);
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
        drive(running.0.clone(), Some(running), pid, job, encode).await;
    });
    Ok(handle)
}

/// Runs the first poll of the job `start` builds here, on the calling
/// dirty scheduler, holding `slot` (see `ex_bashkit_core::inline`), and
/// answers what came of it (see [`polled_here`]). `on_slow` is called when
/// the poll took more than `inline::BUDGET`.
#[allow(clippy::too_many_arguments)]
pub fn run_inline<'a, S, F, T, E>(
    env: Env<'a>,
    slot: inline::Slot,
    worker: usize,
    pid: LocalPid,
    tag: Term<'a>,
    start: S,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
    on_slow: Box<dyn Fn() + Send>,
) -> Term<'a>
where
    S: FnOnce(Arc<JobState>, StopSignal) -> F,
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    // The reply is ready before the poll: a script frozen there is
    // answered by the watchdog, which may come first.
    let (state, stop) = JobState::new(Recipient::new(pid, tag));
    *lock(&state.progress) = Progress::Queued;
    let state = Arc::new(state);
    let job = Box::pin(start(state.clone(), stop));
    let waiting = Waiting {
        job,
        resume: inline::Resume::default(),
        state,
        worker,
        pid,
        encode,
        on_slow,
    };
    waiting.poll_here(env, slot, None)
}

/// Polls on, here, a job parked by an earlier poll on this caller's
/// thread: its callback has been answered. Answers as [`run_inline`]; a job
/// no longer parked (stopped, or sent on meanwhile) answers `{:ok, handle}`
/// and is answered by message, as is one for which no slot is free.
pub fn resume<'a>(env: Env<'a>, handle: ResourceArc<JobHandle>) -> Term<'a> {
    let parked = lock(&handle.parked).take();
    let Some(parked) = parked else {
        return (crate::atoms::ok(), handle).encode(env);
    };
    match inline::admit() {
        Some(slot) => parked.resume(env, slot, handle),
        None => {
            parked.ship(Some(handle.clone()));
            (crate::atoms::ok(), handle).encode(env)
        }
    }
}

/// Sends a parked job on to its interpreter thread, where it is answered by
/// message (its caller's deadline for it has come while it waited).
pub fn unpark(handle: &ResourceArc<JobHandle>) {
    handle.unpark(Some(handle.clone()));
}

/// A job polled on its caller's thread, type-erased for [`JobState`].
trait Parked: Send {
    /// Polls it once more here, holding `slot`.
    fn resume<'a>(
        self: Box<Self>,
        env: Env<'a>,
        slot: inline::Slot,
        handle: ResourceArc<JobHandle>,
    ) -> Term<'a>;

    /// Sends it on to its interpreter thread, polled to its end there.
    fn ship(self: Box<Self>, watch: Option<ResourceArc<JobHandle>>);
}

/// A job polled on its caller's thread, between two polls.
struct Waiting<F, T> {
    job: Pin<Box<F>>,
    resume: inline::Resume,
    state: Arc<JobState>,
    worker: usize,
    pid: LocalPid,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
    on_slow: Box<dyn Fn() + Send>,
}

impl<F, T, E> Waiting<F, T>
where
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    /// Polls the job here, and answers: `{:ran, outcome}` when it ended in
    /// the poll (nobody else answers it, no message is sent);
    /// `{:call, handle, calls}` when it waits for the callbacks it sent
    /// (`ExBashkit.Callbacks` messages its caller serves, then resumes it);
    /// `{:ok, handle}` when it goes on on its interpreter thread, or was
    /// frozen, and answers by message; `{:error, message}`.
    fn poll_here<'a>(
        mut self,
        env: Env<'a>,
        slot: inline::Slot,
        handle: Option<ResourceArc<JobHandle>>,
    ) -> Term<'a> {
        let home = match interpreters() {
            Ok(pool) => pool.handle(self.worker),
            Err(error) => return (crate::atoms::error(), error.to_string()).encode(env),
        };
        let began = Instant::now();
        let polled = slot.poll_again(home, self.job, std::mem::take(&mut self.resume));
        if began.elapsed() > inline::BUDGET {
            (self.on_slow)();
        }
        drop(slot);
        let calls = crate::callback::parked_calls();
        let state = self.state.clone();
        let handle = move || handle.unwrap_or_else(|| ResourceArc::new(JobHandle(state)));
        match polled {
            FirstPoll::Ready(outcome) => {
                self.state.answered_here();
                let outcome = match outcome {
                    Ok(value) => (crate::atoms::ok(), (self.encode)(env, value)).encode(env),
                    Err(error) => (crate::atoms::error(), error).encode(env),
                };
                (crate::atoms::ran(), outcome).encode(env)
            }
            FirstPoll::Panicked => {
                self.state.answered_here();
                let error = E::from(PANICKED.to_string());
                (crate::atoms::ran(), (crate::atoms::error(), error)).encode(env)
            }
            FirstPoll::Pending(job, resume) => {
                let handle = handle();
                let waiting = Waiting {
                    job,
                    resume,
                    ..self
                };
                if calls.is_empty() {
                    Box::new(waiting).ship(Some(handle.clone()));
                    return (crate::atoms::ok(), handle).encode(env);
                }
                let calls: Vec<Term<'a>> = calls.into_iter().map(|call| call.load(env)).collect();
                handle.park(Box::new(waiting));
                (crate::atoms::call(), handle, calls).encode(env)
            }
            FirstPoll::Frozen => (crate::atoms::ok(), handle()).encode(env),
        }
    }
}

impl<F, T, E> Parked for Waiting<F, T>
where
    F: Future<Output = Outcome<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Encoder + From<String> + Send + 'static,
{
    fn resume<'a>(
        self: Box<Self>,
        env: Env<'a>,
        slot: inline::Slot,
        handle: ResourceArc<JobHandle>,
    ) -> Term<'a> {
        self.poll_here(env, slot, Some(handle))
    }

    fn ship(self: Box<Self>, watch: Option<ResourceArc<JobHandle>>) {
        let Waiting {
            job,
            state,
            worker,
            pid,
            encode,
            ..
        } = *self;
        match interpreters() {
            Ok(pool) => pool.spawn(worker, drive(state, watch, pid, job, encode)),
            // No pool: no job could have been polled here either.
            Err(error) => state.fail(error.to_string()),
        }
    }
}

const PANICKED: &str = "internal error: the interpreter panicked";

/// Polls `job` to its end on an interpreter thread and answers its caller,
/// watched (from its first wait) through `watch` when its caller holds it.
async fn drive<F, T, E>(
    state: Arc<JobState>,
    watch_through: Option<ResourceArc<JobHandle>>,
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
        first_wait: Some(|| {
            if let Some(handle) = &watch_through {
                watch(handle, &pid);
            }
        }),
    };
    // A panic in the interpreter must still answer the caller, who
    // would otherwise wait forever.
    let outcome = AssertUnwindSafe(job)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(E::from(PANICKED.to_string())));
    runtime::job_done();
    state.answer(|env| match outcome {
        Ok(value) => (crate::atoms::ok(), encode(env, value)).encode(env),
        Err(error) => (crate::atoms::error(), error).encode(env),
    });
    // After the answer, which the caller waits for: a demonitor is a
    // signal to the caller's process, a microsecond here. A caller
    // that dies in between stops a job that is over, which is nothing.
    if let Some(handle) = &watch_through {
        if let Some(monitor) = lock(&handle.monitor).take() {
            handle.demonitor(None, &monitor);
        }
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
