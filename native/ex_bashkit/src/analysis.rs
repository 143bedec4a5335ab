//! What a script would run, found before it runs (bashkit's `analyze`),
//! for `ExBashkit.analyze/1` and the `:approve` option.
//!
//! bashkit's parser recurses, so the script is refused first when it nests
//! deeper than a session may (`nesting.rs`), then parsed on a thread of its
//! own with a large stack, as scripts are for `exec`.

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
    crate::nesting::check(&script, limits.max_ast_depth.saturating_mul(2))?;
    std::thread::Builder::new()
        .name("ex_bashkit-analysis".into())
        .stack_size(ANALYSIS_STACK_BYTES)
        .spawn(move || {
            analysis::analyze_with_limits(
                &script,
                limits.max_ast_depth,
                limits.max_parser_operations,
            )
            .map(|found| project(&found))
            .map_err(|e| crate::error::message(&e))
        })
        .map_err(|e| format!("cannot start the analysis: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("internal error: the analysis panicked".into()))
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
