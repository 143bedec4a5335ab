//! A child program's answers read by a thread of the VM, not by a Port:
//! the thread looks for bytes without sleeping for a while after each
//! answer, as a worker's reader does (crates/worker/src/frame.rs), and
//! sends them to the caller with `enif_send`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustler::{Binary, Encoder, LocalPid, NifResult, OwnedBinary, OwnedEnv, Resource, ResourceArc};

mod atoms {
    rustler::atoms! { ok, answer }
}

/// How long the reader looks for bytes without sleeping after an answer.
const SPIN: Duration = Duration::from_micros(200);

pub struct Channel {
    stdin: Mutex<ChildStdin>,
    child: Mutex<Child>,
}

#[rustler::resource_impl]
impl Resource for Channel {}

impl Drop for Channel {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Starts `program` with `mode`; each answer it writes is sent to `to` as
/// `{:answer, bytes}`.
#[rustler::nif]
fn open(program: String, mode: String, to: LocalPid) -> NifResult<ResourceArc<Channel>> {
    let mut child = Command::new(program)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| rustler::Error::Term(Box::new(e.to_string())))?;
    let stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let fd = stdout.as_raw_fd();
        let mut buffer = [0u8; 4096];
        let mut env = OwnedEnv::new();
        let mut last = Instant::now();
        loop {
            let mut ready = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd of this process.
            while last.elapsed() < SPIN && unsafe { libc::poll(&mut ready, 1, 0) } == 0 {
                std::thread::yield_now();
            }
            let n = match stdout.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            last = Instant::now();
            let bytes = &buffer[..n];
            let sent = env.send_and_clear(&to, |env| {
                let mut binary = OwnedBinary::new(bytes.len());
                binary.as_mut_slice().copy_from_slice(bytes);
                (atoms::answer(), binary.release(env)).encode(env)
            });
            if sent.is_err() {
                return;
            }
        }
    });
    Ok(ResourceArc::new(Channel {
        stdin: Mutex::new(stdin),
        child: Mutex::new(child),
    }))
}

/// Writes `data` to the program's stdin.
#[rustler::nif]
fn send(channel: ResourceArc<Channel>, data: Binary) -> rustler::Atom {
    let _ = channel.stdin.lock().unwrap().write_all(data.as_slice());
    atoms::ok()
}

rustler::init!("Elixir.ChannelFloor");
