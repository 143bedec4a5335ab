//! Calls from a running script back into Elixir, shared by custom builtins
//! (`builtins.rs`) and virtual-filesystem backends (`virtual_fs.rs`).
//!
//! A call goes out through the session's [`Remote`]: in the VM, the NIF
//! sends it to the Elixir process serving the running script's callbacks;
//! in a worker process, the worker sends it to its host. The interpreter
//! thread holds no lock while it waits: the script is a parked task, and
//! the thread keeps serving other sessions.

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::runtime;

pub use ex_bashkit_protocol::callback::{Errno, Failure, FsOp, Reply, Request};

/// How a session's calls leave it; the answer arrives on the receiver.
pub trait Remote: Send + Sync {
    fn send(&self, request: &Request<'_>) -> Result<oneshot::Receiver<Reply>, String>;
}

/// The session's link to whoever serves its callbacks.
pub struct Channel(Arc<dyn Remote>);

impl Channel {
    /// A channel whose calls go to `remote`.
    pub fn new(remote: Arc<dyn Remote>) -> Self {
        Self(remote)
    }

    /// Sends `request` and waits for the answer.
    pub async fn call(&self, request: Request<'_>) -> Result<Reply, String> {
        // The file API runs on a dirty scheduler and can reach a virtual
        // mount through a symlink: from there a call would block the
        // scheduler on Elixir, and sending from a BEAM thread panics.
        // A script polled on its caller's thread (`inline.rs`) calls too:
        // its caller serves the call, then polls it on.
        let here = crate::inline::polling_here();
        if !here && !runtime::on_interpreter_thread() {
            return Err("builtins and virtual_fs backends serve scripts only".into());
        }
        let answer = self.0.send(&request)?;
        if here {
            crate::inline::hold();
        } else {
            // The answer usually comes back within microseconds: stay awake.
            runtime::stay_awake();
        }
        // The sender is dropped unanswered only if the caller dropped the call.
        answer
            .await
            .map_err(|_| "the callback was dropped without an answer".into())
    }
}
