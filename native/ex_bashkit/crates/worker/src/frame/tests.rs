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
