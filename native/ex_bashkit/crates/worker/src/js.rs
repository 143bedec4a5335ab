//! `node` in a worker process (`javascript: true`): real ECMAScript on
//! QuickJS-ng (the `rquickjs` crate), run only here, where a crash or a
//! runaway of the engine costs its session's process and nothing else.
//!
//! `node FILE [ARGS]`, `node -e CODE`, `node -p EXPR`, and a script on
//! stdin. The globals Node programs use most (`console`, `process`,
//! `require("fs")`, `require("path")`, CommonJS files of the session) come
//! from `js/prelude.js` over a few host functions (`js/bridge.rs`), which
//! reach the session's own filesystem, the one bash and Python see. Each
//! run has a fresh engine (`js/run.rs`): the memory cap, the session's
//! deadline and a stack cap bound it.
//!
//! The parts: the command line (`invocation.rs`), what host functions
//! share and do (`host.rs`), hashes (`crypto.rs`),
//! the engine's memory (`memory.rs`), what a script threw (`thrown.rs`),
//! what the code runner refuses (`scan.rs`), ES modules (`modules.rs`).

use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, FileSystem};

use crate::code::Slot;
use crate::deadline::Deadline;
use ex_bashkit_core::tool_bridge::ToolBridge;
use ex_bashkit_protocol::code::{CodeError, CodeOutcome};
use ex_bashkit_protocol::outcome::Reason;
pub use host::Command;
use host::Host;
use invocation::{Invocation, Source};
use run::{Evaluate, Run};

pub use run::warm_up;

/// The `node` command of one session.
pub struct Node {
    /// Where `node --execute` leaves its outcome for the code run.
    pub outcome: Arc<Slot>,
    /// `:max_javascript_memory_bytes`.
    pub max_memory: usize,
    /// `:max_stdout_bytes`, `:max_stderr_bytes`.
    pub max_output: (usize, usize),
    /// When the running script must stop (`deadline.rs`).
    pub deadline: Arc<Deadline>,
    /// The session's tools, as `tools.NAME.SUB(args)` calls them (the
    /// core's one bridge, Python's too).
    pub tools: Arc<ToolBridge>,
    /// Runs `child_process`'s commands in new shells of the session, on
    /// the filesystem given (the worker's `shells.rs`).
    pub shell: Arc<RunInShell>,
}

/// How `node` runs a command in a new shell of its session.
pub type RunInShell =
    dyn Fn(Arc<dyn FileSystem>, Command) -> Result<ExecResult, String> + Send + Sync;

