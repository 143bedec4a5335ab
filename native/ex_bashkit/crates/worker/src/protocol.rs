//! The protocol between the VM and a worker, on the worker's side: every
//! frame the VM sends is decoded here into a [`Request`], and every frame
//! the worker sends is a typed [`Event`] encoded here. Its counterpart in
//! the VM is `ExBashkit.Worker.Protocol`, which treats every event as
//! possibly forged; the two tables below are the protocol.
//!
//! | request (VM → worker)                      | answered by                    |
//! |--------------------------------------------|--------------------------------|
//! | `{:prepare, options}`                      | nothing (a spare hardens ahead) |
//! | `{:new, options}`                          | `{:new, {:ok, report} \| :unfit \| {:error, msg}}` |
//! | `{:exec, id, script, call}`                | `{:started, id}`, `{:chunk, …}`, `{:call, …}`, `{:http, …}`, then `{:done, id, outcome, usable}` |
//! | `{:snapshot, id, exclude_fs, exclude_functions, key}` | as `:exec`          |
//! | `{:restore, id, snapshot, key}`            | as `:exec`                     |
//! | `{:abandon, id}`                           | nothing (the job stops at its next await) |
//! | `{:cancel, id}`                            | `{:cancelled, id, boolean}`    |
//! | `{:fs, id, op, args}`                      | `{:fs, id, result}`            |
//! | `{:reply, call_id, reply}`                 | nothing (a builtin's or backend's answer) |
//! | `{:http_body, request_id, chunk}`          | nothing (a part of a response body) |
//! | `{:http_reply, request_id, answer}`        | nothing (a response's end: `{:ok, {status, headers}}` or `{:error, msg}`) |

use std::time::Duration;

use bashkit::SnapshotOptions;
use eetf::Term;

use crate::codec::{
    self, atom, atom_name, binary, boolean, elements, integer, integer_of, items, list, optional,
    owned_binary, pairs, string, tuple, u64_of, DecodeError, Decoded, Fields,
};
use crate::frame::IntoTerm;
use ex_bashkit_core::callback::{Reply, Request as CallRequest};
use ex_bashkit_core::fs::Entry;
use ex_bashkit_core::hardening::Report;
use ex_bashkit_core::options::SessionOptions;
use ex_bashkit_core::policy::{CommandPolicy, Denial};
use ex_bashkit_core::script_error::ScriptError;

/// A frame from the VM.
pub enum Request {
    Prepare(SessionOptions),
    New(Decoded<SessionOptions>),
    Exec {
        id: u64,
        script: Vec<u8>,
        call: Option<ExecCall>,
    },
    Snapshot {
        id: u64,
        options: SnapshotOptions,
        key: Option<Vec<u8>>,
    },
    Restore {
        id: u64,
        snapshot: Vec<u8>,
        key: Option<Vec<u8>>,
    },
    Abandon(u64),
    Cancel(u64),
    Fs {
        id: u64,
        op: FileOp,
    },
    Reply {
        id: u64,
        reply: Reply,
    },
    HttpBody {
        id: u64,
        chunk: Vec<u8>,
    },
    HttpReply {
        id: u64,
        answer: HttpAnswer,
    },
    /// A job's frame with an id and fields that do not decode: the job is
    /// answered with the error.
    Malformed {
        id: u64,
        why: String,
    },
}

/// How the host answered an HTTP request: the response's status and
/// headers (its body came before, in `HttpBody` frames), or why not.
pub type HttpAnswer = Result<(u16, Vec<(String, String)>), String>;

/// A call's options (`ExBashkit.Session.ExecOptions`), less its listeners
/// and credentials, which stay in the VM.
#[derive(Default)]
pub struct ExecCall {
    pub timeout_ms: Option<u64>,
    pub stdin: Option<Vec<u8>>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub args: Option<Vec<String>>,
    /// Whether the VM wants the output as it is written.
    pub stream: bool,
    /// The call's own command policy, instead of the session's.
    pub command_policy: Option<CommandPolicy>,
}

impl ExecCall {
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}

/// One operation of the file API, with the NIF's arguments.
pub enum FileOp {
    ReadFile(String),
    WriteFile(String, Vec<u8>),
    ListDir(String),
    Mkdir(String, bool),
    Remove(String, bool),
    /// From, to, overwrite.
    Rename(String, String, bool),
    Stat(String),
    /// Path, mode, recursive.
    Chmod(String, u32, bool),
}

