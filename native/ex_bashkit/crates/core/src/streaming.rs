//! Live output: a script's stdout and stderr chunks, passed to listeners
//! as bashkit produces them (after each command, loop iteration and list
//! element), and kept for the error of a script that ends without a result.
//!
//! What is passed and kept stops at the session's `:max_stdout_bytes` /
//! `:max_stderr_bytes`, like the result.

use std::sync::{Arc, Mutex};

use bashkit::{OutputCallback, StreamData};

use crate::sync::lock;

/// Where a stream of a script's output goes as it is produced.
pub trait Listen: Send {
    /// `chunk` of stdout (`stdout`) or stderr.
    fn send(&self, stdout: bool, chunk: &[u8]);
}

/// One stream's bookkeeping: its cap, and what was kept of it.
#[derive(Default)]
struct Stream {
    cap: usize,
    passed: usize,
    kept: Vec<u8>,
}

impl Stream {
    /// The part of `chunk` within the cap.
    fn admit<'c>(&mut self, chunk: &'c [u8]) -> &'c [u8] {
        let room = self.cap.saturating_sub(self.passed);
        let admitted = &chunk[..chunk.len().min(room)];
        self.passed += admitted.len();
        admitted
    }
}

/// A script's output as it is produced.
pub struct Output {
    keep: bool,
    state: Mutex<State>,
}

struct State {
    listeners: Vec<Box<dyn Listen>>,
    streams: [Stream; 2],
}

impl Output {
    /// Sends to `listeners` and, if `keep`, keeps what passed, within `caps`
    /// (stdout, stderr) bytes.
    pub fn new(listeners: Vec<Box<dyn Listen>>, keep: bool, caps: (usize, usize)) -> Self {
        let stream = |cap| Stream {
            cap,
            ..Stream::default()
        };
        Self {
            keep,
            state: Mutex::new(State {
                listeners,
                streams: [stream(caps.0), stream(caps.1)],
            }),
        }
    }

    fn emit(&self, stdout: &[u8], stderr: &[u8]) {
        let mut state = lock(&self.state);
        let State { listeners, streams } = &mut *state;
        for (index, chunk) in [stdout, stderr].into_iter().enumerate() {
            let stream = &mut streams[index];
            let admitted = stream.admit(chunk);
            if admitted.is_empty() {
                continue;
            }
            for listener in listeners.iter() {
                listener.send(index == 0, admitted);
            }
            if self.keep {
                stream.kept.extend_from_slice(admitted);
            }
        }
    }

    /// What was kept: (stdout, stderr).
    pub fn take_kept(&self) -> (Vec<u8>, Vec<u8>) {
        let mut state = lock(&self.state);
        let [out, err] = &mut state.streams;
        (std::mem::take(&mut out.kept), std::mem::take(&mut err.kept))
    }

    /// The callback bashkit calls with each chunk.
    pub fn callback(self: &Arc<Self>) -> OutputCallback {
        let output = self.clone();
        Box::new(move |stdout: &StreamData, stderr: &StreamData| {
            output.emit(stdout.as_bytes(), stderr.as_bytes());
        })
    }
}
