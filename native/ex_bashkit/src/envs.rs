//! Environments for messages our threads send to Elixir, kept for reuse:
//! a send clears its environment, and the next send takes it instead of
//! making one. Making one per job's answer and freeing it after was a few
//! tenths of a microsecond of a trivial `exec`; a callback call and an
//! output chunk make the same round. (The panic hook makes its own: it
//! must not wait on a lock.)

use std::sync::Mutex;

use ex_bashkit_core::sync::lock;
use rustler::env::SendError;
use rustler::{Encoder, Env, LocalPid, OwnedEnv};

/// Cleared environments, waiting for the next message.
static SPARE: Mutex<Vec<OwnedEnv>> = Mutex::new(Vec::new());

/// As many as messages built at once would use; more are freed.
const MAX_SPARE: usize = 64;

/// A cleared environment: a kept one, or a new one.
pub fn take() -> OwnedEnv {
    let spare = lock(&SPARE).pop();
    spare.unwrap_or_default()
}

/// Keeps `env`, cleared by its send, for a later message.
pub fn keep(env: OwnedEnv) {
    let mut spare = lock(&SPARE);
    if spare.len() < MAX_SPARE {
        spare.push(env);
    }
}

/// Sends the message `build` makes to `pid` (from one of our threads, as
/// `OwnedEnv::send_and_clear` requires).
pub fn send<'a, F, T>(pid: &LocalPid, build: F) -> Result<(), SendError>
where
    F: FnOnce(Env<'a>) -> T,
    T: Encoder,
{
    let mut env = take();
    let sent = env.send_and_clear(pid, build);
    keep(env);
    sent
}
