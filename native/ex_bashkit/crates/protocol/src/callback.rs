//! Calls from a running script back into Elixir (a builtin, a virtual_fs
//! backend, a command policy function) and their answers. The message is
//! `{:ex_bashkit_call, pending, target, request}`: `target` says who serves
//! it (`{:builtin, name}`, `{:fs, mount}`, `{:policy, "command"}`) and
//! `request` is the very map handed to the user's function.

use std::collections::HashMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_bytes::{ByteBuf, Bytes};

/// The kind of a filesystem entry: `:file`, `:dir`, `:symlink`, `:fifo`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Fifo,
}

impl FileKind {
    /// The kind's name, as its atom reads (`stat`'s `isDirectory()` and
    /// the like in the JavaScript engine).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Dir => "dir",
            FileKind::Symlink => "symlink",
            FileKind::Fifo => "fifo",
        }
    }
}

/// A call as the user's code receives it.
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
    /// session's `:command_policy` function.
    Policy { name: &'r str, args: &'r [String] },
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

impl Request<'_> {
    /// About how many bytes the request carries: its data, arguments and
    /// environment.
    pub fn bytes(&self) -> usize {
        let strings = |args: &[String]| args.iter().map(String::len).sum::<usize>();
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
                    + strings(args)
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
            Request::Policy { name, args } => name.len() + strings(args),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Target<'r> {
    Builtin(&'r str),
    Fs(&'r str),
    Policy(&'r str),
}

#[derive(Serialize)]
struct BuiltinCall<'r> {
    args: &'r [String],
    stdin: &'r Bytes,
    env: &'r HashMap<String, String>,
    cwd: &'r str,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
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

#[derive(Serialize)]
struct FsCall<'r> {
    op: OpName,
    path: &'r str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'r Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recursive: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<&'r str>,
}

#[derive(Serialize)]
struct PolicyCall<'r> {
    name: &'r str,
    args: &'r [String],
}

/// `{target, request}`.
impl Serialize for Request<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Request::Builtin {
                name,
                args,
                stdin,
                env,
                cwd,
            } => {
                let call = BuiltinCall {
                    args,
                    stdin: Bytes::new(stdin),
                    env,
                    cwd,
                };
                (Target::Builtin(name), call).serialize(serializer)
            }
            Request::Fs {
                mount,
                ref op,
                path,
            } => {
                let mut call = FsCall {
                    op: OpName::Read,
                    path,
                    data: None,
                    recursive: None,
                    to: None,
                };
                call.op = match *op {
                    FsOp::Read => OpName::Read,
                    FsOp::List => OpName::List,
                    FsOp::Stat => OpName::Stat,
                    FsOp::Write(data) => {
                        call.data = Some(Bytes::new(data));
                        OpName::Write
                    }
                    FsOp::Append(data) => {
                        call.data = Some(Bytes::new(data));
                        OpName::Append
                    }
                    FsOp::Mkdir { recursive } => {
                        call.recursive = Some(recursive);
                        OpName::Mkdir
                    }
                    FsOp::Remove { recursive } => {
                        call.recursive = Some(recursive);
                        OpName::Remove
                    }
                    FsOp::Rename { to } => {
                        call.to = Some(to);
                        OpName::Rename
                    }
                };
                (Target::Fs(mount), call).serialize(serializer)
            }
            Request::Policy { name, args } => {
                (Target::Policy("command"), PolicyCall { name, args }).serialize(serializer)
            }
        }
    }
}

/// An answer from Elixir, already checked and normalized by
/// `ExBashkit.Callbacks`; anything else does not read, and is an invalid
/// reply where it is read.
#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// `:ok`: a filesystem operation that returns nothing, a command the
    /// policy lets run.
    #[serde(rename = "Ok")]
    Ok,
    /// `{:output, stdout, stderr, exit_code}`: a builtin's result.
    Output(ByteBuf, ByteBuf, i32),
    /// `{:data, binary}`: a file's contents.
    Data(ByteBuf),
    /// `{:entries, [{name, kind, size}]}`: a directory listing.
    Entries(Vec<(String, FileKind, u64)>),
    /// `{:stat, kind, size}`.
    Stat(FileKind, u64),
    /// `{:error, reason}`: a POSIX-style atom (`:enoent`) or a message.
    #[serde(rename = "Err")]
    Error(Failure),
}

/// Why a call failed.
#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Failure {
    /// A POSIX-style code, `:enoent`.
    Code(Errno),
    Message(String),
}

impl Failure {
    /// The failure as text: the message, or the code's name (`enoent`).
    pub fn text(&self) -> String {
        match self {
            Failure::Code(code) => format!("{code:?}").to_ascii_lowercase(),
            Failure::Message(message) => message.clone(),
        }
    }
}

/// The POSIX-style reasons a virtual_fs backend may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Errno {
    Enoent,
    Eacces,
    Eperm,
    Eexist,
    Enotdir,
    Eisdir,
    Enotempty,
    Enotsup,
    Eopnotsupp,
    Etimedout,
    Erofs,
    Enospc,
    Einval,
}
