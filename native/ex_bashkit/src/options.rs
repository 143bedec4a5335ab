//! Session construction options, validated on the Elixir side
//! (`ExBashkit.Session.Options`) and applied to a `BashBuilder` here.

use std::path::Path;

use bashkit::{Bash, BashBuilder, SessionLimits};
use rustler::NifMap;

/// The decoded `new/1` options. Every field has already been checked and
/// normalized in Elixir, so decoding failures here are programmer errors.
#[derive(NifMap)]
pub struct SessionOptions {
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub username: String,
    pub hostname: String,
}

impl SessionOptions {
    /// Builds the interpreter, with its working directory in place. Async
    /// because the filesystem is; it never actually waits for anything.
    pub async fn build(&self) -> Result<Bash, String> {
        let bash = self.builder().build();
        bash.fs()
            .mkdir(Path::new(&self.cwd), true)
            .await
            .map_err(|e| format!("cannot create cwd {:?}: {e}", self.cwd))?;
        Ok(bash)
    }

    fn builder(&self) -> BashBuilder {
        // bashkit caps a single instance at 1,000 exec calls and 100,000
        // commands by default; a session lives for a whole agent conversation,
        // so per-script limits (ExecutionLimits) are the ones that bound work.
        let mut builder = Bash::builder().session_limits(SessionLimits::unlimited());
        for (key, value) in &self.env {
            builder = builder.env(key, value);
        }
        builder
            .cwd(&self.cwd)
            .username(&self.username)
            .hostname(&self.hostname)
    }
}
