//! Callbacks in the VM: a script's builtin and virtual_fs calls sent to
//! the Elixir process serving them (`ExBashkit.Callbacks`).
//!
//! Each `exec/2` on a session with callbacks starts a short-lived server
//! process and names it here for the length of the script. A call sends
//! `{:ex_bashkit_call, pending, target, request}` to that server and awaits
//! the answer, which arrives through the `callback_reply` NIF.

use std::sync::Mutex;

use ex_bashkit_core::callback::{Failure, Remote, Reply, Request};
use ex_bashkit_core::sync::lock;
use rustler::{Encoder, LocalPid, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::terms::protocol;

mod atoms {
    rustler::atoms! { ex_bashkit_call }
}

/// The process serving the running script's callbacks, if one runs.
#[derive(Default)]
pub struct Callbacks {
    server: Mutex<Option<LocalPid>>,
}

/// Names the server for the current script; clears it when dropped, so a
/// cancelled script leaves no stale target behind.
pub struct Serving<'a>(&'a Callbacks);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        *lock(&self.0.server) = None;
    }
}

impl Callbacks {
    pub fn serve(&self, server: Option<LocalPid>) -> Serving<'_> {
        *lock(&self.server) = server;
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
    /// no call is still on its way to it.
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String> {
        let (sender, answer) = oneshot::channel();
        let pending = ResourceArc::new(PendingCall {
            reply: Mutex::new(Some(sender)),
        });
        let target = lock(&self.server);
        let server =
            (*target).ok_or("callbacks are only served while a script of this session runs")?;
        crate::envs::send(&server, |env| {
            // `{target, request}` (the protocol's) spread into the message.
            let call = protocol(env, request);
            let (target, request) = call.decode::<(Term, Term)>().unwrap_or((call, call));
            (atoms::ex_bashkit_call(), pending, target, request).encode(env)
        })
        .map_err(|_| "the callback server is gone".to_string())?;
        Ok(answer)
    }
}

/// One call awaiting its answer, as a handle Elixir passes back.
pub struct PendingCall {
    reply: Mutex<Option<oneshot::Sender<Reply>>>,
}

#[rustler::resource_impl]
impl Resource for PendingCall {}

/// Answers a pending call. Only the first answer counts (a late one after a
/// timeout is dropped); returns whether this one was delivered. Anything
/// that is not a pending call is answered `false`, so a forged request that
/// reached the callback server cannot crash the process answering it.
#[rustler::nif]
fn callback_reply(call: Term, reply: Term) -> bool {
    let Ok(call) = call.decode::<ResourceArc<PendingCall>>() else {
        return false;
    };
    let Some(sender) = lock(&call.reply).take() else {
        return false;
    };
    let reply = crate::term_reader::from_term(reply)
        .unwrap_or_else(|_| Reply::Error(Failure::Message("invalid reply from Elixir".into())));
    sender.send(reply).is_ok()
}
