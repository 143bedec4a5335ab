//! The one way from a language engine to the session's `:tools`:
//! `tools.orders.list({...})` in JavaScript (`node`, in a worker) and
//! `tools.orders.list(customer="acme")` in Python (Monty) both call the
//! builtin `orders` with the argument `list` and the object as JSON on
//! stdin, through the session's gate (its `:command_policy`) and its
//! callbacks, with the environment and directory the engine runs in, as
//! the command `orders list` would (`ExBashkit.Tool.Command`). Each engine
//! only turns its values into JSON and back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::callback::{Channel, Reply, Request};
use crate::policy::Gate;
use crate::sync::lock;

/// The session's tools, as engines call them.
pub struct ToolBridge {
    /// The session's `:builtins` (with its `:tools`' commands).
    names: Vec<String>,
    channel: Arc<Channel>,
    gate: Arc<Gate>,
}

/// Why a tool call failed, with Node's kind of error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// `ENOENT` (no such tool), `EACCES` (the policy denies it), `EINVAL`
    /// (no name), `ETOOL` (it failed).
    pub code: &'static str,
    pub message: String,
}

impl ToolBridge {
    pub fn new(names: Vec<String>, channel: Arc<Channel>, gate: Arc<Gate>) -> Self {
        Self {
            names,
            channel,
            gate,
        }
    }

    /// Calls the tool at `path` (`["orders", "list"]`: the builtin and its
    /// arguments) with `input` (JSON) on stdin, as a command run with
    /// `env` in `cwd` would be; answers the tool's stdout.
    pub async fn call(
        &self,
        path: &[String],
        input: &str,
        env: &HashMap<String, String>,
        cwd: &str,
    ) -> Result<Vec<u8>, ToolError> {
        let fail = |code, message: String| Err(ToolError { code, message });
        let Some((name, args)) = path.split_first() else {
            return fail("EINVAL", "a tool name is required".into());
        };
        if !self.names.iter().any(|known| known == name) {
            return fail("ENOENT", format!("there is no tool {name}"));
        }
        if let Err(why) = self.gate.admits(name, args) {
            return fail("EACCES", why);
        }
        let request = Request::Builtin {
            name,
            args,
            stdin: input.as_bytes(),
            env,
            cwd: if cwd.is_empty() { "/" } else { cwd },
        };
        match self.channel.call(request).await {
            Ok(Reply::Output(stdout, _, 0)) => Ok(stdout.into_vec()),
            Ok(Reply::Output(_, stderr, code)) => {
                let message = String::from_utf8_lossy(&stderr).trim_end().to_string();
                if message.is_empty() {
                    fail("ETOOL", format!("{name} exited with status {code}"))
                } else {
                    fail("ETOOL", message)
                }
            }
            Ok(_) => fail("ETOOL", format!("{name}: invalid reply")),
            Err(why) => fail("ETOOL", format!("{name}: {why}")),
        }
    }
}

/// Where the engine calling a tool runs: its environment and directory,
/// set by the command that started the engine.
#[derive(Default)]
pub struct Site(Mutex<(HashMap<String, String>, String)>);

impl Site {
    /// The engine now runs here.
    pub fn set(&self, env: &HashMap<String, String>, cwd: &std::path::Path) {
        *lock(&self.0) = (env.clone(), cwd.display().to_string());
    }

    /// Where the engine runs now.
    pub fn get(&self) -> (HashMap<String, String>, String) {
        lock(&self.0).clone()
    }
}
