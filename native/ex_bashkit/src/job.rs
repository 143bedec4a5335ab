//! What a session's script needs of whoever waits for it: a [`JobHandle`]
//! in the VM, or a worker process's job (`worker/job.rs`).

use std::sync::Arc;

use rustler::ResourceArc;

use crate::jobs::{JobHandle, Stop};
use crate::script_error::ScriptError;
use crate::streaming::Output;

/// Implemented by the VM's handle and by a worker's job.
pub trait Job: Send + Sync {
    /// The script took the session and is running.
    fn started(&self);
    /// Stops the script at its next await point.
    fn stop(&self, stop: Stop);
    /// Answers now with `error`, unless answered already (a frozen script).
    fn fail(&self, error: ScriptError);
    /// Where the script's output goes, for what it printed so far.
    fn follow_output(&self, output: Option<Arc<Output>>);
}

impl Job for ResourceArc<JobHandle> {
    fn started(&self) {
        JobHandle::started(self);
    }

    fn stop(&self, stop: Stop) {
        JobHandle::stop(self, stop);
    }

    fn fail(&self, error: ScriptError) {
        JobHandle::fail(self, error);
    }

    fn follow_output(&self, output: Option<Arc<Output>>) {
        JobHandle::follow_output(self, output);
    }
}
