//! The commands only a worker gives its session (`node`, `sqlite3`), and
//! the shells `node`'s `child_process` starts mid-script: each one a
//! fresh interpreter with the session's commands, command policy and
//! limits, on the session's own files, bounded by what is left of the
//! script's deadline.

use std::sync::atomic::AtomicUsize;
#[cfg(feature = "javascript")]
use std::sync::atomic::Ordering;
use std::sync::Arc;
#[cfg(feature = "javascript")]
use std::time::{Duration, Instant};

#[cfg(feature = "javascript")]
use bashkit::{ExecOptions, ExecResult, FileSystem};
use ex_bashkit_core::callback::Channel;
#[cfg(any(feature = "javascript", feature = "sqlite"))]
use ex_bashkit_core::limits::LimitsExt;
#[cfg(feature = "javascript")]
use ex_bashkit_core::options::{Child, SessionPlan};
use ex_bashkit_core::options::{Egress, Extra, SessionOptions};
use ex_bashkit_core::policy::Gate;
#[cfg(feature = "javascript")]
use ex_bashkit_core::tool_bridge::ToolBridge;

use crate::code::Slot;
use crate::deadline::Deadline;
#[cfg(feature = "javascript")]
use crate::js::Command;

/// What a session's worker-only commands are made of, kept to make them
/// again for every shell a script starts.
#[cfg_attr(not(feature = "javascript"), allow(dead_code))]
pub struct Shells {
    pub options: SessionOptions,
    pub channel: Arc<Channel>,
    pub gate: Arc<Gate>,
    pub egress: Option<Egress>,
    pub deadline: Arc<Deadline>,
    /// Where `node --execute` leaves the code runner's outcome.
    pub code: Arc<Slot>,
    /// Shells running now, each started from the one before.
    pub depth: AtomicUsize,
}

impl Shells {
    /// `node` for `javascript: true` (its `tools` reach the session's
    /// builtins through its gate, its `child_process` these shells) and
    /// `sqlite3` for `sqlite: true`.
    pub fn commands(self: &Arc<Self>) -> Extra {
        #[cfg_attr(
            not(any(feature = "javascript", feature = "sqlite")),
            allow(unused_mut)
        )]
        let mut extra = Extra::none();
        let options = &self.options;
        #[cfg(feature = "javascript")]
        if options.javascript {
            let limits = options.limits.execution();
            let node = crate::js::Node {
                outcome: self.code.clone(),
                max_memory: options.limits.javascript_memory(),
                max_output: (limits.max_stdout_bytes, limits.max_stderr_bytes),
                deadline: self.deadline.clone(),
                tools: Arc::new(ToolBridge::new(
                    options.builtins.clone(),
                    self.channel.clone(),
                    self.gate.clone(),
                )),
                shell: {
                    let shells = self.clone();
                    Arc::new(move |fs, command| shells.run(fs, command))
                },
            };
            extra.builtins.push(("node".into(), Box::new(node)));
        }
        #[cfg(feature = "sqlite")]
        if options.sqlite {
            let max_db_bytes = options.limits.sqlite_bytes();
            for name in ["sqlite3", "sqlite"] {
                let sqlite = crate::sqlite::Sqlite3::new(max_db_bytes);
                extra.builtins.push((name.into(), Box::new(sqlite)));
            }
            extra.switches.push(crate::sqlite::OPT_IN);
        }
        let _ = options;
        extra
    }
}

#[cfg(feature = "javascript")]
impl Shells {
    /// Runs `command` in a new shell on `fs` and waits for it, at most
    /// until the script's deadline (the shell's own timeout) and at most
    /// [`MAX_DEPTH`] shells deep.
    pub fn run(
        self: &Arc<Self>,
        fs: Arc<dyn FileSystem>,
        command: Command,
    ) -> Result<ExecResult, String> {
        ex_bashkit_core::nesting::check(&command.script, self.options.limits.nesting_depth())
            .map_err(String::from)?;
        let timeout = self
            .deadline
            .at()
            .map(|(at, _)| at.saturating_duration_since(Instant::now()));
        if timeout.is_some_and(|left| left.is_zero()) {
            return Err("the script's deadline has passed".into());
        }
        let child = Child {
            fs,
            env: command.env,
            cwd: command.cwd,
            timeout,
        };
        let shells = self.clone();
        let shell = async move {
            let options = &shells.options;
            let mut bash = options
                .build_child(
                    child,
                    &shells.channel,
                    &options.credentials(),
                    shells.egress.clone(),
                    &shells.gate,
                    shells.commands(),
                )
                .await
                .map_err(String::from)?;
            let mut exec = ExecOptions::new();
            if let Some(stdin) = command.stdin {
                exec = exec.stdin(stdin);
            }
            bash.exec_with_options(&command.script, exec)
                .await
                .map_err(|e| ex_bashkit_core::error::message(&e))
        };
        // A thread of its own: the shell's `sleep` and timeouts need a
        // clock its own runtime drives (the caller's thread is held by the
        // waiting script), and a stack as deep as an interpreter's. What
        // it allocates is charged to the script that waits for it.
        let helped = ex_bashkit_core::memory::helpers();
        let (sender, answer) = std::sync::mpsc::channel();
        let _depth = Depth::enter(&self.depth)?;
        std::thread::Builder::new()
            .name("ex_bashkit_shell".into())
            .stack_size(SHELL_STACK_BYTES)
            .spawn(move || {
                if let Some(helped) = helped {
                    ex_bashkit_core::memory::help(helped);
                }
                ex_bashkit_core::memory::watch_stack();
                let ran = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start a shell: {e}"))
                    .and_then(|runtime| runtime.block_on(shell));
                let _ = sender.send(ran);
            })
            .map_err(|e| format!("cannot start a shell: {e}"))?;
        // The shell stops itself at the deadline (its timeout); a shell
        // frozen at its stack's end never answers, and is left behind.
        let patience = timeout.map_or(Duration::from_secs(3600), |left| left + GRACE);
        answer
            .recv_timeout(patience)
            .unwrap_or_else(|_| Err("the shell did not stop at the script's deadline".into()))
    }
}

/// How deep shells may start shells (`node` running `node` …).
#[cfg(feature = "javascript")]
const MAX_DEPTH: usize = 16;

/// A shell's stack: virtual memory until used, as an interpreter thread's.
#[cfg(feature = "javascript")]
const SHELL_STACK_BYTES: usize = 256 << 20;

/// How long past the deadline a shell has to answer.
#[cfg(feature = "javascript")]
const GRACE: Duration = Duration::from_secs(2);

/// One level of shells started from shells, left when dropped.
#[cfg(feature = "javascript")]
struct Depth<'a>(&'a AtomicUsize);

#[cfg(feature = "javascript")]
impl<'a> Depth<'a> {
    fn enter(depth: &'a AtomicUsize) -> Result<Self, String> {
        if depth.fetch_add(1, Ordering::AcqRel) >= MAX_DEPTH {
            depth.fetch_sub(1, Ordering::AcqRel);
            return Err(format!(
                "more than {MAX_DEPTH} shells started from one another (a command running itself?)"
            ));
        }
        Ok(Self(depth))
    }
}

#[cfg(feature = "javascript")]
impl Drop for Depth<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
