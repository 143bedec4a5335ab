//! Running scripts: `ExBashkit.exec/1` and `ExBashkit.Session.exec/2`.
//!
//! The NIFs only queue the script on the runtime as a job (`jobs.rs`); the
//! outcome arrives as a message `{tag, result}`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bashkit::{Bash, ExecResult, LimitExceeded};
use rustler::{Atom, Binary, Encoder, Env, LocalPid, ResourceArc, Term};

use crate::exec_options::{Call, ExecOptions};
use crate::job::Job;
use crate::jobs::{spawn_job, JobHandle, Outcome, StopSignal, Whereabouts};
use crate::memory::{Account, Metered};
use crate::nesting;
use crate::options::SessionOptions;
use crate::runtime::interpreters;
use crate::script_error::ScriptError;
use crate::session::SessionResource;
use crate::terms::bytes;
use crate::tidy::Tidy;

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

/// `{stdout, stderr, exit_code, truncated}`, as `ExBashkit.Execution` reads it.
fn encode_result(env: Env<'_>, result: ExecResult) -> Term<'_> {
    let stdout = bytes(env, result.stdout.as_bytes());
    let stderr = bytes(env, result.stderr.as_bytes());
    let truncated = result.stdout_truncated || result.stderr_truncated;
    (stdout, stderr, result.exit_code, truncated).encode(env)
}

pub(crate) fn script_text(script: &[u8]) -> Result<String, String> {
    String::from_utf8(script.to_vec()).map_err(|e| {
        format!(
            "script is not valid UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// One script's run: its memory cap, the flag set if it is frozen (then
/// `job` is answered at once), and the call's own options.
struct Run<'r> {
    max_memory: usize,
    frozen: &'r Arc<AtomicBool>,
    job: Arc<dyn Job>,
    call: &'r mut Call,
}

/// Runs `script` with its allocations charged to a fresh [`Account`]; a
/// script stopped over a memory limit, or past the call's own timeout,
/// answers with an error naming it.
async fn run_script(
    bash: &mut Bash,
    script: &str,
    run: Run<'_>,
) -> Outcome<ExecResult, ScriptError> {
    let cancel = bash.cancellation_token();
    let account = Arc::new(Account::new(
        run.max_memory,
        cancel.clone(),
        run.frozen.clone(),
    ));
    let answer = run.job;
    account.on_freeze(move |message, limit| answer.fail(ScriptError::limit(message, limit)));
    let options = run.call.bashkit_options();
    let metered = Metered::new(&account, bash.exec_with_options(script, options));
    let outcome = match run.call.timeout {
        Some(timeout) => tokio::time::timeout(timeout, metered)
            .await
            .unwrap_or_else(|_| Err(LimitExceeded::Timeout(timeout).into())),
        None => metered.await,
    };
    // A memory stop raised the flag; the session's next script must not see it.
    cancel.store(false, Ordering::Release);
    match account.verdict() {
        Some((message, limit)) => Err(ScriptError::limit(message, limit)),
        None => outcome.map_err(|e| ScriptError::classify(&e)),
    }
}

/// Runs `script` on `session` once the scripts queued before it are done,
/// for `job` (in the VM or in a worker process). `callback_server` serves
/// its builtins and virtual_fs calls in the VM; a worker's session reaches
/// its host instead.
pub(crate) async fn run_on_session(
    session: &SessionResource,
    script: &str,
    mut call: Call,
    job: Arc<dyn Job>,
    callback_server: Option<LocalPid>,
    stop: StopSignal,
) -> Outcome<ExecResult, ScriptError> {
    job.follow_output(call.output.clone());
    let work = async {
        nesting::check(script, session.max_nesting)
            .map_err(|message| ScriptError::limit(message, "max_ast_depth"))?;
        let mut bash = session.bash.lock().await;
        session.usable()?;
        job.started();
        if let Some(fresh) = call.credentials.take() {
            session.credentials.replace(&fresh);
        }
        let _serving = session.callbacks.serve(callback_server);
        let tidy = Tidy::before(&session.untidy, &mut bash).await;
        session.call_scope.settle(&mut bash);
        let scope = session
            .call_scope
            .enter(&mut bash, &call.env, call.cwd.as_deref());
        let outcome = match scope.await {
            Ok(()) => {
                let _running = session.running.enter(job.clone());
                let run = Run {
                    max_memory: session.max_script_memory,
                    frozen: &session.frozen,
                    job: job.clone(),
                    call: &mut call,
                };
                run_script(&mut bash, script, run).await
            }
            Err(message) => Err(ScriptError::from(message)),
        };
        session.call_scope.settle(&mut bash);
        tidy.after(&mut bash, &outcome).await;
        outcome
    };
    let outcome = stop.guard(work).await;
    outcome.map_err(|error| error.with_output(call.kept_output()))
}

/// Runs `script` on the session, after any script already queued on it.
/// `callback_server` serves its builtins and virtual_fs calls, if it has
/// any; `options` are the call's own (`nil` for none).
#[rustler::nif]
fn session_exec<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    script: Binary<'a>,
    pid: LocalPid,
    tag: Term<'a>,
    callback_server: Option<LocalPid>,
    options: Option<ExecOptions<'a>>,
) -> Result<ResourceArc<JobHandle>, String> {
    let script = script_text(script.as_slice())?;
    session.usable()?;
    let call = Call::new(options, session.output_caps);
    spawn_job(
        env,
        interpreters()?.place(&session.worker),
        pid,
        tag,
        |handle, stop| {
            let job: Arc<dyn Job> = Arc::new(handle);
            async move { run_on_session(&session, &script, call, job, callback_server, stop).await }
        },
        encode_result,
    )
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
    let script = script_text(script.as_slice())?;
    let worker = interpreters()?.assign_warm();
    spawn_job(
        env,
        worker,
        pid,
        tag,
        |handle, stop| {
            stop.guard(async move {
                handle.started();
                nesting::check(&script, options.limits.nesting_depth())
                    .map_err(|message| ScriptError::limit(message, "max_ast_depth"))?;
                let mut bash = options
                    .build(&Arc::default(), &options.credentials(), None)
                    .await?;
                let run = Run {
                    max_memory: options.limits.script_memory(),
                    frozen: &Arc::new(AtomicBool::new(false)),
                    job: Arc::new(handle),
                    call: &mut Call::default(),
                };
                run_script(&mut bash, &script, run).await
            })
        },
        encode_result,
    )
}
