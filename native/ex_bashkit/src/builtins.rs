//! The `:builtins` option: commands whose output an Elixir function computes.

use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};
use rustler::{Encoder, Term};

use crate::callback::{Channel, Reply};
use crate::terms::bytes;

mod atoms {
    rustler::atoms! { builtin }
}

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
        let stdin = ctx.stdin.map(|data| data.as_bytes()).unwrap_or_default();
        let cwd = ctx.cwd.to_string_lossy();
        let env_vars: Vec<(&str, &str)> = ctx
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let request = self.channel.call(|env| {
            // Keys are unique, so building the map cannot fail.
            let env_map = Term::map_from_pairs(env, &env_vars).unwrap_or_else(|_| ().encode(env));
            (
                atoms::builtin(),
                self.name.as_str(),
                ctx.args,
                bytes(env, stdin),
                env_map,
                cwd.as_ref(),
            )
                .encode(env)
        });
        Ok(match request.await {
            Ok(Reply::Output {
                stdout,
                stderr,
                exit_code,
            }) => {
                let mut result = ExecResult::with_code(stdout, exit_code);
                result.stderr = stderr.into();
                result
            }
            Ok(_) => ExecResult::err(format!("{}: invalid reply from Elixir\n", self.name), 1),
            Err(why) => ExecResult::err(format!("{}: {why}\n", self.name), 1),
        })
    }
}
