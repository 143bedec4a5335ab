//! Running scripts: `ExBashkit.exec/1` and `ExBashkit.Session.exec/2`.
//!
//! The NIFs only queue the script on the runtime as a job (`jobs.rs`); the
//! outcome arrives as a message `{tag, result}`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ex_bashkit_core::callback::Channel;
use ex_bashkit_core::exec::{run_on_session, run_once, script_text, Ran};
use ex_bashkit_core::inline;
use ex_bashkit_core::job::Job;
use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::script_error::ScriptError;
use ex_bashkit_core::stop::StopSignal;
use rustler::{Atom, Binary, Encoder, Env, LocalPid, NifResult, ResourceArc, Term};

use crate::atoms;
use crate::callback::Callbacks;
use crate::convert::Protocol;
use crate::exec_options::{call, ExecOptions};
use crate::jobs::{self, run_inline, spawn_job, JobHandle, JobState, VmJob, Whereabouts};
use crate::prepared;
use crate::session::SessionResource;
use crate::terms::{bytes, protocol};
use ex_bashkit_core::options::SessionOptions;

/// Abandons a job its caller stopped waiting for; see [`JobHandle::abandon`].
#[rustler::nif]
fn exec_abandon(handle: ResourceArc<JobHandle>) -> Whereabouts {
    handle.abandon()
}

/// What an abandoned job's script printed before its caller stopped
/// waiting: `{stdout, stderr}` (empty unless the call kept its output). A
/// script that did not stop at its deadline still ran up to some point.
#[rustler::nif]
fn exec_output_so_far(env: Env<'_>, handle: ResourceArc<JobHandle>) -> Term<'_> {
    let (stdout, stderr) = handle.output_so_far();
    (bytes(env, &stdout), bytes(env, &stderr)).encode(env)
}

/// `{stdout, stderr, exit_code, truncated, denials, stats}`, as
/// `ExBashkit.Caller` reads it; `denials` are `{name, reason}` pairs.
fn encode_result(env: Env<'_>, ran: Ran) -> Term<'_> {
    let Ran {
        result,
        denials,
        stats,
    } = ran;
    let ran = ex_bashkit_protocol::outcome::Ran {
        stdout: result.stdout.as_bytes(),
        stderr: result.stderr.as_bytes(),
        exit_code: result.exit_code,
        truncated: result.stdout_truncated || result.stderr_truncated,
        denials: &denials,
        stats: stats.into(),
    };
    protocol(env, &ran)
}

/// Runs `script` on the session, after any script already queued on it;
/// `callback_server` serves its builtins and virtual_fs calls, if it has
/// any; `options` are the call's own (`nil` for none). The caller waits on
/// its scheduler, a dirty one: the script's first poll runs here
/// (`ex_bashkit_core::inline`) when a slot is free, the script is small
/// and the session has not run long there before. Answers `{:ran,
/// outcome}` when the script ended in that poll; `{:call, handle, calls}`
/// when it waits for callbacks, which the caller serves and then polls it
/// on with `session_exec_resume`; else `{:ok, handle}`, answered later by
/// the message `{tag, outcome}` (it goes on on an interpreter thread, or
/// was never polled here), or `{:error, message}`. Calls with live output are queued on
/// the interpreter threads: their chunks are messages, which a scheduler
/// thread cannot send from here.
#[rustler::nif(schedule = "DirtyCpu")]
fn session_exec_inline<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
    callback_server: Option<LocalPid>,
    options: Option<ExecOptions<'a>>,
) -> Term<'a> {
    let placed = (|| -> Result<_, String> {
        let script = script_text(script.as_slice())?;
        session.usable()?;
        Ok((script, interpreters()?.place(&session.worker)))
    })();
    let (script, worker) = match placed {
        Ok(placed) => placed,
        Err(message) => return (atoms::error(), message).encode(env),
    };
    // Output sent as it is written is sent from the thread that runs the
    // script; kept output is not sent.
    let streams = options.as_ref().is_some_and(ExecOptions::streams_live);
    let call = call(options, session.output_caps);
    // A big script may define work that never yields (one huge `[[ ]]` in
    // a function): its session is not run here again.
    if script.len() > INLINE_SCRIPT_BYTES {
        session.runs_inline.store(false, Ordering::Relaxed);
    }
    let slot = (!streams && session.runs_inline.load(Ordering::Relaxed))
        .then(inline::admit)
        .flatten();
    let Some(slot) = slot else {
        let queued = run_on(
            session,
            worker,
            script,
            pid,
            tag,
            callback_server,
            call,
            false,
        );
        return queued.encode(env);
    };
    let ran_here = session.clone();
    let on_slow = Box::new(move || ran_here.runs_inline.store(false, Ordering::Relaxed));
    let start = move |job, stop| run_job(session, script, callback_server, call, false, job, stop);
    run_inline(env, slot, worker, pid, tag, start, encode_result, on_slow)
}

