//! Calls from a running script back into Elixir, shared by custom builtins
//! (`builtins.rs`) and virtual-filesystem backends (`virtual_fs.rs`).
//!
//! Each `exec/2` on a session with callbacks starts a short-lived Elixir
//! server process (`ExBashkit.Callbacks`) and names it here for the length of
//! the script. A call sends `{:ex_bashkit_call, pending, request}` to that
//! server and awaits the answer, which arrives through the `callback_reply`
//! NIF. The interpreter thread holds no lock on Elixir while it waits: the
//! script is a parked task, and the thread keeps serving other sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustler::{
    Atom, Decoder, Encoder, Env, LocalPid, NifResult, NifTaggedEnum, NifUnitEnum, OwnedEnv,
    Resource, ResourceArc, Term,
};
use tokio::sync::oneshot;

use crate::file_kind::FileKind;
use crate::runtime;
use crate::sync::lock;
use crate::terms::{bytes, Bytes};

mod atoms {
    rustler::atoms! { ex_bashkit_call, builtin, fs, args, stdin, env, cwd, op, path, data, recursive, to }
}

/// A call as the user's code receives it. The message is
/// `{:ex_bashkit_call, pending, target, request}`: `target` says who serves
/// it (`{:builtin, name}` or `{:fs, mount}`) and `request` is the very map
/// handed to the builtin's function or the virtual_fs backend.
pub enum Request<'r> {
    /// `%{args: [..], stdin: binary, env: %{..}, cwd: path}` for builtin `name`.
    Builtin {
        name: &'r str,
        args: &'r [String],
        stdin: &'r [u8],
        env: &'r HashMap<String, String>,
        cwd: &'r str,
    },
    /// `%{op: op, path: path}`, plus `data:`, `recursive:` or `to:` as `op`
    /// needs, for the backend mounted at `mount`.
    Fs {
        mount: &'r str,
        op: FsOp<'r>,
        path: &'r str,
    },
}

impl Request<'_> {
    /// About how many bytes the request carries: its data, arguments and
    /// environment.
    pub fn bytes(&self) -> usize {
        match self {
            Request::Builtin {
                name,
                args,
                stdin,
                env,
                cwd,
            } => {
                name.len()
                    + stdin.len()
                    + cwd.len()
                    + args.iter().map(String::len).sum::<usize>()
                    + env.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
            }
            Request::Fs { mount, op, path } => {
                let data = match op {
                    FsOp::Write(data) | FsOp::Append(data) => data.len(),
                    FsOp::Rename { to } => to.len(),
                    _ => 0,
                };
                mount.len() + path.len() + data
            }
        }
    }
}

/// A virtual_fs operation and the value that goes with it.
pub enum FsOp<'r> {
    Read,
    List,
    Stat,
    Write(&'r [u8]),
    Append(&'r [u8]),
    Mkdir { recursive: bool },
    Remove { recursive: bool },
    Rename { to: &'r str },
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

impl Request<'_> {
    fn target<'a>(&self, env: Env<'a>) -> Term<'a> {
        match self {
            Request::Builtin { name, .. } => (atoms::builtin(), *name).encode(env),
            Request::Fs { mount, .. } => (atoms::fs(), *mount).encode(env),
        }
    }

    fn map<'a>(&self, env: Env<'a>) -> Term<'a> {
        let (keys, values): (Vec<Term<'a>>, Vec<Term<'a>>) = match self {
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
}

/// An answer from Elixir, decoded by shape: `ExBashkit.Callbacks` has already
/// checked and normalized it, and anything else is refused here.
#[derive(NifTaggedEnum)]
pub enum Reply {
    /// `:ok`: a filesystem operation that returns nothing.
    Ok,
    /// `{:output, stdout, stderr, exit_code}`: a builtin's result.
    Output(Bytes, Bytes, i32),
    /// `{:data, binary}`: a file's contents.
    Data(Bytes),
    /// `{:entries, [{name, kind, size}]}`: a directory listing.
    Entries(Vec<(String, FileKind, u64)>),
    /// `{:stat, kind, size}`.
    Stat(FileKind, u64),
    /// `{:error, reason}`: a POSIX-style atom (`:enoent`) or a message.
    Error(Failure),
}

/// Why a filesystem operation failed.
pub enum Failure {
    /// A POSIX-style code: `enoent`.
    Code(String),
    Message(String),
}

impl<'a> Decoder<'a> for Failure {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        match term.atom_to_string() {
            Ok(code) => Ok(Failure::Code(code)),
            Err(_) => Ok(Failure::Message(term.decode()?)),
        }
    }
}

impl Encoder for Failure {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        match self {
            Failure::Code(code) => Atom::from_str(env, code)
                .map(|atom| atom.encode(env))
                .unwrap_or_else(|_| code.encode(env)),
            Failure::Message(message) => message.encode(env),
        }
    }
}

/// The sessions's link to the Elixir process serving its callbacks.
#[derive(Default)]
pub struct Channel {
    server: Mutex<Option<LocalPid>>,
    /// A session in a worker process sends its calls to its host instead.
    remote: Option<Arc<dyn Remote>>,
}

/// How a worker process's session sends a call to its host
/// (`worker/calls.rs`); the answer arrives on the receiver.
pub trait Remote: Send + Sync {
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String>;
}

/// Names the server for the current script; clears it when dropped, so a
/// cancelled script leaves no stale target behind.
pub struct Serving<'a>(&'a Channel);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        *lock(&self.0.server) = None;
    }
}

impl Channel {
    /// A channel whose calls go to `remote`.
    pub fn remote(remote: Arc<dyn Remote>) -> Self {
        Self {
            server: Mutex::default(),
            remote: Some(remote),
        }
    }

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

    /// Sends the call under the lock: once `done/2` has cleared the target,
    /// no call is still on its way to it.
    fn send(&self, request: &Request<'_>, pending: ResourceArc<PendingCall>) -> Result<(), String> {
        let target = lock(&self.server);
        let server =
            (*target).ok_or("callbacks are only served while a script of this session runs")?;
        OwnedEnv::new()
            .send_and_clear(&server, |env| {
                let call = (atoms::ex_bashkit_call(), pending, request.target(env));
                (call.0, call.1, call.2, request.map(env)).encode(env)
            })
            .map_err(|_| "the callback server is gone".to_string())
    }

    /// Sends `request` to the server and waits for the answer.
    pub async fn call(&self, request: Request<'_>) -> Result<Reply, String> {
        // The file API runs on a dirty scheduler and can reach a virtual
        // mount through a symlink: from there a call would block the
        // scheduler on Elixir, and sending from a BEAM thread panics.
        if !runtime::on_interpreter_thread() {
            return Err("builtins and virtual_fs backends serve scripts only".into());
        }
        let answer = match &self.remote {
            Some(remote) => remote.send(&request)?,
            None => {
                let (sender, answer) = oneshot::channel();
                let pending = ResourceArc::new(PendingCall {
                    reply: Mutex::new(Some(sender)),
                });
                self.send(&request, pending)?;
                answer
            }
        };
        // The answer usually comes back within microseconds: stay awake.
        runtime::stay_awake();
        // The sender is dropped unanswered only if Elixir dropped the call.
        answer
            .await
            .map_err(|_| "the callback was dropped without an answer".into())
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
        .decode::<Reply>()
        .unwrap_or_else(|_| Reply::Error(Failure::Message("invalid reply from Elixir".into())));
    sender.send(reply).is_ok()
}