/// Decodes a frame; `None` for one that names nothing (a bug in the VM,
/// which its deadline for the request ends).
pub fn decode(term: Term) -> Option<Request> {
    let Term::Tuple(frame) = term else {
        return None;
    };
    let mut fields = frame.elements.into_iter();
    let kind = fields.next()?;
    let rest: Vec<Term> = fields.collect();
    let kind = atom_name(&kind)?.to_owned();
    let id = rest.first().and_then(|id| u64_of(id).ok());
    let answer_id = id;
    let decoded = match (kind.as_str(), rest) {
        ("prepare", rest) => {
            return one(rest)
                .and_then(|o| codec::session_options(&o).ok())
                .map(Request::Prepare)
        }
        ("new", rest) => return one(rest).map(|o| Request::New(codec::session_options(&o))),
        ("abandon", _) => return id.map(Request::Abandon),
        ("cancel", _) => return id.map(Request::Cancel),
        ("exec", rest) => exec(rest),
        ("snapshot", rest) => snapshot(rest),
        ("restore", rest) => restore(rest),
        ("fs", rest) => file_op(rest),
        ("reply", rest) => match <[Term; 2]>::try_from(rest) {
            Ok([_, reply]) => Ok(Request::Reply {
                id: answer_id?,
                reply: codec::reply(&reply),
            }),
            Err(_) => return None,
        },
        ("http_body", rest) => match <[Term; 2]>::try_from(rest) {
            Ok([_, chunk]) => {
                let id = answer_id?;
                take_bytes(chunk).map(|chunk| Request::HttpBody { id, chunk })
            }
            Err(_) => return None,
        },
        ("http_reply", rest) => match <[Term; 2]>::try_from(rest) {
            Ok([_, answer]) => {
                let id = answer_id?;
                http_answer(&answer).map(|answer| Request::HttpReply { id, answer })
            }
            Err(_) => return None,
        },
        _ => return None,
    };
    let id = id?;
    Some(decoded.unwrap_or_else(|why| Request::Malformed {
        id,
        why: why.into(),
    }))
}

fn one(rest: Vec<Term>) -> Option<Term> {
    <[Term; 1]>::try_from(rest).ok().map(|[term]| term)
}

/// A binary, moved out of its term (a snapshot, a file: megabytes).
fn take_bytes(term: Term) -> Decoded<Vec<u8>> {
    match term {
        Term::Binary(binary) => Ok(binary.bytes),
        other => Err(DecodeError::expected("a binary", &other)),
    }
}

fn exec(rest: Vec<Term>) -> Decoded<Request> {
    let [id, script, call] = <[Term; 3]>::try_from(rest).map_err(|_| "malformed :exec")?;
    Ok(Request::Exec {
        id: u64_of(&id)?,
        script: take_bytes(script)?,
        call: optional(&call, exec_call)?,
    })
}

fn exec_call(call: &Term) -> Decoded<ExecCall> {
    let fields = Fields::of(call)?;
    Ok(ExecCall {
        timeout_ms: optional(fields.get("timeout_ms")?, u64_of)?,
        stdin: optional(fields.get("stdin")?, codec::bytes)?,
        env: pairs(fields.get("env")?)?,
        cwd: optional(fields.get("cwd")?, string)?,
        args: optional(fields.get("args")?, |args| {
            items(args)?.into_iter().map(string).collect()
        })?,
        stream: codec::flag(fields.get("stream")?)?,
        command_policy: optional(fields.get("command_policy")?, codec::command_policy)?,
    })
}

fn snapshot(rest: Vec<Term>) -> Decoded<Request> {
    let [id, exclude_fs, exclude_functions, key] =
        <[Term; 4]>::try_from(rest).map_err(|_| "malformed :snapshot")?;
    Ok(Request::Snapshot {
        id: u64_of(&id)?,
        options: SnapshotOptions {
            exclude_filesystem: codec::flag(&exclude_fs)?,
            exclude_functions: codec::flag(&exclude_functions)?,
        },
        key: optional(&key, codec::bytes)?,
    })
}

fn restore(rest: Vec<Term>) -> Decoded<Request> {
    let [id, snapshot, key] = <[Term; 3]>::try_from(rest).map_err(|_| "malformed :restore")?;
    Ok(Request::Restore {
        id: u64_of(&id)?,
        snapshot: take_bytes(snapshot)?,
        key: optional(&key, codec::bytes)?,
    })
}