/// Polls on, on the caller's dirty scheduler, a script parked by
/// `session_exec_inline` (or by an earlier call of this) whose callback has
/// been answered: answers as `session_exec_inline` does.
#[rustler::nif(schedule = "DirtyCpu")]
fn session_exec_resume(env: Env<'_>, handle: ResourceArc<JobHandle>) -> Term<'_> {
    jobs::resume(env, handle)
}

/// Sends a parked script on to its interpreter thread, which answers it by
/// message: its caller's deadline for it came while it waited.
#[rustler::nif]
fn session_exec_unpark(handle: ResourceArc<JobHandle>) -> Atom {
    jobs::unpark(&handle);
    atoms::ok()
}

/// The largest script whose first poll runs on its caller's thread:
/// bashkit parses bigger ones on a thread of its pool anyway.
const INLINE_SCRIPT_BYTES: usize = 16 * 1024;

/// Queues `script` on `session` on thread `worker`; with `last` (a
/// one-off's), the session is handed to the refill thread to be freed.
#[allow(clippy::too_many_arguments)]
fn run_on(
    session: ResourceArc<SessionResource>,
    worker: usize,
    script: String,
    pid: LocalPid,
    tag: Term<'_>,
    callback_server: Option<LocalPid>,
    call: ex_bashkit_core::call::Call,
    last: bool,
) -> Result<ResourceArc<JobHandle>, String> {
    spawn_job(
        worker,
        pid,
        tag,
        move |job, stop| run_job(session, script, callback_server, call, last, job, stop),
        encode_result,
    )
}

/// The job of running `script` on `session`, for `job`.
async fn run_job(
    session: ResourceArc<SessionResource>,
    script: String,
    callback_server: Option<LocalPid>,
    call: ex_bashkit_core::call::Call,
    last: bool,
    job: Arc<JobState>,
    stop: StopSignal,
) -> Result<Ran, Protocol<ScriptError>> {
    let job: Arc<dyn Job> = Arc::new(VmJob(job));
    let serve = || session.callbacks.serve(callback_server);
    let outcome = run_on_session(&session, &script, call, job, serve, stop).await;
    if last {
        // Handed over before the answer, freed after it and not on this
        // thread: the caller's next one-off comes here, and would wait
        // behind the free (`prepared::retire`).
        prepared::retire(session);
    }
    outcome.map_err(Protocol)
}

/// Stops the session's running script, from any process: `true` if one was
/// running (see `cancel.rs`).
#[rustler::nif]
fn session_cancel(session: ResourceArc<SessionResource>) -> bool {
    session.running.cancel()
}

/// Sends the running script's callback calls to `server` from now on: the
/// caller, which got the first call, has started it (`ExBashkit.Callbacks`).
#[rustler::nif]
fn session_callback_server(
    env: Env<'_>,
    session: ResourceArc<SessionResource>,
    server: LocalPid,
) -> Atom {
    session.callbacks.redirect(env.pid(), server);
    crate::atoms::ok()
}

/// The caller is done with its script's callbacks (`Callbacks::done`).
#[rustler::nif]
fn session_callbacks_done(
    env: Env<'_>,
    session: ResourceArc<SessionResource>,
    server: Option<LocalPid>,
) -> Atom {
    session.callbacks.done(env.pid(), server);
    crate::atoms::ok()
}

/// Runs `script` on an interpreter of its own, dropped afterwards: one
/// prepared with the defaults of `generation` when the shelf has one ready
/// (its hand-over instead of a build), else one built for it with
/// `options`, which are only decoded then.
#[rustler::nif]
fn exec_once<'a>(
    options: Term<'a>,
    generation: Option<u64>,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
) -> NifResult<Result<ResourceArc<JobHandle>, String>> {
    let placed = script_text(script.as_slice())
        .and_then(|script| Ok((script, interpreters()?.assign_warm())));
    let (script, worker) = match placed {
        Ok(placed) => placed,
        Err(error) => return Ok(Err(error)),
    };
    if let Some(session) =
        generation.and_then(|generation| prepared::take(generation, prepared::Taker::OneOff))
    {
        // Nothing serves its callbacks: the defaults have none.
        let call = call(None, session.output_caps);
        return Ok(run_on(session, worker, script, pid, tag, None, call, true));
    }
    let Protocol(options): Protocol<SessionOptions> = options.decode()?;
    Ok(spawn_job(
        worker,
        pid,
        tag,
        |job, stop| {
            let job: Arc<dyn Job> = Arc::new(VmJob(job));
            // Never served: a script run once has no caller to serve it.
            let callbacks = Channel::new(Arc::new(Callbacks::default()));
            let run = async move { run_once(&options, &script, job, callbacks).await };
            async move { stop.guard(run).await.map_err(Protocol) }
        },
        encode_result,
    ))
}
