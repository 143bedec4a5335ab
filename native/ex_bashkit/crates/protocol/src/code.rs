//! A code run (`ExBashkit.Code.run/2`) in a worker: what the VM asks for
//! ([`Language`], [`Grant`], in `worker::Request::RunCode`) and what the
//! language's engine answers ([`CodeOutcome`]). The engine hands its
//! outcome to the worker directly, not through the code's stdout, which
//! stays the code's own.

use serde::{Deserialize, Serialize};

use crate::outcome::Reason;

/// The engine that runs the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// `node` on QuickJS-ng (`javascript: true`).
    Javascript,
    /// TypeScript: `node` on the code with its types stripped.
    Typescript,
    /// CPython (`python: :cpython`).
    Python,
    /// Monty (`python: true`), the Python that calls `:tools`.
    Monty,
}

/// What a JavaScript run may use beyond the language itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A global `fs` that reads the run's files.
    ReadFiles,
    /// A global `crypto`: hashes, HMACs, UUIDs.
    Crypto,
    /// A global `fetch`, within the session's `:allow_net`.
    Fetch,
    /// A global `child_process`, its commands in the run's own shell.
    Commands,
}

/// How `execute(input)` ended, as its engine saw it: the JSON of the
/// value it returned, or the error it threw. Written to the VM as
/// `{:value, json}` or `{:error, %{kind, name, message, line}}`; CPython's
/// driver writes it as JSON (`{"value": json}`, `{"error": {...}}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeOutcome {
    Value(String),
    Error(CodeError),
}

/// An error of the code itself, in the library's words. Read from an
/// engine's JSON, `kind` may be left out: the name says it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "Thrown")]
pub struct CodeError {
    /// `Syntax`, `Exception` or `Memory`.
    pub kind: Reason,
    /// The language's name for it (`TypeError`, `ZeroDivisionError`).
    pub name: String,
    pub message: String,
    /// The line of the code it is about, when the engine knows it.
    pub line: Option<u32>,
}

impl CodeError {
    /// An exception named `name`.
    pub fn exception(
        name: impl Into<String>,
        message: impl Into<String>,
        line: Option<u32>,
    ) -> Self {
        let name = name.into();
        let kind = match name.as_str() {
            "SyntaxError" => Reason::Syntax,
            "MemoryError" => Reason::Memory,
            _ => Reason::Exception,
        };
        Self {
            kind,
            name,
            message: message.into(),
            line,
        }
    }
}

/// A [`CodeError`] as an engine's driver writes it.
#[derive(Deserialize)]
struct Thrown {
    kind: Option<Reason>,
    name: String,
    message: String,
    line: Option<u32>,
}

impl From<Thrown> for CodeError {
    fn from(thrown: Thrown) -> Self {
        let error = Self::exception(thrown.name, thrown.message, thrown.line);
        match thrown.kind {
            Some(kind) => Self { kind, ..error },
            None => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use eetf::{Atom, Binary, FixInteger, Term, Tuple};

    use super::{CodeError, CodeOutcome};
    use crate::etf::to_term;
    use crate::outcome::Reason;

    #[test]
    fn an_outcome_is_written_as_the_vm_reads_it() {
        let atom = |name: &str| Term::Atom(Atom::from(name));
        let value = to_term(&CodeOutcome::Value("[1,2]".into())).unwrap();
        let json = Term::Binary(Binary::from(&b"[1,2]"[..]));
        assert_eq!(value, Term::Tuple(Tuple::from(vec![atom("value"), json])));
        let thrown = CodeError::exception("TypeError", "x is not a function", Some(3));
        let Term::Tuple(pair) = to_term(&CodeOutcome::Error(thrown)).unwrap() else {
            panic!("a tuple")
        };
        assert_eq!(pair.elements[0], atom("error"));
        let Term::Map(error) = &pair.elements[1] else {
            panic!("a map")
        };
        assert_eq!(error.map[&atom("kind")], atom("exception"));
        assert_eq!(
            error.map[&atom("line")],
            Term::FixInteger(FixInteger::from(3))
        );
    }

    #[test]
    fn a_driver_may_leave_the_kind_to_the_name() {
        let json = r#"{"error": {"name": "MemoryError", "message": "", "line": null}}"#;
        let CodeOutcome::Error(error) = serde_json::from_str(json).unwrap() else {
            panic!("an error")
        };
        assert_eq!(error.kind, Reason::Memory);
    }

    #[test]
    fn an_engine_names_the_kind_of_its_error() {
        assert_eq!(
            CodeError::exception("SyntaxError", "", None).kind,
            Reason::Syntax
        );
        assert_eq!(
            CodeError::exception("MemoryError", "", None).kind,
            Reason::Memory
        );
        assert_eq!(
            CodeError::exception("null", "", None).kind,
            Reason::Exception
        );
    }
}
