//! One script, snapshot or restore of a worker's session, answered to the
//! VM as a `Done` event.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::frame::Outbox;
use crate::protocol::{Event, Outcome};
use ex_bashkit_core::job::Job;
use ex_bashkit_core::script_error::ScriptError;
use ex_bashkit_core::stop::{Stop, StopSignal};
use ex_bashkit_core::streaming::{Listen, Output};
use ex_bashkit_core::sync::lock;

pub struct WorkerJob {
    id: u64,
    outbox: Arc<Outbox>,
    stop: Mutex<Option<oneshot::Sender<Stop>>>,
    answered: AtomicBool,
    /// The session's flag: once a script is frozen the VM must end this
    /// process, and every answer says whether that happened.
    frozen: Arc<AtomicBool>,
}

impl WorkerJob {
    pub fn new(id: u64, outbox: Arc<Outbox>, frozen: Arc<AtomicBool>) -> (Arc<Self>, StopSignal) {
        let (stop, signal) = StopSignal::new();
        let job = Self {
            id,
            outbox,
            stop: Mutex::new(Some(stop)),
            answered: AtomicBool::new(false),
            frozen,
        };
        (Arc::new(job), signal)
    }

    /// Sends the outcome, unless the job was answered already.
    pub fn answer(&self, outcome: Outcome) {
        if self.answered.swap(true, Ordering::AcqRel) {
            return;
        }
        let usable = !self.frozen.load(Ordering::Acquire);
        self.outbox.send(Event::Done {
            id: self.id,
            outcome,
            usable,
        });
    }

    /// Streams the job's output to the VM, which fans it out to the call's
    /// listeners and keeps it for an error when the call asked to.
    pub fn output(&self, caps: (usize, usize)) -> Arc<Output> {
        let listener = Chunks {
            id: self.id,
            outbox: self.outbox.clone(),
        };
        Arc::new(Output::new(vec![Box::new(listener)], false, caps))
    }
}

impl Job for WorkerJob {
    fn started(&self) {
        self.outbox.send(Event::Started(self.id));
    }

    fn stop(&self, stop: Stop) {
        if let Some(sender) = lock(&self.stop).take() {
            let _ = sender.send(stop);
        }
    }

    fn fail(&self, error: ScriptError) {
        self.answer(Outcome::ScriptError(error));
    }

    fn follow_output(&self, _output: Option<Arc<Output>>) {
        // The VM has every chunk already.
    }
}

/// `Chunk` events: the output as it is written, within the session's caps.
struct Chunks {
    id: u64,
    outbox: Arc<Outbox>,
}

impl Listen for Chunks {
    fn send(&self, stdout: bool, data: &[u8]) {
        self.outbox.send(Event::Chunk {
            id: self.id,
            stdout,
            data,
        });
    }
}
