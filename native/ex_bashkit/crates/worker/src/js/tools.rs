//! `tools.NAME.SUB(args)` in `node`: the session's builtins, called as
//! the command `NAME SUB` would be (`ExBashkit.Tool.Command`).

use std::collections::HashMap;
use std::sync::Arc;

use ex_bashkit_core::callback::{Channel, Reply, Request};
use ex_bashkit_core::policy::Gate;
use ex_bashkit_core::sync::block_on;

use super::host::failed;

/// What `tools.orders.list({...})` calls: builtin `orders` with the
/// arguments `list` and the object as JSON on stdin, asked through the
/// session's gate (its `:command_policy`) and its callbacks.
pub struct Tools {
    /// The session's `:builtins` (with its `:tools`' commands).
    pub names: Vec<String>,
    pub channel: Arc<Channel>,
    pub gate: Arc<Gate>,
}

impl Tools {
    /// One call, answered with the tool's stdout, or why it failed.
    pub fn call(
        &self,
        name: &str,
        args: &[String],
        stdin: &str,
        env: &HashMap<String, String>,
        cwd: &str,
    ) -> Result<String, (&'static str, String)> {
        if !self.names.iter().any(|known| known == name) {
            return failed("ENOENT", format!("there is no tool {name}"));
        }
        if let Err(why) = self.gate.admits(name, args) {
            return failed("EACCES", why);
        }
        let request = Request::Builtin {
            name,
            args,
            stdin: stdin.as_bytes(),
            env,
            cwd,
        };
        match block_on(self.channel.call(request)) {
            Ok(Reply::Output(stdout, _, 0)) => Ok(String::from_utf8_lossy(&stdout).into_owned()),
            Ok(Reply::Output(_, stderr, code)) => {
                let message = String::from_utf8_lossy(&stderr);
                let message = message.trim_end();
                if message.is_empty() {
                    failed("ETOOL", format!("{name} exited with status {code}"))
                } else {
                    failed("ETOOL", message.to_string())
                }
            }
            Ok(_) => failed("ETOOL", format!("{name}: invalid reply")),
            Err(why) => failed("ETOOL", format!("{name}: {why}")),
        }
    }
}
