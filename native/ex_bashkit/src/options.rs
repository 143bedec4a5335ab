//! Session construction options, validated on the Elixir side
//! (`ExBashkit.Session.Options`) and applied to a `BashBuilder` here.

use bashkit::{Bash, BashBuilder, SessionLimits};
use rustler::NifMap;

/// The decoded `new/1` options. Every field has already been checked and
/// normalized in Elixir, so decoding failures here are programmer errors.
#[derive(NifMap, Default)]
pub struct SessionOptions {
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub username: Option<String>,
    pub hostname: Option<String>,
}

impl SessionOptions {
    /// A builder configured for a long-lived session.
    pub fn builder(&self) -> BashBuilder {
        // bashkit caps a single instance at 1,000 exec calls and 100,000
        // commands by default; a session lives for a whole agent conversation,
        // so per-script limits (ExecutionLimits) are the ones that bound work.
        let mut builder = Bash::builder().session_limits(SessionLimits::unlimited());
        for (key, value) in &self.env {
            builder = builder.env(key, value);
        }
        if let Some(cwd) = &self.cwd {
            builder = builder.cwd(cwd);
        }
        if let Some(username) = &self.username {
            builder = builder.username(username);
        }
        if let Some(hostname) = &self.hostname {
            builder = builder.hostname(hostname);
        }
        builder
    }
}
