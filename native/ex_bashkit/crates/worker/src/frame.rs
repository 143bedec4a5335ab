//! Frames between a worker process and the VM: each a 4-byte big-endian
//! length and an Erlang external term (`ExBashkit.Worker.Protocol` frames
//! and checks them on the other side; `protocol.rs` says what they hold).

use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Mutex;
use std::time::Instant;

use eetf::Term;

use ex_bashkit_core::sync::lock;

/// The largest frame the VM may send: a restore of the largest snapshot
/// the session accepts, with room for framing.
const MAX_FRAME_BYTES: usize = 1 << 31;

/// A pipe's capacity as the kernel makes it.
pub(crate) const PIPE_BYTES: usize = 64 * 1024;

/// The capacity a pipe is grown to while a frame larger than
/// `PIPE_BYTES` crosses it: the most any user may set
/// (`/proc/sys/fs/pipe-max-size`'s default). A 10 MB frame then crosses in
/// 10 writes instead of 160, each a wakeup of the VM's poll and of this
/// process; measured, `write_file/3` of 10 MB took 21 ms against 1 ms in
/// the VM.
pub(crate) const LARGE_PIPE_BYTES: usize = 1024 * 1024;

/// Reads the next frame from `input`, whose pipe is `fd`; `None` when the
/// VM closed the pipe.
pub fn read(input: &mut impl Read, fd: RawFd) -> io::Result<Option<Term>> {
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
    let large = Large::pipe(fd, length);
    input.read_exact(&mut payload)?;
    drop(large);
    Term::decode(payload.as_slice())
        .map(Some)
        .map_err(|e| io::Error::other(format!("undecodable frame: {e}")))
}

/// Returns once the VM's pipe `fd` has bytes, or at `until`, looking
/// without sleeping meanwhile. The VM sends in bursts (a script, then the
/// next one), and on this project's machine waking a thread that sleeps
/// in `read` costs more than a trivial script: a Port's round trip to a C
/// program that sleeps in `read` took 44.8–48.6 µs, and 8.1–22.0 µs
/// while the program kept a core busy (`bench/port_floor.exs`, two runs:
/// the machine has two modes). The core is given away whenever another
/// thread wants it.
pub fn await_input(fd: RawFd, until: Instant) {
    let mut ready = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    while Instant::now() < until {
        // SAFETY: one pollfd of this process, and no timeout. Bytes, the
        // pipe's end and an error all end the wait: the read that follows
        // tells them apart.
        if unsafe { libc::poll(&mut ready, 1, 0) } != 0 {
            return;
        }
        std::thread::yield_now();
    }
}

/// What a frame holds: an event, as `protocol.rs` encodes it.
pub trait IntoTerm {
    fn into_term(self) -> Term;
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

    /// Sends `frame` (a `protocol::Event`). A VM that is gone cannot be
    /// told anything: the process exits, as it would when its stdin closes.
    pub fn send(&self, frame: impl IntoTerm) {
        self.send_term(&frame.into_term());
    }

    fn send_term(&self, term: &Term) {
        let mut frame = Vec::with_capacity(4 + 1 + encoded_size_hint(term));
        frame.extend_from_slice(&[0; 4]);
        if term.encode(&mut frame).is_err() {
            return;
        }
        let length = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&length.to_be_bytes());
        let mut stdout = lock(&self.0);
        let large = Large::pipe(stdout.as_raw_fd(), frame.len());
        if stdout.write_all(&frame).is_err() {
            exit_now();
        }
        drop(large);
    }
}

/// A pipe grown to `LARGE_PIPE_BYTES` for one large frame, and shrunk
/// back when dropped, so that an idle session holds no large pipe buffer
/// in the kernel. Best effort: a pipe that cannot change keeps its size
/// until the next large frame (growing fails past the user's pipe quota;
/// shrinking fails while more than `PIPE_BYTES` wait in the pipe: a frame
/// the VM has not read yet, or the start of its next one).
pub(crate) struct Large(Option<RawFd>);

impl Large {
    pub(crate) fn pipe(fd: RawFd, frame_bytes: usize) -> Self {
        if frame_bytes <= PIPE_BYTES {
            return Self(None);
        }
        set_pipe_size(fd, LARGE_PIPE_BYTES);
        Self(Some(fd))
    }
}

impl Drop for Large {
    fn drop(&mut self) {
        if let Some(fd) = self.0 {
            set_pipe_size(fd, PIPE_BYTES);
        }
    }
}

fn set_pipe_size(fd: RawFd, bytes: usize) {
    // SAFETY: fcntl on a descriptor of this process; failure changes nothing.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes as libc::c_int) };
}

/// About how many bytes `term` encodes to: its binaries' bytes and a
/// little for everything else. Enough to size a frame's buffer once
/// rather than grow it (copying megabytes) while encoding.
fn encoded_size_hint(term: &Term) -> usize {
    match term {
        Term::Binary(binary) => binary.bytes.len() + 5,
        Term::Tuple(tuple) => 5 + tuple.elements.iter().map(encoded_size_hint).sum::<usize>(),
        Term::List(list) => 5 + list.elements.iter().map(encoded_size_hint).sum::<usize>(),
        _ => 16,
    }
}

/// Ends the process at once (the VM is gone): no destructors, no atexit
/// handlers, which a thread frozen inside the allocator could block.
pub fn exit_now() -> ! {
    // SAFETY: _exit is always safe to call.
    unsafe { libc::_exit(0) }
}

#[cfg(test)]
mod tests;
