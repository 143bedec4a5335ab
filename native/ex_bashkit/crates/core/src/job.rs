//! A script's job: what it needs of whoever waits for it, the NIF's job
//! handle in the VM or a worker process's job.

use std::sync::Arc;

use crate::script_error::ScriptError;
use crate::stop::Stop;
use crate::streaming::Output;

/// Implemented by the VM's job handle and by a worker's job.
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

/// What a finished job reports back: a value, or an error (a message,
/// unless the job says more).
pub type Outcome<T, E = String> = Result<T, E>;
