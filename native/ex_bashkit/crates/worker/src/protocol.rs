//! The protocol between the VM and a worker, on the worker's side: every
//! frame the VM sends reads as the protocol crate's [`Request`] (its table
//! is there), and every frame the worker sends is a typed [`Event`] encoded
//! here. Its counterpart in the VM is `ExBashkit.Worker.Protocol`, which
//! treats every event as possibly forged.

use bashkit::SnapshotOptions;
use eetf::Term;

use crate::codec::{self, atom, binary, boolean, integer, list, owned_binary, tuple};
use crate::frame::IntoTerm;
use ex_bashkit_core::callback::Request as CallRequest;
use ex_bashkit_core::fs::Entry;
use ex_bashkit_core::policy::Denial;
use ex_bashkit_core::script_error::ScriptError;
use ex_bashkit_jail::Report;
use ex_bashkit_protocol::code::CodeOutcome;
use ex_bashkit_protocol::etf;
use ex_bashkit_protocol::outcome::{Listed, Ran, Stats};
pub use ex_bashkit_protocol::worker::{FileOp, HttpAnswer, Request};

/// A frame from the VM, read.
pub enum Frame {
    Request(Box<Request>),
    /// `{:new, options}` whose options do not read: answered with why.
    Unreadable(String),
    /// A job's frame with an id and fields that do not read: the job is
    /// answered with the error.
    Malformed {
        id: u64,
        why: String,
    },
}

/// Reads a frame; `None` for one that names nothing (a bug in the VM,
/// which its deadline for the request ends).
pub fn decode(term: Term) -> Option<Frame> {
    let (tag, id) = peek(&term)?;
    match etf::from_term::<Request>(term) {
        Ok(request) => Some(Frame::Request(Box::new(request))),
        Err(why) => match (tag.as_str(), id) {
            ("new", _) => Some(Frame::Unreadable(why.to_string())),
            ("exec" | "run_code" | "snapshot" | "restore" | "fs", Some(id)) => {
                Some(Frame::Malformed {
                    id,
                    why: why.to_string(),
                })
            }
            _ => None,
        },
    }
}

/// A frame's tag and, if it has one, its id: what an answer to a frame
/// that does not read needs.
fn peek(term: &Term) -> Option<(String, Option<u64>)> {
    let Term::Tuple(frame) = term else {
        return None;
    };
    let tag = match frame.elements.first()? {
        Term::Atom(atom) => atom.name.clone(),
        _ => return None,
    };
    let id = match frame.elements.get(1) {
        Some(Term::FixInteger(id)) => u64::try_from(id.value).ok(),
        _ => None,
    };
    Some((tag, id))
}

/// What a snapshot request asks to leave out.
pub fn snapshot_options(exclude_filesystem: bool, exclude_functions: bool) -> SnapshotOptions {
    SnapshotOptions {
        exclude_filesystem,
        exclude_functions,
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
    /// What the session's scripts cost, summed.
    Stats {
        id: u64,
        totals: Stats,
    },
    Http {
        id: u64,
        method: &'a str,
        url: &'a str,
        headers: &'a [(String, String)],
        body: Option<&'a [u8]>,
        timeout_ms: u64,
        /// The most of a body the request's client takes (curl's 10 MB,
        /// or git's `:max_git_transfer_bytes`); the host holds it to the
        /// session's own limits.
        max_bytes: u64,
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
    Ran(Output),
    /// A code run: its driver's command's output, and what its engine
    /// said of `execute(input)`, if it said anything.
    Code(Output, Option<CodeOutcome>),
    Snapshot(Vec<u8>),
    Restored,
    /// A script that ended without a result.
    ScriptError(ScriptError),
    /// A job that could not run, or a snapshot or restore that failed.
    Failed(String),
}

/// What a script left.
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    pub truncated: bool,
    pub denials: Vec<Denial>,
    pub stats: Stats,
}

impl Output {
    fn ran(&self) -> Ran<'_> {
        Ran {
            stdout: &self.stdout,
            stderr: &self.stderr,
            exit_code: self.exit_code,
            truncated: self.truncated,
            denials: &self.denials,
            stats: self.stats,
        }
    }
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
                // `{target, request}` (the protocol's) spread into the frame.
                let mut frame = vec![atom("call"), id_term(id)];
                match codec::protocol(request) {
                    Term::Tuple(pair) => frame.extend(pair.elements),
                    other => frame.push(other),
                }
                tuple(frame)
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
            Event::Stats { id, totals } => {
                tuple(vec![atom("stats"), id_term(id), codec::protocol(&totals)])
            }
            Event::Http {
                id,
                method,
                url,
                headers,
                body,
                timeout_ms,
                max_bytes,
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
                    ("max_bytes", id_term(max_bytes)),
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
        Outcome::Ran(output) => codec::ok(codec::protocol(&output.ran())),
        Outcome::Code(output, outcome) => {
            let outcome = outcome
                .as_ref()
                .map_or_else(|| atom("nil"), codec::protocol);
            codec::ok(tuple(vec![
                atom("code"),
                codec::protocol(&output.ran()),
                outcome,
            ]))
        }
        Outcome::Snapshot(bytes) => codec::ok(owned_binary(bytes)),
        Outcome::Restored => codec::ok(atom("ok")),
        Outcome::ScriptError(error) => tuple(vec![atom("error"), codec::protocol(&error)]),
        Outcome::Failed(message) => codec::error(&message),
    }
}

fn fs_term(answer: FsAnswer) -> Term {
    match answer {
        FsAnswer::Content(bytes) => codec::ok(owned_binary(bytes)),
        FsAnswer::Done => atom("ok"),
        FsAnswer::Entries(entries) => {
            let listed: Vec<Listed> = entries
                .iter()
                .map(|(name, entry)| Listed(name, entry))
                .collect();
            codec::ok(codec::protocol(&listed))
        }
        FsAnswer::Stat(entry) => codec::ok(codec::protocol(&entry)),
        FsAnswer::Failed(message) => codec::error(&message),
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, Frame};
    use crate::codec::{atom, integer, list, tuple};

    #[test]
    fn a_request_that_does_not_decode_is_answered_saying_why() {
        let exec = |script| tuple(vec![atom("exec"), integer(7), script, atom("nil")]);
        let why = |frame| match decode(frame) {
            Some(Frame::Malformed { id: 7, why }) => why,
            _ => panic!("not answered as malformed"),
        };
        assert_eq!(why(exec(integer(42))), "expected a binary, got 42");
        let fs = tuple(vec![
            atom("fs"),
            integer(7),
            tuple(vec![atom("shred"), list(vec![])]),
        ]);
        assert!(why(fs).contains("unknown variant `shred`"));
        assert!(decode(tuple(vec![atom("nonsense"), integer(7)])).is_none());
        let new = tuple(vec![atom("new"), integer(7)]);
        assert!(matches!(decode(new), Some(Frame::Unreadable(_))));
    }
}
