//! How a script, a snapshot or a file operation ended, as `ExBashkit.Caller`
//! and `ExBashkit.Error` read it: the NIF and a worker write these same
//! types.

use serde::ser::{Serialize, SerializeTuple, Serializer};
use serde_bytes::Bytes;

use crate::callback::FileKind;

/// A script's result: `{stdout, stderr, exit_code, truncated, denials,
/// stats}`.
pub struct Ran<'a> {
    pub stdout: &'a [u8],
    pub stderr: &'a [u8],
    pub exit_code: i32,
    pub truncated: bool,
    pub denials: &'a [Denial],
    pub stats: Stats,
}

impl Serialize for Ran<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tuple = serializer.serialize_tuple(6)?;
        tuple.serialize_element(Bytes::new(self.stdout))?;
        tuple.serialize_element(Bytes::new(self.stderr))?;
        tuple.serialize_element(&self.exit_code)?;
        tuple.serialize_element(&self.truncated)?;
        tuple.serialize_element(self.denials)?;
        tuple.serialize_element(&self.stats)?;
        tuple.end()
    }
}

/// What a script (or a session's scripts together) cost: `{wall_us,
/// cpu_us, peak_memory_bytes, file_bytes_written, commands, runs}`, as
/// `ExBashkit.Result.Stats` reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub wall_us: u64,
    pub cpu_us: u64,
    pub peak_memory_bytes: u64,
    pub file_bytes_written: u64,
    pub commands: u64,
    pub runs: u64,
}

impl Serialize for Stats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (
            self.wall_us,
            self.cpu_us,
            self.peak_memory_bytes,
            self.file_bytes_written,
            self.commands,
            self.runs,
        )
            .serialize(serializer)
    }
}

/// A command the policy stopped: `{name, reason}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub name: String,
    pub reason: String,
}

impl Serialize for Denial {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (&self.name, &self.reason).serialize(serializer)
    }
}

/// Why a script or a code run ended without a result: `ExBashkit.Error`'s
/// `:reason`, the library's one vocabulary of failures. (`:busy` is
/// decided in Elixir, where the caller stops waiting; `:protocol` there,
/// where a worker's lie is caught.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Timeout,
    Cancelled,
    Limit,
    /// A script bash cannot parse.
    ParseError,
    Error,
    /// The command policy stopped the script (`command_policy_abort`).
    Denied,
    /// Code a language engine cannot parse (`ExBashkit.Code.run/2`).
    Syntax,
    /// Code that threw, or raised, and did not catch it.
    Exception,
    /// Code that went past its engine's memory cap.
    Memory,
}

/// A failed script: `{reason, limit, message, stdout, stderr}`, where
/// `limit` is the key of the tripped limit (or `nil`) and the outputs are
/// what it printed before it ended, when that was kept.
#[derive(Debug)]
pub struct ScriptError {
    pub reason: Reason,
    pub limit: Option<&'static str>,
    pub message: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ScriptError {
    pub fn new(reason: Reason, limit: Option<&'static str>, message: String) -> Self {
        Self {
            reason,
            limit,
            message,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    /// A script that went past limit `key`.
    pub fn limit(message: String, key: &'static str) -> Self {
        Self::new(Reason::Limit, Some(key), message)
    }

    /// The error, with what the script printed before it ended.
    pub fn with_output(self, (stdout, stderr): (Vec<u8>, Vec<u8>)) -> Self {
        Self {
            stdout,
            stderr,
            ..self
        }
    }
}

impl From<String> for ScriptError {
    fn from(message: String) -> Self {
        Self::new(Reason::Error, None, message)
    }
}

impl Serialize for ScriptError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tuple = serializer.serialize_tuple(5)?;
        tuple.serialize_element(&self.reason)?;
        tuple.serialize_element(&self.limit.map(Atom))?;
        tuple.serialize_element(&self.message)?;
        tuple.serialize_element(Bytes::new(&self.stdout))?;
        tuple.serialize_element(Bytes::new(&self.stderr))?;
        tuple.end()
    }
}

/// A name written as an atom (a limit's key): serde writes a unit
/// variant's name as one.
struct Atom(&'static str);

impl Serialize for Atom {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit_variant("Atom", 0, self.0)
    }
}

/// A filesystem entry as `stat/2` answers it: `{kind, size, mode, mtime}`
/// (in a listing, its name first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub kind: FileKind,
    pub size: u64,
    /// The permission bits (`0o644`).
    pub mode: u32,
    /// Last modified, in seconds since the Unix epoch.
    pub mtime: i64,
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.kind, self.size, self.mode, self.mtime).serialize(serializer)
    }
}

/// A listing's entry: `{name, kind, size, mode, mtime}`.
pub struct Listed<'a>(pub &'a str, pub &'a Entry);

impl Serialize for Listed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Listed(name, entry) = self;
        (name, entry.kind, entry.size, entry.mode, entry.mtime).serialize(serializer)
    }
}
