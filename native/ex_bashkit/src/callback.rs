//! Callbacks in the VM: a script's builtin and virtual_fs calls sent to
//! the Elixir process serving them (`ExBashkit.Callbacks`).
//!
//! Each `exec/2` on a session with callbacks starts a short-lived server
//! process and names it here for the length of the script. A call sends
//! `{:ex_bashkit_call, pending, target, request}` to that server and awaits
//! the answer, which arrives through the `callback_reply` NIF.

use std::sync::Mutex;

use ex_bashkit_core::callback::{Failure, FsOp, Remote, Reply, Request};
use ex_bashkit_core::file_kind::FileKind;
use ex_bashkit_core::sync::lock;
use rustler::{
    Atom, Decoder, Encoder, Env, LocalPid, NifResult, NifTaggedEnum, NifUnitEnum, Resource,
    ResourceArc, Term,
};
use tokio::sync::oneshot;

use crate::convert::Nif;
use crate::terms::{bytes, Bytes};

mod atoms {
    rustler::atoms! { ex_bashkit_call, builtin, fs, policy, name, args, stdin, env, cwd, op, path, data, recursive, to }
}

#[derive(NifUnitEnum)]
enum OpName {
    Read,
    List,
    Stat,
    Write,
    Append,
    Mkdir,
    Remove,
    Rename,
}

/// `{:builtin, name}` or `{:fs, mount}`: who serves the call.
fn target_of<'a>(request: &Request<'_>, env: Env<'a>) -> Term<'a> {
    match request {
        Request::Builtin { name, .. } => (atoms::builtin(), *name).encode(env),
        Request::Fs { mount, .. } => (atoms::fs(), *mount).encode(env),
        Request::Policy { .. } => (atoms::policy(), "command").encode(env),
    }
}

/// The request map the builtin's function or the backend receives.
fn map<'a>(request: &Request<'_>, env: Env<'a>) -> Term<'a> {
    let (keys, values): (Vec<Term<'a>>, Vec<Term<'a>>) = match request {
        Request::Builtin {
            args,
            stdin,
            env: vars,
            cwd,
            ..
        } => {
            let (names, values): (Vec<Term>, Vec<Term>) = vars
                .iter()
                .map(|(name, value)| (name.encode(env), value.encode(env)))
                .unzip();
            // Names are unique (they come from a map), so this cannot fail.
            let vars = Term::map_from_term_arrays(env, &names, &values)
                .unwrap_or_else(|_| Term::map_new(env));
            let keys = [atoms::args(), atoms::stdin(), atoms::env(), atoms::cwd()];
            (
                keys.iter().map(|key| key.encode(env)).collect(),
                vec![
                    args.encode(env),
                    bytes(env, stdin).encode(env),
                    vars,
                    cwd.encode(env),
                ],
            )
        }
        Request::Policy { name, args } => (
            vec![atoms::name().encode(env), atoms::args().encode(env)],
            vec![name.encode(env), args.encode(env)],
        ),
        Request::Fs { op, path, .. } => {
            let (name, extra) = match op {
                FsOp::Read => (OpName::Read, None),
                FsOp::List => (OpName::List, None),
                FsOp::Stat => (OpName::Stat, None),
                FsOp::Write(data) => (
                    OpName::Write,
                    Some((atoms::data(), bytes(env, data).encode(env))),
                ),
                FsOp::Append(data) => (
                    OpName::Append,
                    Some((atoms::data(), bytes(env, data).encode(env))),
                ),
                FsOp::Mkdir { recursive } => (
                    OpName::Mkdir,
                    Some((atoms::recursive(), recursive.encode(env))),
                ),
                FsOp::Remove { recursive } => (
                    OpName::Remove,
                    Some((atoms::recursive(), recursive.encode(env))),
                ),
                FsOp::Rename { to } => (OpName::Rename, Some((atoms::to(), to.encode(env)))),
            };
            let mut keys = vec![atoms::op().encode(env), atoms::path().encode(env)];
            let mut values = vec![name.encode(env), path.encode(env)];
            if let Some((key, value)) = extra {
                keys.push(key.encode(env));
                values.push(value);
            }
            (keys, values)
        }
    };
    // The keys are distinct atoms.
    Term::map_from_term_arrays(env, &keys, &values).unwrap_or_else(|_| Term::map_new(env))
}

/// An answer as `ExBashkit.Callbacks` sends it, by shape.
#[derive(NifTaggedEnum)]
enum Answer {
    Ok,
    Output(Bytes, Bytes, i32),
    Data(Bytes),
    Entries(Vec<(String, Nif<FileKind>, u64)>),
    Stat(Nif<FileKind>, u64),
    Error(Why),
}

/// `{:error, reason}`'s reason: a POSIX-style atom or a message.
struct Why(Failure);

impl<'a> Decoder<'a> for Why {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        match term.atom_to_string() {
            Ok(code) => Ok(Why(Failure::Code(code))),
            Err(_) => Ok(Why(Failure::Message(term.decode()?))),
        }
    }
}

// The derive encodes too (nothing here does).
impl Encoder for Why {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        match &self.0 {
            Failure::Code(code) => Atom::from_str(env, code)
                .map(|atom| atom.encode(env))
                .unwrap_or_else(|_| code.encode(env)),
            Failure::Message(message) => message.encode(env),
        }
    }
}

impl From<Answer> for Reply {
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::Ok => Reply::Ok,
            Answer::Output(Bytes(stdout), Bytes(stderr), code) => {
                Reply::Output(stdout, stderr, code)
            }
            Answer::Data(Bytes(data)) => Reply::Data(data),
            Answer::Entries(entries) => Reply::Entries(
                entries
                    .into_iter()
                    .map(|(name, Nif(kind), size)| (name, kind, size))
                    .collect(),
            ),
            Answer::Stat(Nif(kind), size) => Reply::Stat(kind, size),
            Answer::Error(Why(failure)) => Reply::Error(failure),
        }
    }
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
            let call = (atoms::ex_bashkit_call(), pending, target_of(request, env));
            (call.0, call.1, call.2, map(request, env)).encode(env)
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
    let reply = reply
        .decode::<Answer>()
        .map(Reply::from)
        .unwrap_or_else(|_| Reply::Error(Failure::Message("invalid reply from Elixir".into())));
    sender.send(reply).is_ok()
}
