//! Why a script ended without a result, as `ExBashkit.Error` reads it.

use bashkit::LimitExceeded;

use crate::error::{limit_key, message, SessionError};
use crate::stop::Stop;

/// Why a script ended without a result, as `ExBashkit.Error`'s `:reason`.
/// (`:busy` is decided in Elixir, where the caller stops waiting.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Timeout,
    Cancelled,
    Limit,
    ParseError,
    Error,
    /// The command policy stopped the script (`command_policy_abort`).
    Denied,
}

crate::named!(Reason {
    Timeout = "timeout",
    Cancelled = "cancelled",
    Limit = "limit",
    ParseError = "parse_error",
    Error = "error",
    Denied = "denied",
});

/// A failed script: `{reason, limit, message, stdout, stderr}` to Elixir,
/// where `limit` is the key of the tripped limit (or `nil`) and the
/// outputs are what it printed before it ended, when that was kept.
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

    /// The error, with what the script printed before it ended.
    pub fn with_output(self, (stdout, stderr): (Vec<u8>, Vec<u8>)) -> Self {
        Self {
            stdout,
            stderr,
            ..self
        }
    }

    /// A script that went past limit `key`.
    pub fn limit(message: String, key: &'static str) -> Self {
        Self::new(Reason::Limit, Some(key), message)
    }

    /// Why bashkit failed the script.
    pub fn classify(err: &bashkit::Error) -> Self {
        let message = message(err);
        match err {
            bashkit::Error::Parse { .. } => Self::new(Reason::ParseError, None, message),
            bashkit::Error::Cancelled => Self::new(Reason::Cancelled, None, message),
            bashkit::Error::ResourceLimit(LimitExceeded::Timeout(_)) => {
                Self::new(Reason::Timeout, Some("timeout_ms"), message)
            }
            bashkit::Error::ResourceLimit(limit) => {
                Self::new(Reason::Limit, limit_key(limit), message)
            }
            _ => Self::new(Reason::Error, None, message),
        }
    }
}

impl From<String> for ScriptError {
    fn from(message: String) -> Self {
        Self::new(Reason::Error, None, message)
    }
}

/// The one place the session layer's errors get their `ExBashkit.Error`
/// reason: a limit names its key, everything else is `:error`.
impl From<SessionError> for ScriptError {
    fn from(error: SessionError) -> Self {
        let limit = match error {
            SessionError::TooDeep { .. } => Some("max_ast_depth"),
            SessionError::SnapshotTooLarge { .. } => Some("max_snapshot_bytes"),
            SessionError::Closed
            | SessionError::Frozen
            | SessionError::Threads { .. }
            | SessionError::Cwd { .. }
            | SessionError::Mount(_)
            | SessionError::Build(_) => None,
        };
        match limit {
            Some(key) => Self::limit(error.to_string(), key),
            None => Self::new(Reason::Error, None, error.to_string()),
        }
    }
}

impl From<Stop> for ScriptError {
    fn from(stop: Stop) -> Self {
        let reason = match stop {
            Stop::Cancelled => Reason::Cancelled,
            Stop::CallerExited | Stop::Abandoned => Reason::Error,
        };
        Self::new(reason, None, stop.into())
    }
}
