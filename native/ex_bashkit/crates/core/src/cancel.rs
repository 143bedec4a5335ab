//! `ExBashkit.Session.cancel/1`: which script of a session is running, and
//! stopping it from any process.
//!
//! Stopping drops the script at its next await point (a `sleep`, a pending
//! callback, a network request) and sets the interpreter's cancellation
//! flag, which bashkit checks inside work that does not await (a Python
//! loop, a long builtin).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::job::Job;
use crate::stop::Stop;
use crate::sync::lock;

/// A session's running script, if any, and its interpreter's flag.
pub struct Running {
    current: Mutex<Option<Arc<dyn Job>>>,
    flag: Arc<AtomicBool>,
}

/// Registers a script as running until dropped.
pub struct Registration<'a>(&'a Running);

impl Running {
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        Self {
            current: Mutex::new(None),
            flag,
        }
    }

    /// Marks `job` as the running script, with the flag down. The flag is
    /// only set or cleared under the lock, so a cancel meant for one script
    /// can never land on the next.
    pub fn enter(&self, job: Arc<dyn Job>) -> Registration<'_> {
        let mut current = lock(&self.current);
        self.flag.store(false, Ordering::Release);
        *current = Some(job);
        Registration(self)
    }

    /// Stops the running script; `false` if none is running.
    pub fn cancel(&self) -> bool {
        let current = lock(&self.current);
        let Some(job) = current.as_ref() else {
            return false;
        };
        self.flag.store(true, Ordering::Release);
        job.stop(Stop::Cancelled);
        true
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut current = lock(&self.0.current);
        *current = None;
        self.0.flag.store(false, Ordering::Release);
    }
}
