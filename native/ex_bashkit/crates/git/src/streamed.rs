//! A response body handed over as it arrives instead of whole.
//!
//! bashkit's `HttpClient` runs the session's policy (the allowlist, the
//! private-address check, the credential hooks) and then hands the request
//! to its transport, which answers with the body whole. A pack may be
//! hundreds of megabytes, so `fetch_pack` asks for it a part at a time:
//! it sets a sender for the duration of its request, and a transport that
//! finds one (`sender()`) sends the body of a successful response through
//! it as it reads it, answering with an empty body. The channel is bounded,
//! so a network faster than the disk waits for the disk.

use std::future::Future;

use tokio::sync::mpsc;

tokio::task_local! {
    static BODY: mpsc::Sender<Vec<u8>>;
}

/// How many parts may wait to be stored.
const WAITING_PARTS: usize = 8;

/// The sender of the request being made on this task, if its caller
/// takes the body as it arrives.
pub fn sender() -> Option<mpsc::Sender<Vec<u8>>> {
    BODY.try_with(Clone::clone).ok()
}

/// `request`, made with a body sender set, and the receiver of what the
/// transport sends. The receiver ends when the request is over.
pub fn streaming<F: Future>(
    request: F,
) -> (impl Future<Output = F::Output>, mpsc::Receiver<Vec<u8>>) {
    let (sender, receiver) = mpsc::channel(WAITING_PARTS);
    (BODY.scope(sender, request), receiver)
}
