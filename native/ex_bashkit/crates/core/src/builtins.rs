//! The `:builtins` option: commands whose output an Elixir function computes.

use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

use crate::callback::{Channel, Reply, Request};

pub struct ElixirBuiltin {
    name: String,
    channel: Arc<Channel>,
}

impl ElixirBuiltin {
    pub fn new(name: String, channel: Arc<Channel>) -> Self {
        Self { name, channel }
    }
}

#[async_trait]
impl Builtin for ElixirBuiltin {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let cwd = ctx.cwd.to_string_lossy();
        let request = Request::Builtin {
            name: &self.name,
            args: ctx.args,
            stdin: ctx.stdin.map(|data| data.as_bytes()).unwrap_or_default(),
            env: ctx.env,
            cwd: &cwd,
        };
        Ok(match self.channel.call(request).await {
            Ok(Reply::Output(stdout, stderr, exit_code)) => {
                let mut result = ExecResult::with_code(stdout.into_vec(), exit_code);
                result.stderr = stderr.into_vec().into();
                result
            }
            Ok(_) => ExecResult::err(format!("{}: invalid reply from Elixir\n", self.name), 1),
            Err(why) => ExecResult::err(format!("{}: {why}\n", self.name), 1),
        })
    }
}
