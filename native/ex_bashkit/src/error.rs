//! Turning bashkit errors into the messages Elixir callers see.

/// The message for `{:error, message}`.
pub fn message(err: &bashkit::Error) -> String {
    err.to_string()
}
