//! Builtin and virtual_fs calls from a worker's session to the VM, where
//! the session's `ExBashkit.Worker` hands them to the caller's callback
//! server as in-VM sessions do, and sends the answer back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::frame::Outbox;
use crate::protocol::Event;
use ex_bashkit_core::callback::{Remote, Reply, Request};
use ex_bashkit_core::sync::lock;

pub struct HostCalls {
    outbox: Arc<Outbox>,
    /// The most a call may carry: the host refuses a larger frame
    /// (`:max_file_bytes`, set with the session).
    max_bytes: AtomicU64,
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
}

impl HostCalls {
    pub fn new(outbox: Arc<Outbox>) -> Self {
        Self {
            outbox,
            max_bytes: AtomicU64::new(u64::MAX),
            next: AtomicU64::new(1),
            pending: Mutex::default(),
        }
    }

    /// The most a call may carry from now on.
    pub fn limit(&self, max_bytes: u64) {
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    /// Delivers the answer to call `id`; a late or unknown one is dropped.
    pub fn answer(&self, id: u64, reply: Reply) {
        if let Some(sender) = lock(&self.pending).remove(&id) {
            let _ = sender.send(reply);
        }
    }
}

impl Remote for HostCalls {
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String> {
        let max = self.max_bytes.load(Ordering::Relaxed);
        if request.bytes() as u64 > max {
            return Err(format!(
                "the call carries {} bytes, more than a worker may send the host ({max}, \
                 limit :max_file_bytes)",
                request.bytes()
            ));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        lock(&self.pending).insert(id, sender);
        self.outbox.send(Event::Call { id, request });
        Ok(answer)
    }
}
