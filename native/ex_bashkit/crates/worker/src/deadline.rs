//! The running script's deadline, for code that blocks the interpreter's
//! thread until it is done (the JavaScript engine, `js.rs`): bashkit's own
//! deadline is not shown to a session's added commands, and a call's
//! `:timeout_ms` is the host's, so the worker keeps it here for them.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ex_bashkit_core::sync::lock;

/// When the script that holds the session must stop.
#[derive(Default)]
pub struct Deadline {
    /// The session's own `:timeout_ms`.
    default: Mutex<Option<Duration>>,
    /// When the running script must stop, and the limit that says so.
    at: Mutex<Option<(Instant, Duration)>>,
}

/// The deadline of one script, cleared when dropped.
pub struct Running<'a>(&'a Deadline);

impl Deadline {
    /// The session's own limit, for calls without one.
    pub fn session(&self, timeout: Duration) {
        *lock(&self.default) = Some(timeout);
    }

    /// A script takes the session now, with `timeout` or the session's.
    pub fn start(&self, timeout: Option<Duration>) -> Running<'_> {
        let timeout = timeout.or(*lock(&self.default));
        *lock(&self.at) = timeout.map(|timeout| (Instant::now() + timeout, timeout));
        Running(self)
    }

    /// When the running script must stop, if it must, and its limit.
    #[cfg(feature = "javascript")]
    pub fn at(&self) -> Option<(Instant, Duration)> {
        *lock(&self.at)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        *lock(&self.0.at) = None;
    }
}
