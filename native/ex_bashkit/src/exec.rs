//! Running scripts: `ExBashkit.exec/1` and `ExBashkit.Session.exec/2`.
//!
//! The NIF only queues the script on the runtime and returns an
//! [`ExecHandle`]; the outcome arrives as a message `{tag, result}`. The
//! handle monitors the caller, so a caller that dies cancels its script.
//! A caller that stops waiting (its deadline passed) abandons the handle:
//! from then on the job never answers, so no late reply lands in a mailbox
//! that has moved on.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bashkit::{Bash, ExecResult};
use futures_util::FutureExt;
use rustler::{Binary, Encoder, Env, LocalPid, Monitor, NewBinary, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::error;
use crate::memory::{Account, Metered};
use crate::nesting;
use crate::options::SessionOptions;
use crate::reply::ReplyTo;
use crate::runtime::interpreters;
use crate::session::SessionResource;
use crate::sync::lock;
use crate::tidy::Tidy;

/// A running script as seen from Elixir. Firing `cancel` (the caller died
/// or gave up) makes the script stop at its next await point.
pub struct ExecHandle {
    cancel: Mutex<Option<oneshot::Sender<()>>>,
    monitor: Mutex<Option<Monitor>>,
    /// Held while the reply is sent, so abandoning and answering exclude
    /// each other.
    progress: Mutex<Progress>,
    /// Taken by whoever answers: the job, or the watchdog for a frozen one.
    reply: Mutex<Option<ReplyTo>>,
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

mod atoms {
    rustler::atoms! { sent, queued, running, answered }
}

#[rustler::resource_impl]
impl Resource for ExecHandle {
    const IMPLEMENTS_DOWN: bool = true;

    fn down<'a>(&'a self, _env: Env<'a>, _pid: LocalPid, _monitor: Monitor) {
        self.cancel();
    }
}

impl ExecHandle {
    fn new(reply: ReplyTo) -> (Self, oneshot::Receiver<()>) {
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
}

/// Stops the caller's interest in a job: unless it has answered already,
/// it never will, and it is cancelled at its next await point. Returns
/// where the job was: `:sent` (not begun on its thread), `:queued` (behind
/// its session's other scripts), `:running` or `:answered` (the reply is
/// then in the caller's mailbox).
#[rustler::nif]
fn exec_abandon(handle: ResourceArc<ExecHandle>) -> rustler::Atom {
    let mut progress = lock(&handle.progress);
    let was = *progress;
    if was == Progress::Answered {
        return atoms::answered();
    }
    *progress = Progress::Abandoned;
    drop(progress);
    handle.cancel();
    match was {
        Progress::Sent => atoms::sent(),
        Progress::Queued => atoms::queued(),
        _ => atoms::running(),
    }
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
) -> ResourceArc<ExecHandle>
where
    S: FnOnce(ResourceArc<ExecHandle>) -> F,
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: Send + 'static,
{
    let (handle, cancelled) = ExecHandle::new(ReplyTo::new(pid, tag));
    let handle = ResourceArc::new(handle);
    let job = start(handle.clone());
    match handle.monitor(Some(env), &pid) {
        Some(monitor) => *lock(&handle.monitor) = Some(monitor),
        None => handle.cancel(), // the caller is already gone
    }
    let running = handle.clone();
    interpreters().spawn(worker, async move {
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
    handle
}

/// `{stdout, stderr, exit_code, truncated}`, as `ExBashkit.Execution` reads it.
fn encode_result(env: Env<'_>, result: ExecResult) -> Term<'_> {
    let stdout = bytes(env, result.stdout.as_bytes());
    let stderr = bytes(env, result.stderr.as_bytes());
    let truncated = result.stdout_truncated || result.stderr_truncated;
    (stdout, stderr, result.exit_code, truncated).encode(env)
}

/// Copies raw bytes into a binary term: output is never re-encoded.
pub fn bytes<'a>(env: Env<'a>, data: &[u8]) -> Binary<'a> {
    let mut binary = NewBinary::new(env, data.len());
    binary.as_mut_slice().copy_from_slice(data);
    binary.into()
}

fn script_text(script: Binary) -> Result<String, String> {
    String::from_utf8(script.as_slice().to_vec()).map_err(|e| {
        format!(
            "script is not valid UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Runs `script` with its allocations charged to a fresh [`Account`]
/// capped at `max_memory`; a script stopped over a memory limit answers
/// with an error naming it. `frozen` is set if the script has to be frozen,
/// and then `handle` is answered by the watchdog.
async fn run_script(
    bash: &mut Bash,
    script: &str,
    max_memory: usize,
    frozen: &Arc<AtomicBool>,
    handle: &ResourceArc<ExecHandle>,
) -> Outcome<ExecResult> {
    let cancel = bash.cancellation_token();
    cancel.store(false, Ordering::Release);
    let account = Account::new(max_memory, cancel.clone(), frozen.clone());
    let answer = handle.clone();
    account.on_freeze(move |message| answer.fail(message));
    let outcome = Metered::new(&account, bash.exec(script)).await;
    cancel.store(false, Ordering::Release);
    match account.verdict() {
        Some(message) => Err(message),
        None => outcome.map_err(|e| error::message(&e)),
    }
}

/// Runs `script` on the session, after any script already queued on it.
/// `callback_server` serves its builtins and virtual_fs calls, if it has any.
#[rustler::nif]
fn session_exec<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
    callback_server: Option<LocalPid>,
) -> Result<ResourceArc<ExecHandle>, String> {
    let script = script_text(script)?;
    session.usable()?;
    Ok(spawn_job(
        env,
        interpreters().place(&session.worker),
        pid,
        tag,
        |handle| async move {
            nesting::check(&script, session.max_nesting)?;
            let mut bash = session.bash.lock().await;
            session.usable()?;
            handle.started();
            let _serving = session.callbacks.serve(callback_server);
            let tidy = Tidy::before(&session.untidy, &mut bash).await;
            let (memory, frozen) = (session.max_script_memory, &session.frozen);
            let outcome = run_script(&mut bash, &script, memory, frozen, &handle).await;
            tidy.after(&mut bash, &outcome).await;
            outcome
        },
        encode_result,
    ))
}

/// Runs `script` on a fresh interpreter that is dropped afterwards.
#[rustler::nif]
fn exec_once<'a>(
    env: Env<'a>,
    options: SessionOptions,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<ExecHandle>, String> {
    let script = script_text(script)?;
    let worker = interpreters().assign();
    Ok(spawn_job(
        env,
        worker,
        pid,
        tag,
        |handle| async move {
            handle.started();
            nesting::check(&script, options.limits.nesting_depth())?;
            let mut bash = options.build(&Default::default()).await?;
            let memory = options.limits.script_memory();
            let frozen = Arc::new(AtomicBool::new(false));
            run_script(&mut bash, &script, memory, &frozen, &handle).await
        },
        encode_result,
    ))
}
