//! Calls from a running script back into Elixir, shared by custom builtins
//! (`builtins.rs`) and virtual-filesystem backends (`virtual_fs.rs`).
//!
//! Each `exec/2` on a session with callbacks starts a short-lived Elixir
//! server process (`ExBashkit.Callbacks`) and names it here for the length of
//! the script. A call sends `{:ex_bashkit_call, pending, request}` to that
//! server and awaits the answer, which arrives through the `callback_reply`
//! NIF. The interpreter thread holds no lock on Elixir while it waits: the
//! script is a parked task, and the thread keeps serving other sessions.

use std::sync::Mutex;

use bashkit::FileType;
use rustler::{Atom, Binary, Encoder, Env, LocalPid, OwnedEnv, Resource, ResourceArc, Term};
use tokio::sync::oneshot;

use crate::runtime;
use crate::sync::lock;

mod atoms {
    rustler::atoms! {
        ex_bashkit_call,
        output,
        data,
        entries,
        stat,
        ok,
        error,
        file,
        dir,
        symlink,
    }
}

/// A decoded answer from Elixir. `ExBashkit.Callbacks` has already checked
/// and normalized it; decoding here still rejects anything out of shape.
pub enum Reply {
    /// A builtin's result.
    Output {
        stdout: Vec<u8>,
        stderr: Vec<u8>,
        exit_code: i32,
    },
    /// A filesystem operation that returns nothing.
    Done,
    Data(Vec<u8>),
    Entries(Vec<(String, FileType, u64)>),
    Stat(FileType, u64),
    /// A filesystem error: a POSIX-style atom (`:enoent`) or a message.
    Failed(Failure),
}

pub enum Failure {
    Code(String),
    Message(String),
}

/// The sessions's link to the Elixir process serving its callbacks.
#[derive(Default)]
pub struct Channel {
    server: Mutex<Option<LocalPid>>,
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
    pub fn serve(&self, server: Option<LocalPid>) -> Serving<'_> {
        *lock(&self.server) = server;
        Serving(self)
    }

    /// Sends a request built by `request` and waits for the answer.
    pub async fn call<F>(&self, request: F) -> Result<Reply, String>
    where
        F: for<'a> FnOnce(Env<'a>) -> Term<'a>,
    {
        // The file API runs on a dirty scheduler and can reach a virtual
        // mount through a symlink: from there a call would block the
        // scheduler on Elixir, and sending from a BEAM thread panics.
        if !runtime::on_interpreter_thread() {
            return Err("builtins and virtual_fs backends serve scripts only".into());
        }
        let server = (*lock(&self.server))
            .ok_or("callbacks are only served while a script of this session runs")?;
        let (sender, answer) = oneshot::channel();
        let pending = ResourceArc::new(PendingCall {
            reply: Mutex::new(Some(sender)),
        });
        let sent = OwnedEnv::new().send_and_clear(&server, |env| {
            (atoms::ex_bashkit_call(), pending, request(env)).encode(env)
        });
        if sent.is_err() {
            return Err("the callback server is gone".into());
        }
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
    let reply = decode(reply)
        .unwrap_or_else(|| Reply::Failed(Failure::Message("invalid reply from Elixir".into())));
    sender.send(reply).is_ok()
}

fn decode(term: Term) -> Option<Reply> {
    if let Ok(atom) = term.decode::<Atom>() {
        return (atom == atoms::ok()).then_some(Reply::Done);
    }
    let items = rustler::types::tuple::get_tuple(term).ok()?;
    let tag: Atom = items.first()?.decode().ok()?;
    match items.as_slice() {
        [_, stdout, stderr, code] if tag == atoms::output() => Some(Reply::Output {
            stdout: bytes(*stdout)?,
            stderr: bytes(*stderr)?,
            exit_code: code.decode().ok()?,
        }),
        [_, data] if tag == atoms::data() => Some(Reply::Data(bytes(*data)?)),
        [_, list] if tag == atoms::entries() => {
            let entries: Vec<(String, Atom, u64)> = list.decode().ok()?;
            let entries = entries
                .into_iter()
                .map(|(name, kind, size)| Some((name, file_type(kind)?, size)))
                .collect::<Option<_>>()?;
            Some(Reply::Entries(entries))
        }
        [_, kind, size] if tag == atoms::stat() => Some(Reply::Stat(
            file_type(kind.decode().ok()?)?,
            size.decode().ok()?,
        )),
        [_, reason] if tag == atoms::error() => {
            Some(Reply::Failed(match reason.atom_to_string() {
                Ok(code) => Failure::Code(code),
                Err(_) => Failure::Message(reason.decode::<String>().ok()?),
            }))
        }
        _ => None,
    }
}

fn bytes(term: Term) -> Option<Vec<u8>> {
    term.decode::<Binary>().ok().map(|b| b.as_slice().to_vec())
}

fn file_type(kind: Atom) -> Option<FileType> {
    if kind == atoms::file() {
        Some(FileType::File)
    } else if kind == atoms::dir() {
        Some(FileType::Directory)
    } else if kind == atoms::symlink() {
        Some(FileType::Symlink)
    } else {
        None
    }
}
