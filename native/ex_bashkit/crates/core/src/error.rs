//! Turning bashkit errors into the messages Elixir callers see.

use bashkit::LimitExceeded;
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
