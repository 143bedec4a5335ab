//! The session layer's errors, and turning bashkit's into the messages
//! Elixir callers see.

use bashkit::LimitExceeded;

/// Why the session layer refused or failed a call, one variant per cause.
/// `Display` is the message Elixir callers see; `ScriptError::from`
/// (script_error.rs) is the one place each gets its `ExBashkit.Error`
/// reason.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "the session was closed (ExBashkit.Session.close/1): it can run nothing more, \
         start a new session"
    )]
    Closed,
    #[error(
        "the session can run no more scripts: a script on it went past its memory limit \
         inside work that cannot be interrupted and was frozen (start a new session)"
    )]
    Frozen,
    /// The interpreter threads could not start (their stacks did not fit).
    #[error(
        "cannot start the interpreter threads: {error} (each reserves a {stack_mib} MiB stack \
         of address space; is the VM's address space limited, as by ulimit -v?)"
    )]
    Threads { error: String, stack_mib: usize },
    /// The script nests deeper than `:max_ast_depth` allows (checked at twice it).
    #[error(
        "the script nests ( or {{, compound commands or time prefixes more than {max_depth} \
         levels deep (limit :max_ast_depth, checked before parsing at twice its value)"
    )]
    TooDeep { max_depth: usize },
    #[error("the snapshot decodes to more than {max} bytes (limit :max_snapshot_bytes)")]
    SnapshotTooLarge { max: u64 },
    /// A call's `:cwd` that is not a directory of the session.
    #[error("cwd {cwd:?} {}", if *.missing { "does not exist" } else { "is not a directory" })]
    Cwd { cwd: String, missing: bool },
    /// A host mount refused (by the host or by the mount policy).
    #[error("{0}")]
    Mount(String),
    /// The interpreter could not be built from the options.
    #[error("{0}")]
    Build(String),
}

impl From<SessionError> for String {
    fn from(error: SessionError) -> Self {
        error.to_string()
    }
}
/// The message for a failed script's `{:error, message}`. A tripped limit
/// that the `:limits` option controls names its key, so the fix is obvious.
pub fn message(err: &bashkit::Error) -> String {
    match err {
        bashkit::Error::ResourceLimit(limit) => match limit_key(limit) {
            Some(key) => format!("{err} (limit :{key})"),
            None => err.to_string(),
        },
        other => other.to_string(),
    }
}

/// The `:limits` key that sets `limit`, if one does.
/// How the worker's `node` words a run over its memory cap.
pub const JAVASCRIPT_HEAP: &str = "JavaScript heap out of memory";

pub fn limit_key(limit: &LimitExceeded) -> Option<&'static str> {
    match limit {
        LimitExceeded::Memory(what) if variable_budget(what) => Some("max_memory_bytes"),
        LimitExceeded::Memory(what) if what.starts_with(JAVASCRIPT_HEAP) => {
            Some("max_javascript_memory_bytes")
        }
        other => crate::limits::key_of_variant(other),
    }
}

/// bashkit reports every memory cap (variables, `pr` output, `dd` padding,
/// stream copies, ...) as one `Memory(String)` variant, so the variable
/// budget, the one `:max_memory_bytes` sets, is told apart by the exact
/// message its check formats.
fn variable_budget(what: &str) -> bool {
    what.strip_prefix("variable byte limit (")
        .and_then(|rest| rest.strip_suffix(") exceeded"))
        .is_some_and(|limit| limit.bytes().all(|b| b.is_ascii_digit()))
}

/// The message for a failed file operation on `path`. bashkit wraps most of
/// those as `io error: ...`; the path says more than the prefix.
pub fn for_path(path: &str, err: &bashkit::Error) -> String {
    match err {
        bashkit::Error::Io(io) => format!("{path}: {io}"),
        other => format!("{path}: {other}"),
    }
}
