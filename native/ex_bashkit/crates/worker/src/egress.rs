//! A worker's way out: bashkit's `HttpTransport`, answered by the host.
//!
//! The worker has no network (an empty network namespace, no `socket` in
//! its seccomp filter). Each request its `curl`/`wget`/`http` makes after
//! bashkit's own checks goes to the VM as `{:http, id, request}`; the VM
//! checks it again against the session's policy, adds the credentials it
//! keeps to itself, makes it, and answers with the body in bounded
//! `{:http_body, id, chunk}` frames and a final `{:http_reply, id, answer}`
//! (`src/egress.rs` on the VM's side). The body of a git transfer comes in
//! `{:http_part, id, chunk}` frames as it arrives, each handed to git's
//! pack reader, which writes it to storage.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bashkit::{HttpResponse, HttpTransport, HttpTransportError, HttpTransportRequest};
use tokio::sync::{mpsc, oneshot};

use crate::frame::Outbox;
use crate::protocol::{Event, HttpAnswer};
use ex_bashkit_core::sync::lock;

type Answer = Result<HttpResponse, HttpTransportError>;

pub struct HostEgress {
    outbox: Arc<Outbox>,
    next: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
}

struct Pending {
    body: Vec<u8>,
    /// What came so far, in `body` or passed on.
    received: usize,
    max: usize,
    answer: oneshot::Sender<Answer>,
    /// Where a successful body goes as it arrives, when the request's
    /// maker takes it so (git's pack reader).
    parts: Option<mpsc::Sender<Vec<u8>>>,
}

impl HostEgress {
    pub fn new(outbox: Arc<Outbox>) -> Self {
        Self {
            outbox,
            next: AtomicU64::new(1),
            pending: Mutex::default(),
        }
    }

    /// A part of request `id`'s response body. One past the request's cap
    /// ends the request (the host caps it too).
    pub fn body(&self, id: u64, chunk: &[u8]) {
        let mut pending = lock(&self.pending);
        let Some(request) = Self::counted(&mut pending, id, chunk.len()) else {
            return;
        };
        request.body.extend_from_slice(chunk);
    }

    /// A part of a successful response's body, sent on as it arrives: to
    /// the request's reader where there is one. This thread waits while the
    /// reader's queue is full, which holds the host's frames back.
    pub fn part(&self, id: u64, chunk: Vec<u8>) {
        let parts = {
            let mut pending = lock(&self.pending);
            let Some(request) = Self::counted(&mut pending, id, chunk.len()) else {
                return;
            };
            match &request.parts {
                Some(parts) => parts.clone(),
                None => return request.body.extend_from_slice(&chunk),
            }
        };
        // A reader that stopped ends its request itself.
        let _ = parts.blocking_send(chunk);
    }

    /// Request `id`, with `n` more bytes counted; past its cap it ends.
    fn counted(pending: &mut HashMap<u64, Pending>, id: u64, n: usize) -> Option<&mut Pending> {
        let request = pending.get_mut(&id)?;
        request.received += n;
        if request.received > request.max {
            if let Some(request) = pending.remove(&id) {
                let message = format!("exceeded {} bytes limit", request.max);
                let _ = request
                    .answer
                    .send(Err(HttpTransportError::TooLarge(message)));
            }
            return None;
        }
        pending.get_mut(&id)
    }

    /// The end of request `id`: its status and headers, or why it failed.
    pub fn reply(&self, id: u64, reply: HttpAnswer) {
        let Some(request) = lock(&self.pending).remove(&id) else {
            return;
        };
        let answer = reply
            .map(|(status, headers)| HttpResponse {
                status,
                headers,
                body: request.body,
            })
            .map_err(transport_error);
        let _ = request.answer.send(answer);
    }
}

/// The reader of the request being made on this task, when it takes the
/// body as it arrives (git's clones and fetches).
fn reader() -> Option<mpsc::Sender<Vec<u8>>> {
    #[cfg(feature = "git")]
    return ex_bashkit_core::pack_transport::streamed::sender();
    #[cfg(not(feature = "git"))]
    None
}

/// The host's message, as the transport error whose words curl reads for
/// its exit code.
fn transport_error(message: String) -> HttpTransportError {
    if let Some(why) = message.strip_prefix("access denied: ") {
        HttpTransportError::Denied(why.to_string())
    } else if message.contains("timed out") {
        HttpTransportError::Timeout
    } else if let Some(why) = message.strip_prefix("response too large: ") {
        HttpTransportError::TooLarge(why.to_string())
    } else {
        HttpTransportError::Transport(message)
    }
}

#[bashkit::async_trait]
impl HttpTransport for HostEgress {
    async fn execute(&self, request: HttpTransportRequest) -> Answer {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        lock(&self.pending).insert(
            id,
            Pending {
                body: Vec::new(),
                received: 0,
                max: request.max_response_bytes,
                answer: sender,
                parts: reader(),
            },
        );
        // Forgotten when the request is dropped (its deadline, a cancel).
        let _forget = Forget(self, id);
        self.outbox.send(Event::Http {
            id,
            method: request.method.as_str(),
            url: &request.url,
            headers: &request.headers,
            body: request.body.as_deref(),
            timeout_ms: u64::try_from(request.timeout.as_millis()).unwrap_or(u64::MAX),
            max_bytes: request.max_response_bytes as u64,
        });
        answer
            .await
            .unwrap_or_else(|_| Err(HttpTransportError::Transport("the host went away".into())))
    }
}

struct Forget<'a>(&'a HostEgress, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.0.pending).remove(&self.1);
    }
}
