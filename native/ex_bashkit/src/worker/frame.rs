//! Frames between a worker process and the VM: a Port opened with
//! `{:packet, 4}`, so each frame is a 4-byte big-endian length and an
//! Erlang external term (`:erlang.term_to_binary/1` on the other side).

use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::sync::Mutex;

use eetf::Term;

use crate::sync::lock;

/// The largest frame the VM may send: a restore of the largest snapshot
/// the session accepts, with room for framing.
const MAX_FRAME_BYTES: usize = 1 << 31;

/// Reads the next frame from `input`; `None` when the VM closed the pipe.
pub fn read(input: &mut impl Read) -> io::Result<Option<Term>> {
    let mut length = [0u8; 4];
    match input.read_exact(&mut length) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_FRAME_BYTES {
        return Err(io::Error::other(format!("frame of {length} bytes")));
    }
    let mut payload = vec![0u8; length];
    input.read_exact(&mut payload)?;
    Term::decode(payload.as_slice())
        .map(Some)
        .map_err(|e| io::Error::other(format!("undecodable frame: {e}")))
}

/// The VM's end: this process's stdout, written one whole frame at a time
/// from any thread.
pub struct Outbox(Mutex<ManuallyDrop<File>>);

impl Outbox {
    pub fn stdout() -> Self {
        // SAFETY: fd 1 is the Port's pipe for the life of the process; the
        // File is never dropped, so the fd is never closed twice.
        Self(Mutex::new(ManuallyDrop::new(unsafe {
            File::from_raw_fd(1)
        })))
    }

    /// Sends `term`. A VM that is gone cannot be told anything: the process
    /// exits, as it would when its stdin closes.
    pub fn send(&self, term: &Term) {
        let mut frame = vec![0u8; 4];
        if term.encode(&mut frame).is_err() {
            return;
        }
        let length = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&length.to_be_bytes());
        if lock(&self.0).write_all(&frame).is_err() {
            super::exit_now();
        }
    }
}
