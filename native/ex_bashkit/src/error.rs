//! Turning bashkit errors into the messages Elixir callers see.

/// The message for a failed script's `{:error, message}`.
pub fn message(err: &bashkit::Error) -> String {
    err.to_string()
}

/// The message for a failed file operation on `path`. bashkit wraps most of
/// those as `io error: ...`; the path says more than the prefix.
pub fn for_path(path: &str, err: &bashkit::Error) -> String {
    match err {
        bashkit::Error::Io(io) => format!("{path}: {io}"),
        other => format!("{path}: {other}"),
    }
}