#[async_trait]
impl Builtin for Node {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let stdin = ctx.stdin.map(|data| data.text_lossy().into_owned());
        let invocation = match Invocation::parse(ctx.args, stdin, ctx.cwd) {
            Ok(invocation) => invocation,
            Err(message) if message.is_empty() => return Ok(ExecResult::ok("v20.0.0\n")),
            Err(message) => return Ok(ExecResult::err(message, 9)),
        };
        let (code, filename) = match &invocation.source {
            Source::Code(code) => (code.clone(), "[eval]".to_string()),
            Source::File(path) => match ctx.fs.read_file(path).await {
                Ok(bytes) => (
                    String::from_utf8_lossy(&bytes).into_owned(),
                    path.display().to_string(),
                ),
                Err(_) => {
                    let message = format!("node: cannot find module '{}'\n", path.display());
                    return Ok(ExecResult::err(message, 1));
                }
            },
        };
        // TypeScript runs as the JavaScript left when its types are blanked
        // (same lines, so errors point into the source).
        let code = if typescript::is_typescript(&filename) {
            match typescript::strip(&code) {
                Ok(code) => code,
                Err((message, line)) => {
                    return Ok(self.not_stripped(&invocation, &filename, message, line));
                }
            }
        } else {
            code
        };
        // The code runner's modes scan the code for what they refuse.
        let findings = invocation
            .execute
            .as_ref()
            .map(|execute| scan::scan(&code, execute.grants));
        if let (Some(findings), Some(_), false) = (&findings, &invocation.execute, invocation.check)
        {
            if !findings.is_empty() {
                self.outcome
                    .put(CodeOutcome::Error(refused(findings)), false);
                return Ok(ExecResult::with_code(String::new(), 1));
            }
        }
        // A file is an ES module by its extension or its package's
        // "type"; code with neither, by its syntax.
        let module = invocation.execute.is_none()
            && !invocation.print
            && match resolve::Packages::new(ctx.fs.clone(), Default::default()).format(&filename) {
                resolve::Format::Module => true,
                resolve::Format::CommonJs => false,
                _ => modules::is_module(&filename, &code),
            };
        // A function that is never called: parsed in full, run not at all
        // (a module is declared and not evaluated).
        let code = if invocation.check && !module {
            format!("(function () {{{code}\n}})")
        } else {
            code
        };
        let mut argv = vec!["/usr/bin/node".to_string()];
        if let Source::File(path) = &invocation.source {
            argv.push(path.display().to_string());
        }
        argv.extend(invocation.args.iter().cloned());
        let caps = [self.max_output.0, self.max_output.1];
        let mut host = Host::new(ctx.fs.clone(), ctx.cwd.display().to_string(), caps);
        host.filename = filename.clone();
        host.env = ctx.env.clone();
        host.argv = argv;
        host.grants = invocation.execute.as_ref().map(|execute| execute.grants);
        #[cfg(feature = "network")]
        {
            host.http = ctx.http_client.cloned();
        }
        host.tools = Some(self.tools.clone());
        let (shell, fs) = (self.shell.clone(), ctx.fs.clone());
        host.shell = Some(Box::new(move |command| shell(fs.clone(), command)));
        // Piped in to a script that came from a file or the command line.
        if invocation.execute.is_none() && !invocation.from_stdin {
            host.stdin = ctx.stdin.map(|data| data.as_bytes().to_vec());
        }
        let run = Run {
            code: &code,
            filename: &filename,
            print: invocation.print && !invocation.check,
            max_memory: self.max_memory,
            deadline: self.deadline.at(),
            // Checked, the code is declared and never run.
            execute: invocation
                .execute
                .as_ref()
                .filter(|_| !invocation.check)
                .map(|execute| (execute, &*self.outcome)),
            module: module.then_some(if invocation.check {
                Evaluate::No
            } else {
                Evaluate::Yes
            }),
        };
        let mut result = run.go(host)?;
        if result.stdout_truncated || result.stderr_truncated {
            self.outcome.cut();
        }
        // `--check --allow=…`: the syntax (an error on stderr), and what a
        // run would refuse, on stdout.
        if let (true, Some(findings)) = (invocation.check, findings) {
            result.stdout = serde_json::to_string(&findings).unwrap_or_default().into();
        }
        Ok(result)
    }
}

impl Node {
    /// TypeScript that cannot run as JavaScript: a syntax error, to the
    /// code runner as its outcome, to `--check` as the engine says one,
    /// and to a person as the file's line and why.
    fn not_stripped(
        &self,
        invocation: &Invocation,
        filename: &str,
        message: String,
        line: u32,
    ) -> ExecResult {
        let message = message
            .strip_prefix("SyntaxError: ")
            .map_or(message.clone(), str::to_string);
        match (&invocation.execute, invocation.check) {
            (Some(_), false) => {
                let error = CodeError::exception("SyntaxError", message, Some(line));
                self.outcome.put(CodeOutcome::Error(error), false);
                ExecResult::with_code(String::new(), 1)
            }
            (_, true) => ExecResult::err(
                format!("Uncaught SyntaxError: {message}\n    at {filename}:{line}\n"),
                1,
            ),
            (None, false) => ExecResult::err(format!("{filename}:{line}\n{message}\n"), 1),
        }
    }
}

/// A run refused for what its code uses: `:denied`, each use with its line.
fn refused(findings: &[scan::Finding]) -> CodeError {
    let message = findings
        .iter()
        .map(|finding| format!("{} (line {})", finding.message, finding.line))
        .collect::<Vec<_>>()
        .join("; ");
    CodeError {
        kind: Reason::Denied,
        name: String::new(),
        message,
        line: findings.first().map(|finding| finding.line),
    }
}

mod bridge;
mod bytes;
mod commonjs;
mod compiled;
mod crypto;
mod host;
mod invocation;
mod memory;
mod modules;
mod resolve;
mod run;
mod scan;
mod thrown;
mod typescript;
mod zlib;

#[cfg(test)]
mod tests;
