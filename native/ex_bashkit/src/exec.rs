//! Running scripts: `ExBashkit.exec/1` and `ExBashkit.Session.exec/2`.
//!
//! The NIFs only queue the script on the runtime as a job (`jobs.rs`); the
//! outcome arrives as a message `{tag, result}`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bashkit::{Bash, ExecResult};
use rustler::{Atom, Binary, Encoder, Env, LocalPid, ResourceArc, Term};

use crate::error;
use crate::jobs::{spawn_job, JobHandle, Outcome, Whereabouts};
use crate::memory::{Account, Metered};
use crate::nesting;
use crate::options::SessionOptions;
use crate::runtime::interpreters;
use crate::session::SessionResource;
use crate::terms::bytes;
use crate::tidy::Tidy;

/// Abandons a job its caller stopped waiting for; see [`JobHandle::abandon`].
#[rustler::nif]
fn exec_abandon(handle: ResourceArc<JobHandle>) -> Whereabouts {
    handle.abandon()
}

/// `{stdout, stderr, exit_code, truncated}`, as `ExBashkit.Execution` reads it.
fn encode_result(env: Env<'_>, result: ExecResult) -> Term<'_> {
    let stdout = bytes(env, result.stdout.as_bytes());
    let stderr = bytes(env, result.stderr.as_bytes());
    let truncated = result.stdout_truncated || result.stderr_truncated;
    (stdout, stderr, result.exit_code, truncated).encode(env)
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
    handle: &ResourceArc<JobHandle>,
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
) -> Result<ResourceArc<JobHandle>, String> {
    let script = script_text(script)?;
    session.usable()?;
    spawn_job(
        env,
        interpreters()?.place(&session.worker),
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
    )
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

/// The caller is done with its script's callbacks (`Channel::done`).
#[rustler::nif]
fn session_callbacks_done(
    env: Env<'_>,
    session: ResourceArc<SessionResource>,
    server: Option<LocalPid>,
) -> Atom {
    session.callbacks.done(env.pid(), server);
    crate::atoms::ok()
}

/// Runs `script` on a fresh interpreter that is dropped afterwards.
#[rustler::nif]
fn exec_once<'a>(
    env: Env<'a>,
    options: SessionOptions,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<JobHandle>, String> {
    let script = script_text(script)?;
    let worker = interpreters()?.assign_warm();
    spawn_job(
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
    )
}
