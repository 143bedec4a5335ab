//! A worker's way out: bashkit's `HttpTransport`, answered by the host.
//!
//! The worker has no network (an empty network namespace, no `socket` in
//! its seccomp filter). Each request its `curl`/`wget`/`http` makes after
//! bashkit's own checks goes to the VM as `{:http, id, request}`; the VM
//! checks it again against the session's policy, adds the credentials it
//! keeps to itself, makes it, and answers with the body in bounded
//! `{:http_body, id, chunk}` frames and a final `{:http_reply, id, answer}`
//! (`src/egress.rs` on the VM's side).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bashkit::{HttpResponse, HttpTransport, HttpTransportError, HttpTransportRequest};
use tokio::sync::oneshot;

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
    max: usize,
    answer: oneshot::Sender<Answer>,
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
        let Some(request) = pending.get_mut(&id) else {
            return;
        };
        if request.body.len() + chunk.len() > request.max {
            if let Some(request) = pending.remove(&id) {
                let message = format!("exceeded {} bytes limit", request.max);
                let _ = request
                    .answer
                    .send(Err(HttpTransportError::TooLarge(message)));
            }
            return;
        }
        request.body.extend_from_slice(chunk);
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
                max: request.max_response_bytes,
                answer: sender,
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
