//! Frames across a real pipe: a frame larger than the pipe's capacity,
//! and the pipe grown for it and shrunk after.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{Large, LARGE_PIPE_BYTES, PIPE_BYTES};
use eetf::Term;

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills `fds` with two new descriptors we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just made and are owned once.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn pipe_size(fd: &OwnedFd) -> usize {
    // SAFETY: F_GETPIPE_SZ on a pipe this test owns.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) as usize }
}

#[test]
fn a_pipe_grows_for_a_large_frame_only_and_shrinks_after() {
    let (read, _write) = pipe();
    let small = Large::pipe(read.as_raw_fd(), PIPE_BYTES);
    assert_eq!(pipe_size(&read), PIPE_BYTES);
    drop(small);
    let large = Large::pipe(read.as_raw_fd(), 10 << 20);
    assert_eq!(pipe_size(&read), LARGE_PIPE_BYTES);
    drop(large);
    assert_eq!(pipe_size(&read), PIPE_BYTES);
}

#[test]
fn a_frame_larger_than_the_pipe_is_read_whole_and_the_next_one_after_it() {
    let (read, write) = pipe();
    let big = Term::Binary(eetf::Binary::from(vec![7u8; 3 << 20]));
    let next = Term::Binary(eetf::Binary::from(&b"next"[..]));
    let mut bytes = Vec::new();
    for term in [&big, &next] {
        let mut body = Vec::new();
        term.encode(&mut body).unwrap();
        bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&body);
    }
    let writer = std::thread::spawn(move || File::from(write).write_all(&bytes));
    let fd = read.as_raw_fd();
    let mut input = io::BufReader::with_capacity(PIPE_BYTES, File::from(read));
    assert_eq!(super::read(&mut input, fd).unwrap(), Some(big));
    assert_eq!(super::read(&mut input, fd).unwrap(), Some(next));
    writer.join().unwrap().unwrap();
    assert_eq!(super::read(&mut input, fd).unwrap(), None);
}

/// A term as `Outbox` encodes it: a small binary stands for an event.
struct Text(&'static [u8]);

impl super::IntoTerm for Text {
    fn into_term(self) -> Term {
        Term::Binary(eetf::Binary::from(self.0))
    }
}

fn outbox() -> (std::sync::Arc<super::Outbox>, io::BufReader<File>, i32) {
    let (read, write) = pipe();
    let fd = read.as_raw_fd();
    let outbox = std::sync::Arc::new(super::Outbox::new(File::from(write)));
    (outbox, io::BufReader::new(File::from(read)), fd)
}

fn text(bytes: &[u8]) -> Option<Term> {
    Some(Term::Binary(eetf::Binary::from(bytes)))
}

#[test]
fn a_held_frame_goes_out_with_the_next_frame_and_before_it() {
    let (outbox, mut input, fd) = outbox();
    outbox.hold(Text(b"held"));
    outbox.send(Text(b"next"));
    // Both are in the pipe as soon as `send` returns, long before the
    // holder's time is up: length, version, tag, size, 4 bytes, twice.
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD on a pipe this test owns, into a live int.
    assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut waiting) }, 0);
    assert_eq!(waiting as usize, 2 * (4 + 1 + 1 + 4 + 4));
    assert_eq!(super::read(&mut input, fd).unwrap(), text(b"held"));
    assert_eq!(super::read(&mut input, fd).unwrap(), text(b"next"));
}

#[test]
fn a_held_frame_goes_out_on_its_own_when_nothing_follows() {
    let (outbox, mut input, fd) = outbox();
    for round in 0..3 {
        // The first round starts the holder thread, the later ones wake it.
        let started = std::time::Instant::now();
        outbox.hold(Text(b"alone"));
        assert_eq!(super::read(&mut input, fd).unwrap(), text(b"alone"));
        assert!(started.elapsed() >= super::HOLD_AT_MOST, "round {round}");
    }
}

#[test]
fn no_frame_is_lost_or_torn_when_threads_hold_and_send_at_once() {
    let (outbox, mut input, fd) = outbox();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let outbox = outbox.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    if i % 2 == 0 {
                        outbox.hold(Text(b"held"));
                    } else {
                        outbox.send(Text(b"sent"));
                    }
                }
            })
        })
        .collect();
    let (mut held, mut sent) = (0, 0);
    for _ in 0..800 {
        match super::read(&mut input, fd).unwrap() {
            Some(term) if Some(&term) == text(b"held").as_ref() => held += 1,
            Some(term) if Some(&term) == text(b"sent").as_ref() => sent += 1,
            other => panic!("unexpected frame {other:?}"),
        }
    }
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!((held, sent), (400, 400));
}
