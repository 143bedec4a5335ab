//! Live output: a script's stdout and stderr chunks, sent to Elixir as
//! bashkit produces them (after each command, loop iteration and list
//! element), and kept for the error of a script that ends without a result.
//!
//! A listener gets `{:ex_bashkit, tag, {:stdout | :stderr, chunk}}`, in the
//! order the script wrote them. What is sent and kept stops at the
//! session's `:max_stdout_bytes` / `:max_stderr_bytes`, like the result.

use std::sync::{Arc, Mutex};

use bashkit::{OutputCallback, StreamData};
use rustler::env::SavedTerm;
use rustler::{Encoder, LocalPid, OwnedEnv, Term};

use crate::sync::lock;

mod atoms {
    rustler::atoms! { ex_bashkit, stdout, stderr }
}

/// A process that follows the output, and the tag its messages carry.
/// Where a stream of a script's output goes as it is produced.
pub trait Listen: Send {
    /// `chunk` of stdout (`stdout`) or stderr.
    fn send(&self, stdout: bool, chunk: &[u8]);
}

/// A process in this VM, sent `{:ex_bashkit, tag, {stream, chunk}}`.
pub struct Listener {
    pid: LocalPid,
    /// Holds `tag`; never cleared, so the tag can be copied into each message.
    tag_env: OwnedEnv,
    tag: SavedTerm,
}

impl Listener {
    pub fn new(pid: LocalPid, tag: Term<'_>) -> Self {
        let tag_env = OwnedEnv::new();
        let tag = tag_env.save(tag);
        Listener { pid, tag_env, tag }
    }
}

impl Listen for Listener {
    fn send(&self, stdout: bool, chunk: &[u8]) {
        let stream = match stdout {
            true => atoms::stdout(),
            false => atoms::stderr(),
        };
        // A listener that is gone is not an error: the script goes on.
        let _ = OwnedEnv::new().send_and_clear(&self.pid, |env| {
            let tag = self
                .tag_env
                .run(|tag_env| self.tag.load(tag_env).in_env(env));
            let data = crate::terms::bytes(env, chunk);
            (atoms::ex_bashkit(), tag, (stream, data)).encode(env)
        });
    }
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
