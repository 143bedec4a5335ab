//! What a script would run, found before it runs (bashkit's `analyze`),
//! for `ExBashkit.analyze/1` and the `:approve` option.
//!
//! bashkit's parser recurses, so the script is refused first when it nests
//! deeper than a session may (`nesting.rs`), then parsed on a thread with a
//! large stack, as scripts are for `exec`: one long-lived analysis thread
//! (starting a thread with such a stack per call cost more than the parse).
//! It answers the caller by message.

use std::sync::{mpsc, Mutex, OnceLock};

use bashkit::{analysis, ExecutionLimits};
use rustler::{Binary, Encoder, Env, LocalPid, NifMap, Term};

use crate::jobs::Recipient;
use ex_bashkit_core::exec::script_text;

/// The parser's stack for one analysis: the same as for a script's parse.
const ANALYSIS_STACK_BYTES: usize = 64 << 20;

#[derive(NifMap)]
pub struct Analysis {
    commands: Vec<Command>,
    redirects: Vec<Redirect>,
    functions: Vec<String>,
    wrappers: Vec<String>,
    dynamic_commands: bool,
    substitutions: bool,
    reentry: bool,
    truncated: bool,
}

#[derive(NifMap)]
pub struct Command {
    name: Option<String>,
    args: Vec<Option<String>>,
    context: String,
    assignments: Vec<String>,
}

#[derive(NifMap)]
pub struct Redirect {
    path: Option<String>,
    mode: String,
}

/// Queues `script` for analysis and returns at once; the analysis thread
/// sends `{tag, {:ok, analysis}}`, or `{tag, {:error, why}}` for a script
/// that does not parse (which is not a script that runs nothing), to `pid`.
///
/// Answering by message keeps the caller off a dirty scheduler: the handoff
/// to one and back cost more than parsing a 20-line script.
/// Answers `:ok` once queued, or `{:error, why}`.
#[rustler::nif]
fn script_analysis<'a>(env: Env<'a>, script: Binary, pid: LocalPid, tag: Term) -> Term<'a> {
    match queue(script, pid, tag) {
        Ok(()) => crate::atoms::ok().encode(env),
        Err(why) => (crate::atoms::error(), why).encode(env),
    }
}

fn queue(script: Binary, pid: LocalPid, tag: Term) -> Result<(), String> {
    // Refused before the copy: the copy runs on a normal scheduler.
    let max = ExecutionLimits::default().max_input_bytes;
    if script.len() > max {
        return Err(format!(
            "the script is {} bytes, over the {max} a script may have (limit :max_input_bytes)",
            script.len()
        ));
    }
    analyst()?
        .send((script.as_slice().to_vec(), Recipient::new(pid, tag)))
        .map_err(|_| "the analysis thread is gone".to_string())
}

type Request = (Vec<u8>, Recipient);

/// The analysis thread's inbox, started on first use.
fn analyst() -> Result<mpsc::Sender<Request>, String> {
    static ANALYST: OnceLock<Result<Mutex<mpsc::Sender<Request>>, String>> = OnceLock::new();
    let analyst = ANALYST.get_or_init(|| {
        let (inbox, requests) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("ex_bashkit-analysis".into())
            .stack_size(ANALYSIS_STACK_BYTES)
            .spawn(move || {
                for (script, recipient) in requests {
                    let found = std::panic::catch_unwind(|| analyze(&script))
                        .unwrap_or_else(|_| Err("internal error: the analysis panicked".into()));
                    recipient.send(|env| match found {
                        Ok(analysis) => (crate::atoms::ok(), analysis).encode(env),
                        Err(why) => (crate::atoms::error(), why).encode(env),
                    });
                }
            })
            .map(|_| Mutex::new(inbox))
            .map_err(|e| format!("cannot start the analysis thread: {e}"))
    });
    match analyst {
        Ok(inbox) => Ok(ex_bashkit_core::sync::lock(inbox).clone()),
        Err(why) => Err(why.clone()),
    }
}

/// One analysis, on the analysis thread. The parse is bounded (depth, fuel,
/// size): one caller cannot hold the thread every caller's analysis goes
/// through.
fn analyze(script: &[u8]) -> Result<Analysis, String> {
    let script = script_text(script)?;
    let limits = ExecutionLimits::default();
    ex_bashkit_core::nesting::check(&script, limits.max_ast_depth.saturating_mul(2))?;
    analysis::analyze_with_limits(&script, limits.max_ast_depth, limits.max_parser_operations)
        .map(|found| project(&found))
        .map_err(|e| ex_bashkit_core::error::message(&e))
}

fn project(found: &analysis::ScriptAnalysis) -> Analysis {
    Analysis {
        commands: found
            .commands
            .iter()
            .map(|command| Command {
                name: command.name.clone(),
                args: command.args.clone(),
                context: command.context.as_str().to_string(),
                assignments: command.assignments.clone(),
            })
            .collect(),
        redirects: found
            .redirects
            .iter()
            .map(|redirect| Redirect {
                path: redirect.path.clone(),
                mode: redirect.mode.as_str().to_string(),
            })
            .collect(),
        functions: found.functions.clone(),
        wrappers: found
            .command_wrappers()
            .into_iter()
            .map(str::to_string)
            .collect(),
        dynamic_commands: found.has_dynamic_commands,
        substitutions: found.has_command_substitution,
        reentry: found.has_interpreter_reentry,
        truncated: found.truncated,
    }
}
