//! Why a script ended without a result, as `ExBashkit.Error` reads it.

use bashkit::LimitExceeded;

use crate::error::{limit_key, message, SessionError};
use crate::stop::Stop;

pub use ex_bashkit_protocol::outcome::{Reason, ScriptError};

/// Why bashkit failed the script.
pub fn classify(err: &bashkit::Error) -> ScriptError {
    let message = message(err);
    match err {
        bashkit::Error::Parse { .. } => ScriptError::new(Reason::ParseError, None, message),
        bashkit::Error::Cancelled => ScriptError::new(Reason::Cancelled, None, message),
        bashkit::Error::ResourceLimit(LimitExceeded::Timeout(_)) => {
            ScriptError::new(Reason::Timeout, Some("timeout_ms"), message)
        }
        bashkit::Error::ResourceLimit(limit) => {
            ScriptError::new(Reason::Limit, limit_key(limit), message)
        }
        _ => ScriptError::new(Reason::Error, None, message),
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
            Some(key) => ScriptError::limit(error.to_string(), key),
            None => ScriptError::new(Reason::Error, None, error.to_string()),
        }
    }
}

impl From<Stop> for ScriptError {
    fn from(stop: Stop) -> Self {
        let reason = match stop {
            Stop::Cancelled => Reason::Cancelled,
            Stop::CallerExited | Stop::Abandoned => Reason::Error,
        };
        ScriptError::new(reason, None, stop.into())
    }
}
