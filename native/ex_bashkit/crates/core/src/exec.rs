//! Running a script on a session (or on a fresh interpreter), for a job
//! that waits for it in the VM or in a worker process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bashkit::{Bash, ExecResult, LimitExceeded};

use crate::call::Call;
use crate::callback::Channel;
use crate::job::{Job, Outcome};
use crate::limits::LimitsExt;
use crate::memory::{Account, Metered};
use crate::nesting;
use crate::options::{SessionOptions, SessionPlan};
use crate::policy::{Denial, Entered, Gate};
use crate::run_stats::{RunStats, Totals};
use crate::script_error::{Reason, ScriptError};
use crate::session::Session;
use crate::stop::StopSignal;
use crate::tidy::Tidy;
use crate::written::Written;

/// The script as text; scripts arrive as bytes.
pub fn script_text(script: &[u8]) -> Result<String, String> {
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
    /// The session's own limit, for a call that sets none.
    timeout: std::time::Duration,
    gate: &'r Gate,
    frozen: &'r Arc<AtomicBool>,
    job: Arc<dyn Job>,
    call: &'r mut Call,
    /// What the session's files took in, and where its runs are summed.
    written: &'r Written,
    totals: Option<&'r Totals>,
}

/// A script's result, the commands the command policy denied in it, and
/// what it cost.
pub struct Ran {
    pub result: ExecResult,
    pub denials: Vec<Denial>,
    pub stats: RunStats,
}

/// Runs `script` with its allocations charged to a fresh [`Account`]; a
/// script stopped over a memory limit, past the call's own timeout, or by
/// the command policy answers with an error naming it.
async fn run_script(bash: &mut Bash, script: &str, mut run: Run<'_>) -> Outcome<Ran, ScriptError> {
    let policy = run.gate.enter(run.call.command_policy.take())?;
    let started = Instant::now();
    let (commands, written) = (bash.session_counters().0, run.written.total());
    let (outcome, account) = run_metered(bash, script, &mut run).await;
    let stats = RunStats {
        wall: started.elapsed(),
        cpu: account.cpu_time(),
        peak_memory_bytes: account.peak_bytes(),
        file_bytes_written: run.written.total().saturating_sub(written),
        commands: bash.session_counters().0.saturating_sub(commands),
        runs: 1,
    };
    if let Some(totals) = run.totals {
        totals.add(stats);
    }
    let (denials, aborted) = policy.map(Entered::leave).unwrap_or_default();
    if let Some(denial) = aborted {
        let message = format!(
            "{}: {} (the script was stopped: command_policy_abort)",
            denial.name, denial.reason
        );
        return Err(ScriptError::new(Reason::Denied, None, message));
    }
    outcome.map(|result| Ran {
        result,
        denials,
        stats,
    })
}

/// The script's outcome, and its account (what it held, its CPU time).
async fn run_metered(
    bash: &mut Bash,
    script: &str,
    run: &mut Run<'_>,
) -> (Outcome<ExecResult, ScriptError>, Arc<Account>) {
    let cancel = bash.cancellation_token();
    let account = Arc::new(Account::new(
        run.max_memory,
        cancel.clone(),
        run.frozen.clone(),
    ));
    let answer = run.job.clone();
    account.on_freeze(move |message, limit| answer.fail(ScriptError::limit(message, limit)));
    let options = run.call.bashkit_options();
    let metered = Metered::new(&account, bash.exec_with_options(script, options));
    let timeout = run.call.timeout.unwrap_or(run.timeout);
    // Polled first on its caller's thread, a script that never awaits is
    // stopped at its deadline by the watchdog instead of by a timer.
    let deadline = crate::inline::watch_deadline(timeout, &cancel);
    let outcome = match run.call.timeout {
        Some(timeout) => tokio::time::timeout(timeout, metered)
            .await
            .unwrap_or_else(|_| Err(LimitExceeded::Timeout(timeout).into())),
        None => metered.await,
    };
    // Unwatched before the flag comes down: it is never raised after.
    let overdue = deadline.is_some_and(|deadline| deadline.passed());
    // A memory stop raised the flag; the session's next script must not see it.
    cancel.store(false, Ordering::Release);
    let outcome = match outcome {
        Err(_) if overdue => Err(LimitExceeded::Timeout(timeout).into()),
        outcome => outcome,
    };
    let outcome = match account.verdict() {
        Some((message, limit)) => Err(ScriptError::limit(message, limit)),
        None => outcome.map_err(|e| crate::script_error::classify(&e)),
    };
    (outcome, account)
}

/// Runs `script` on `session` once the scripts queued before it are done,
/// for `job` (in the VM or in a worker process). `serve` is called when the
/// script takes the session, and what it returns is dropped when the
/// script is done with it: the VM names the process serving this script's
/// callbacks for that long.
pub async fn run_on_session<S>(
    session: &Session,
    script: &str,
    mut call: Call,
    job: Arc<dyn Job>,
    serve: impl FnOnce() -> S,
    stop: StopSignal,
) -> Outcome<Ran, ScriptError> {
    job.follow_output(call.output.clone());
    let work = async {
        nesting::check(script, session.max_nesting)?;
        let mut bash = session.bash.lock().await;
        session.usable()?;
        job.started();
        if let Some(fresh) = call.credentials.take() {
            session.credentials.replace(&fresh);
        }
        let _serving = serve();
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
                    timeout: session.timeout,
                    gate: &session.gate,
                    frozen: &session.frozen,
                    job: job.clone(),
                    call: &mut call,
                    written: &session.written,
                    totals: Some(&session.totals),
                };
                run_script(&mut bash, script, run).await
            }
            Err(message) => Err(ScriptError::from(message)),
        };
        session.call_scope.settle(&mut bash);
        tidy.after(&mut bash, outcome.as_ref().map(|ran| ran.result.exit_code))
            .await;
        outcome
    };
    let outcome = stop.guard(work).await;
    outcome.map_err(|error| error.with_output(call.kept_output()))
}

/// Runs `script` on a fresh interpreter built from `options`, dropped
/// afterwards; its callbacks go out through `callbacks`.
pub async fn run_once(
    options: &SessionOptions,
    script: &str,
    job: Arc<dyn Job>,
    callbacks: Channel,
) -> Outcome<Ran, ScriptError> {
    job.started();
    nesting::check(script, options.limits.nesting_depth())?;
    let gate = Gate::new(options.command_policy.clone());
    let storage = crate::options::Storage::new(options);
    let mut bash = options
        .build(
            &Arc::new(callbacks),
            &options.credentials(),
            None,
            &gate,
            crate::options::Extra::none(),
            &storage,
        )
        .await?;
    let run = Run {
        max_memory: options.limits.script_memory(),
        timeout: options.limits.execution().timeout,
        gate: &gate,
        frozen: &Arc::new(AtomicBool::new(false)),
        job,
        call: &mut Call::default(),
        written: &storage.written,
        totals: None,
    };
    run_script(&mut bash, script, run).await
}
