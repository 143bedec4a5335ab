//! Callbacks in the VM: a script's builtin and virtual_fs calls sent to
//! the Elixir process serving them (`ExBashkit.Callbacks`).
//!
//! Each `exec/2` on a session with callbacks starts a short-lived server
//! process and names it here for the length of the script. A call sends
//! `{:ex_bashkit_call, pending, target, request}` to that server and awaits
//! the answer, which arrives through the `callback_reply` NIF.
//!
//! A script polled on its caller's thread (`ex_bashkit_core::inline`)
//! sends nothing (a scheduler thread cannot): its calls are kept here
//! ([`parked_calls`]) and handed to the caller with the poll's answer, and
//! the reply tells the caller (`{:ex_bashkit_resumable, pending}`) that the
//! script can be polled on, which the caller does itself: no thread of
//! ours wakes for the call.

use std::cell::RefCell;
use std::sync::Mutex;

use ex_bashkit_core::callback::{Failure, Remote, Reply, Request};
use ex_bashkit_core::inline;
use ex_bashkit_core::sync::lock;
use rustler::env::SavedTerm;
use rustler::{Encoder, Env, LocalPid, OwnedEnv, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::terms::protocol;

mod atoms {
    rustler::atoms! { ex_bashkit_call, ex_bashkit_resumable }
}

thread_local! {
    /// The calls of the script polled on this thread now, not sent.
    static PARKED: RefCell<Vec<ParkedCall>> = const { RefCell::new(Vec::new()) };
}

/// A call made in a poll on its caller's thread: its message, kept.
pub struct ParkedCall {
    env: OwnedEnv,
    message: SavedTerm,
}

impl ParkedCall {
    /// The message, copied into `env` (the caller's).
    pub fn load<'a>(self, env: Env<'a>) -> Term<'a> {
        let mut kept = self.env;
        let term = kept.run(|own| self.message.load(own).in_env(env));
        kept.clear();
        crate::envs::keep(kept);
        term
    }
}

/// The calls the poll that just ran on this thread made, taken.
pub fn parked_calls() -> Vec<ParkedCall> {
    PARKED.with(|parked| std::mem::take(&mut *parked.borrow_mut()))
}

/// The process serving the running script's callbacks, if one runs.
#[derive(Default)]
pub struct Callbacks {
    server: Mutex<Option<LocalPid>>,
    /// The script's caller, which served its first call: it polls on a
    /// script polled on its thread.
    caller: Mutex<Option<LocalPid>>,
}

/// Names the server for the current script; clears it when dropped, so a
/// cancelled script leaves no stale target behind. The script's caller is
/// `server` until it starts a server of its own (`redirect`).
pub struct Serving<'a>(&'a Callbacks);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        *lock(&self.0.server) = None;
        *lock(&self.0.caller) = None;
    }
}

impl Callbacks {
    pub fn serve(&self, server: Option<LocalPid>) -> Serving<'_> {
        *lock(&self.server) = server;
        *lock(&self.caller) = server;
        Serving(self)
    }

    /// Points the running script's later calls at `server`, if they still
    /// go to `from`: a script that ended meanwhile (and one of the session's
    /// next scripts, served by another caller) is left alone.
    pub fn redirect(&self, from: LocalPid, server: LocalPid) {
        let mut current = lock(&self.server);
        if *current == Some(from) {
            *current = Some(server);
        }
    }

    /// Stops sending the script's calls to its caller `from` (or to the
    /// server it started): the caller has its answer, or gave up waiting,
    /// and a call sent later would sit in its mailbox. A script still
    /// running then gets an error for its calls.
    pub fn done(&self, from: LocalPid, server: Option<LocalPid>) {
        let mut current = lock(&self.server);
        if current.is_some() && (*current == Some(from) || *current == server) {
            *current = None;
        }
    }
}

impl Remote for Callbacks {
    /// Sends the call under the lock: once `done/2` has cleared the target,
    /// no call is still on its way to it. Polled on its caller's thread,
    /// the script keeps the call for its caller instead, and its reply
    /// tells the caller.
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String> {
        let (sender, answer) = oneshot::channel();
        let here = inline::polling_here();
        let target = lock(&self.server);
        let server =
            (*target).ok_or("callbacks are only served while a script of this session runs")?;
        let pending = ResourceArc::new(PendingCall {
            reply: Mutex::new(Some(sender)),
            resumes: here.then(|| *lock(&self.caller)).flatten(),
        });
        let message = |env| {
            // `{target, request}` (the protocol's) spread into the message.
            let call = protocol(env, request);
            let (target, request) = call.decode::<(Term, Term)>().unwrap_or((call, call));
            (atoms::ex_bashkit_call(), pending, target, request).encode(env)
        };
        if here {
            let env = crate::envs::take();
            let message = env.save(env.run(message));
            PARKED.with(|parked| parked.borrow_mut().push(ParkedCall { env, message }));
        } else {
            crate::envs::send(&server, message)
                .map_err(|_| "the callback server is gone".to_string())?;
        }
        Ok(answer)
    }
}

/// One call awaiting its answer, as a handle Elixir passes back.
pub struct PendingCall {
    reply: Mutex<Option<oneshot::Sender<Reply>>>,
    /// The caller that polls the script on once this is answered, for a
    /// call made in a poll on its thread.
    resumes: Option<LocalPid>,
}

#[rustler::resource_impl]
impl Resource for PendingCall {}

/// Answers a pending call. Only the first answer counts (a late one after a
/// timeout is dropped); returns whether this one was delivered. Anything
/// that is not a pending call is answered `false`, so a forged request that
/// reached the callback server cannot crash the process answering it.
#[rustler::nif]
fn callback_reply<'a>(env: Env<'a>, call: Term<'a>, reply: Term<'a>) -> bool {
    let Ok(pending) = call.decode::<ResourceArc<PendingCall>>() else {
        return false;
    };
    let Some(sender) = lock(&pending.reply).take() else {
        return false;
    };
    let reply = crate::term_reader::from_term(reply)
        .unwrap_or_else(|_| Reply::Error(Failure::Message("invalid reply from Elixir".into())));
    let delivered = sender.send(reply).is_ok();
    if let (true, Some(caller)) = (delivered, pending.resumes) {
        // A dead caller is not an error: its script was sent on.
        let _ = env.send(&caller, (atoms::ex_bashkit_resumable(), call));
    }
    delivered
}