fn file_op(rest: Vec<Term>) -> Decoded<Request> {
    let [id, op, args] = <[Term; 3]>::try_from(rest).map_err(|_| "malformed :fs")?;
    let id = u64_of(&id)?;
    let Term::List(args) = args else {
        return Err("expected the operation's arguments".into());
    };
    let mut args = args.elements.into_iter();
    let mut text = || {
        args.next()
            .ok_or(DecodeError::from("missing argument"))
            .and_then(|t| string(&t))
    };
    let op = match atom_name(&op) {
        Some("read_file") => FileOp::ReadFile(text()?),
        Some("list_dir") => FileOp::ListDir(text()?),
        Some("stat") => FileOp::Stat(text()?),
        Some("rename") => {
            let (from, to) = (text()?, text()?);
            let overwrite = codec::flag(&args.next().ok_or("missing argument")?)?;
            FileOp::Rename(from, to, overwrite)
        }
        Some("chmod") => {
            let path = text()?;
            let mode = u64_of(&args.next().ok_or("missing argument")?)?;
            let mode = u32::try_from(mode).map_err(|_| "a mode out of range")?;
            let recursive = codec::flag(&args.next().ok_or("missing argument")?)?;
            FileOp::Chmod(path, mode, recursive)
        }
        Some(name @ ("mkdir" | "remove")) => {
            let path = text()?;
            let flag = args.next().ok_or("missing argument")?;
            let flag = codec::flag(&flag)?;
            if name == "mkdir" {
                FileOp::Mkdir(path, flag)
            } else {
                FileOp::Remove(path, flag)
            }
        }
        Some("write_file") => {
            let path = text()?;
            let content = args.next().ok_or("missing content")?;
            FileOp::WriteFile(path, take_bytes(content)?)
        }
        _ => return Err(DecodeError::unknown("file operation", op)),
    };
    Ok(Request::Fs { id, op })
}

fn http_answer(term: &Term) -> Decoded<HttpAnswer> {
    match elements(term)? {
        [tag, status_and_headers] if atom_name(tag) == Some("ok") => {
            match elements(status_and_headers)? {
                [status, headers] => {
                    let status = u16::try_from(integer_of(status)?).map_err(|e| e.to_string())?;
                    Ok(Ok((status, pairs(headers)?)))
                }
                _ => Err("expected {status, headers}".into()),
            }
        }
        [tag, message] if atom_name(tag) == Some("error") => Ok(Err(string(message)?)),
        _ => Err(DecodeError::unknown("http answer", term)),
    }
}

/// A frame to the VM.
pub enum Event<'a> {
    New(NewAnswer<'a>),
    Started(u64),
    Chunk {
        id: u64,
        stdout: bool,
        data: &'a [u8],
    },
    Call {
        id: u64,
        request: &'a CallRequest<'a>,
    },
    Done {
        id: u64,
        outcome: Outcome,
        usable: bool,
    },
    Fs {
        id: u64,
        answer: FsAnswer,
    },
    Cancelled {
        id: u64,
        cancelled: bool,
    },
    Http {
        id: u64,
        method: &'a str,
        url: &'a str,
        headers: &'a [(String, String)],
        body: Option<&'a [u8]>,
        timeout_ms: u64,
    },
}

/// How `{:new, options}` ended.
pub enum NewAnswer<'a> {
    Ready(&'a Report),
    /// Hardened ahead for other needs: the VM starts a plain worker.
    Unfit,
    Failed(String),
}

/// How a job ended.
pub enum Outcome {
    /// `{stdout, stderr, exit_code, truncated, denials}` of a script.
    Ran {
        stdout: Vec<u8>,
        stderr: Vec<u8>,
        exit_code: i32,
        truncated: bool,
        denials: Vec<Denial>,
    },
    Snapshot(Vec<u8>),
    Restored,
    /// A script that ended without a result.
    ScriptError(ScriptError),
    /// A job that could not run, or a snapshot or restore that failed.
    Failed(String),
}

/// What a file operation answers.
pub enum FsAnswer {
    Content(Vec<u8>),
    Done,
    Entries(Vec<(String, Entry)>),
    Stat(Entry),
    Failed(String),
}

