//! Live output to Elixir: a listener gets `{:ex_bashkit, tag, {:stdout |
//! :stderr, chunk}}`, in the order the script wrote them (the core's
//! `streaming.rs` caps and keeps them).

use ex_bashkit_core::streaming::Listen;
use rustler::env::SavedTerm;
use rustler::{Encoder, LocalPid, OwnedEnv, Term};

mod atoms {
    rustler::atoms! { ex_bashkit, stdout, stderr }
}

/// A process in this VM, sent `{:ex_bashkit, tag, {stream, chunk}}`.
pub struct Listener {
    pid: LocalPid,
    /// Holds `tag`; never cleared, so the tag can be copied into each message.
    tag_env: OwnedEnv,
    tag: SavedTerm,
}

impl Listener {
    pub fn new(pid: LocalPid, tag: Term<'_>) -> Self {
        let tag_env = OwnedEnv::new();
        let tag = tag_env.save(tag);
        Listener { pid, tag_env, tag }
    }
}

impl Listen for Listener {
    fn send(&self, stdout: bool, chunk: &[u8]) {
        let stream = match stdout {
            true => atoms::stdout(),
            false => atoms::stderr(),
        };
        // A listener that is gone is not an error: the script goes on.
        let _ = crate::envs::send(&self.pid, |env| {
            let tag = self
                .tag_env
                .run(|tag_env| self.tag.load(tag_env).in_env(env));
            let data = crate::terms::bytes(env, chunk);
            (atoms::ex_bashkit(), tag, (stream, data)).encode(env)
        });
    }
}
