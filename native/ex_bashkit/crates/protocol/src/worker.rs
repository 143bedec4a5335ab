//! The frames the VM sends a worker process, defined once: `requests.table`
//! (beside this crate) lists them with their arguments and answers,
//! `ExBashkit.Worker.Request` builds them from that table, and the worker
//! reads each as a [`Request`] with [`crate::etf`]. The test below reads
//! every row of the table through this type.

use serde::Deserialize;
use serde_bytes::ByteBuf;

use crate::call::CallOptions;
use crate::callback::Reply;
use crate::code::{Grant, Language};
use crate::options::{Headers, SessionOptions};

/// A frame from the VM.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Prepare(Box<SessionOptions>),
    New(Box<SessionOptions>),
    /// Id, script, the call's options.
    Exec(u64, ByteBuf, Option<CallOptions>),
    /// Id, the engine, the input as JSON, the grants, the call's options:
    /// runs `execute(input)` of the session's `/code/main.*`.
    RunCode(u64, Language, ByteBuf, Vec<Grant>, Option<CallOptions>),
    /// Id, exclude the filesystem, exclude functions, the signing key.
    Snapshot(u64, bool, bool, Option<ByteBuf>),
    /// Id, the snapshot, the signing key.
    Restore(u64, ByteBuf, Option<ByteBuf>),
    Abandon(u64),
    Cancel(u64),
    Stats(u64),
    Fs(u64, FileOp),
    Reply(u64, Reply),
    HttpBody(u64, ByteBuf),
    /// A part of a successful response's body, sent on as it arrives:
    /// to git's pack reader where one takes it.
    HttpPart(u64, ByteBuf),
    HttpReply(u64, HttpAnswer),
}

/// How the host answered an HTTP request: the response's status and
/// headers (its body came before, in `HttpBody` frames), or why not.
pub type HttpAnswer = Result<(u16, Headers), String>;

/// One operation of the file API, with its arguments.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOp {
    ReadFile(String),
    WriteFile(String, ByteBuf),
    ListDir(String),
    /// Path, recursive.
    Mkdir(String, bool),
    /// Path, recursive.
    Remove(String, bool),
    /// From, to, overwrite.
    Rename(String, String, bool),
    Stat(String),
    /// Path, mode, recursive.
    Chmod(String, u32, bool),
}

#[cfg(test)]
mod tests {
    use eetf::{Atom, Binary, FixInteger, List, Map, Term, Tuple};

    use super::Request;
    use crate::etf::{from_term, to_term};
    use crate::options::SessionOptions;

    fn atom(name: &str) -> Term {
        Term::Atom(Atom::from(name))
    }

    fn tuple(items: Vec<Term>) -> Term {
        Term::Tuple(Tuple::from(items))
    }

    /// A value of each argument type the table names.
    fn sample(kind: &str) -> Term {
        let binary = |text: &str| Term::Binary(Binary::from(text.as_bytes()));
        match kind {
            "id" => Term::FixInteger(FixInteger::from(7)),
            "binary" => binary("x"),
            "boolean" => atom("true"),
            "key" | "call" => atom("nil"),
            "language" => atom("javascript"),
            "grants" => Term::List(List::from(vec![atom("read_files"), atom("fetch")])),
            "options" => to_term(&SessionOptions::default()).unwrap(),
            "file_op" => tuple(vec![atom("read_file"), binary("/x")]),
            "reply" => tuple(vec![atom("error"), atom("enoent")]),
            "http_answer" => tuple(vec![
                atom("ok"),
                tuple(vec![
                    Term::FixInteger(FixInteger::from(200)),
                    Term::List(List::nil()),
                ]),
            ]),
            other => panic!("requests.table: no sample of type {other}"),
        }
    }

    #[test]
    fn every_request_of_the_table_reads() {
        let table = include_str!("../requests.table");
        let rows: Vec<_> = table
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .collect();
        assert_eq!(rows.len(), 14);
        for row in rows {
            let fields: Vec<&str> = row.split('|').map(str::trim).collect();
            let mut frame = vec![atom(fields[0])];
            frame.extend(
                fields[1]
                    .split_whitespace()
                    .map(|arg| sample(arg.split_once(':').expect("name:type").1)),
            );
            let request: Result<Request, _> = from_term(tuple(frame));
            let request = request.unwrap_or_else(|e| panic!("{row}: {e}"));
            let name = format!("{request:?}").to_ascii_lowercase();
            let tag = fields[0].replace('_', "");
            assert!(name.starts_with(&tag), "{row} read as {name}");
        }
    }

    #[test]
    fn options_missing_a_field_do_not_read_and_say_which() {
        let Term::Map(mut options) = to_term(&SessionOptions::default()).unwrap() else {
            panic!("options are a map");
        };
        options.map.remove(&atom("cwd"));
        let frame = tuple(vec![atom("new"), Term::Map(Map::from(options.map))]);
        let error = from_term::<Request>(frame).unwrap_err();
        assert!(error.to_string().contains("missing field `cwd`"), "{error}");
    }
}