impl IntoTerm for Event<'_> {
    /// The frame's term. Large binaries are moved into it, not copied.
    fn into_term(self) -> Term {
        match self {
            Event::New(answer) => {
                let answer = match answer {
                    NewAnswer::Ready(report) => codec::ok(codec::hardening(report)),
                    NewAnswer::Unfit => atom("unfit"),
                    NewAnswer::Failed(message) => codec::error(&message),
                };
                tuple(vec![atom("new"), answer])
            }
            Event::Started(id) => tuple(vec![atom("started"), id_term(id)]),
            Event::Chunk { id, stdout, data } => tuple(vec![
                atom("chunk"),
                id_term(id),
                atom(if stdout { "stdout" } else { "stderr" }),
                binary(data),
            ]),
            Event::Call { id, request } => {
                let (target, request) = codec::request(request);
                tuple(vec![atom("call"), id_term(id), target, request])
            }
            Event::Done {
                id,
                outcome,
                usable,
            } => tuple(vec![
                atom("done"),
                id_term(id),
                outcome_term(outcome),
                boolean(usable),
            ]),
            Event::Fs { id, answer } => tuple(vec![atom("fs"), id_term(id), fs_term(answer)]),
            Event::Cancelled { id, cancelled } => {
                tuple(vec![atom("cancelled"), id_term(id), boolean(cancelled)])
            }
            Event::Http {
                id,
                method,
                url,
                headers,
                body,
                timeout_ms,
            } => {
                let headers = headers
                    .iter()
                    .map(|(name, value)| {
                        tuple(vec![binary(name.as_bytes()), binary(value.as_bytes())])
                    })
                    .collect();
                let request = codec::fields(vec![
                    ("method", binary(method.as_bytes())),
                    ("url", binary(url.as_bytes())),
                    ("headers", list(headers)),
                    ("body", body.map_or_else(|| atom("nil"), binary)),
                    ("timeout_ms", id_term(timeout_ms.max(1))),
                ]);
                tuple(vec![atom("http"), id_term(id), request])
            }
        }
    }
}

fn id_term(id: u64) -> Term {
    integer(i64::try_from(id).unwrap_or(i64::MAX))
}

fn outcome_term(outcome: Outcome) -> Term {
    match outcome {
        Outcome::Ran {
            stdout,
            stderr,
            exit_code,
            truncated,
            denials,
        } => codec::ok(tuple(vec![
            owned_binary(stdout),
            owned_binary(stderr),
            integer(exit_code.into()),
            boolean(truncated),
            codec::denials(&denials),
        ])),
        Outcome::Snapshot(bytes) => codec::ok(owned_binary(bytes)),
        Outcome::Restored => codec::ok(atom("ok")),
        Outcome::ScriptError(error) => tuple(vec![atom("error"), codec::script_error(&error)]),
        Outcome::Failed(message) => codec::error(&message),
    }
}

/// `kind, size, mode, mtime`, as `stat` answers them.
fn entry_fields(entry: Entry) -> Vec<Term> {
    vec![
        codec::file_kind(entry.kind),
        integer(i64::try_from(entry.size).unwrap_or(i64::MAX)),
        integer(i64::from(entry.mode)),
        integer(entry.mtime),
    ]
}

fn fs_term(answer: FsAnswer) -> Term {
    match answer {
        FsAnswer::Content(bytes) => codec::ok(owned_binary(bytes)),
        FsAnswer::Done => atom("ok"),
        FsAnswer::Entries(entries) => codec::ok(list(
            entries
                .into_iter()
                .map(|(name, entry)| {
                    let mut fields = vec![binary(name.as_bytes())];
                    fields.extend(entry_fields(entry));
                    tuple(fields)
                })
                .collect(),
        )),
        FsAnswer::Stat(entry) => codec::ok(tuple(entry_fields(entry))),
        FsAnswer::Failed(message) => codec::error(&message),
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, Request};
    use crate::codec::{atom, integer, list, tuple};

    #[test]
    fn a_request_that_does_not_decode_is_answered_saying_why() {
        let exec = |script| tuple(vec![atom("exec"), integer(7), script, atom("nil")]);
        let why = |frame| match decode(frame) {
            Some(Request::Malformed { id: 7, why }) => why,
            _ => panic!("not answered as malformed"),
        };
        assert_eq!(why(exec(integer(42))), "expected a binary, got 42");
        let fs = tuple(vec![atom("fs"), integer(7), atom("shred"), list(vec![])]);
        assert_eq!(why(fs), "unknown file operation 'shred'");
    }
}
