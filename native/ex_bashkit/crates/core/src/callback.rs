//! Calls from a running script back into Elixir, shared by custom builtins
//! (`builtins.rs`) and virtual-filesystem backends (`virtual_fs.rs`).
//!
//! A call goes out through the session's [`Remote`]: in the VM, the NIF
//! sends it to the Elixir process serving the running script's callbacks;
//! in a worker process, the worker sends it to its host. The interpreter
//! thread holds no lock while it waits: the script is a parked task, and
//! the thread keeps serving other sessions.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::file_kind::FileKind;
use crate::runtime;

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
    /// `%{name: name, args: [..]}`: may this command run? For the
    /// session's `:command_policy` function (`policy.rs`).
    Policy { name: &'r str, args: &'r [String] },
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
            Request::Policy { name, args } => {
                name.len() + args.iter().map(String::len).sum::<usize>()
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

/// An answer from Elixir, decoded by shape: `ExBashkit.Callbacks` has already
/// checked and normalized it, and anything else is refused where it is
/// decoded.
pub enum Reply {
    /// `:ok`: a filesystem operation that returns nothing.
    Ok,
    /// `{:output, stdout, stderr, exit_code}`: a builtin's result.
    Output(Vec<u8>, Vec<u8>, i32),
    /// `{:data, binary}`: a file's contents.
    Data(Vec<u8>),
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

/// How a session's calls leave it; the answer arrives on the receiver.
pub trait Remote: Send + Sync {
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String>;
}

/// The session's link to whoever serves its callbacks.
pub struct Channel(Arc<dyn Remote>);

impl Channel {
    /// A channel whose calls go to `remote`.
    pub fn new(remote: Arc<dyn Remote>) -> Self {
        Self(remote)
    }

    /// Sends `request` and waits for the answer.
    pub async fn call(&self, request: Request<'_>) -> Result<Reply, String> {
        // The file API runs on a dirty scheduler and can reach a virtual
        // mount through a symlink: from there a call would block the
        // scheduler on Elixir, and sending from a BEAM thread panics.
        if !runtime::on_interpreter_thread() {
            return Err("builtins and virtual_fs backends serve scripts only".into());
        }
        let answer = self.0.send(&request)?;
        // The answer usually comes back within microseconds: stay awake.
        runtime::stay_awake();
        // The sender is dropped unanswered only if the caller dropped the call.
        answer
            .await
            .map_err(|_| "the callback was dropped without an answer".into())
    }
}
