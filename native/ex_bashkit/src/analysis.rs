//! What a script would run, found before it runs (bashkit's `analyze`),
//! for `ExBashkit.analyze/1` and the `:approve` option.
//!
//! bashkit's parser recurses, so the script is refused first when it nests
//! deeper than a session may (`nesting.rs`), then parsed on a thread with a
//! large stack, as scripts are for `exec`: one long-lived analysis thread
//! (starting a thread with such a stack per call cost more than the parse).
//! Calls wait on a dirty scheduler while it works.

use std::sync::{mpsc, Mutex, OnceLock};

use bashkit::{analysis, ExecutionLimits};
use rustler::{Binary, NifMap};

use crate::exec::script_text;

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

/// `{:ok, analysis}`, or `{:error, why}` for a script that does not parse
/// (which is not a script that runs nothing).
#[rustler::nif(schedule = "DirtyCpu")]
fn script_analysis(script: Binary) -> Result<Analysis, String> {
    let script = script_text(script.as_slice())?;
    let limits = ExecutionLimits::default();
    // The parse is bounded (depth, fuel, size): one caller cannot hold the
    // thread that every caller's analysis goes through.
    if script.len() > limits.max_input_bytes {
        return Err(format!(
            "the script is {} bytes, over the {} a script may have (limit :max_input_bytes)",
            script.len(),
            limits.max_input_bytes
        ));
    }
    crate::nesting::check(&script, limits.max_ast_depth.saturating_mul(2))?;
    let (reply, answer) = mpsc::channel();
    analyst()?
        .send((script, reply))
        .map_err(|_| "the analysis thread is gone".to_string())?;
    answer
        .recv()
        .unwrap_or_else(|_| Err("internal error: the analysis panicked".into()))
}

type Request = (String, mpsc::Sender<Result<Analysis, String>>);

/// The analysis thread's inbox, started on first use.
fn analyst() -> Result<mpsc::Sender<Request>, String> {
    static ANALYST: OnceLock<Result<Mutex<mpsc::Sender<Request>>, String>> = OnceLock::new();
    let analyst = ANALYST.get_or_init(|| {
        let (inbox, requests) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("ex_bashkit-analysis".into())
            .stack_size(ANALYSIS_STACK_BYTES)
            .spawn(move || {
                let limits = ExecutionLimits::default();
                for (script, reply) in requests {
                    let found = std::panic::catch_unwind(|| {
                        analysis::analyze_with_limits(
                            &script,
                            limits.max_ast_depth,
                            limits.max_parser_operations,
                        )
                        .map(|found| project(&found))
                        .map_err(|e| crate::error::message(&e))
                    })
                    .unwrap_or_else(|_| Err("internal error: the analysis panicked".into()));
                    let _ = reply.send(found);
                }
            })
            .map(|_| Mutex::new(inbox))
            .map_err(|e| format!("cannot start the analysis thread: {e}"))
    });
    match analyst {
        Ok(inbox) => Ok(crate::sync::lock(inbox).clone()),
        Err(why) => Err(why.clone()),
    }
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
