//! Delivering the outcome of work done on the runtime to an Elixir process.

use rustler::env::SavedTerm;
use rustler::{Encoder, Env, LocalPid, OwnedEnv, Term};

/// Where and under which tag an asynchronous result is sent: the message is
/// `{tag, payload}`.
pub struct ReplyTo {
    pid: LocalPid,
    env: OwnedEnv,
    tag: SavedTerm,
}

impl ReplyTo {
    /// Captures `tag` (any term, usually a reference) for a later reply.
    pub fn new(pid: LocalPid, tag: Term<'_>) -> Self {
        let env = OwnedEnv::new();
        let tag = env.save(tag);
        Self { pid, env, tag }
    }

    /// Sends `{tag, payload}`. Must run on a non-BEAM thread (the runtime's).
    /// A dead recipient is not an error: nobody is waiting any more.
    pub fn send<F>(mut self, payload: F)
    where
        F: for<'a> FnOnce(Env<'a>) -> Term<'a>,
    {
        let tag = &self.tag;
        let _ = self
            .env
            .send_and_clear(&self.pid, |env| (tag.load(env), payload(env)).encode(env));
    }
}
