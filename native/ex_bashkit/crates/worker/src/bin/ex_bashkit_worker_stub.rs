//! The launcher of a worker forked by the zygote (`src/zygote.rs`): the
//! small process the VM starts as a worker's Port.
//!
//! `ex_bashkit_worker_stub --zygote=NAME --worker=PATH ARGS...` hands its
//! stdin and stdout (the Port's pipes) and `ARGS` to the zygote listening on
//! the abstract Unix socket `NAME`, which forks a worker on them; then it
//! waits for that worker to end and ends the same way (its exit status, or
//! the same signal), so the VM sees the Port end as it sees a worker's.
//! Without a zygote to answer, it becomes the worker itself: `exec PATH
//! ARGS...`.
//!
//! It links nothing but the standard library and libc: an exec of it must
//! cost a fraction of an exec of the worker.

#[path = "../zygote/address.rs"]
mod address;

use std::ffi::{CString, OsString};
use std::io;
use std::mem::{size_of, zeroed};
use std::os::unix::ffi::OsStrExt;

fn main() {
    // SAFETY: a plain syscall on this process: it dies with the VM.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mut zygote = None;
    let mut worker = None;
    let mut args: Vec<OsString> = Vec::new();
    for arg in std::env::args_os().skip(1) {
        let bytes = arg.as_bytes();
        if let Some(name) = bytes.strip_prefix(b"--zygote=") {
            zygote = Some(name.to_vec());
        } else if let Some(path) = bytes.strip_prefix(b"--worker=") {
            worker = Some(path.to_vec());
        } else {
            args.push(arg);
        }
    }
    let Some(worker) = worker else {
        std::process::exit(2)
    };
    if let Some(name) = zygote {
        if let Ok(socket) = connect(&name) {
            if let Ok(status) = forked(socket, &args) {
                end_as(status)
            }
        }
    }
    become_worker(&worker, &args)
}

/// Asks the zygote for a worker on this process's stdin and stdout, and
/// waits for its wait status. An error before the zygote answered with the
/// worker's pid leaves the pipes to this process.
fn forked(socket: libc::c_int, args: &[OsString]) -> io::Result<u32> {
    let mut request = Vec::new();
    for arg in args {
        request.extend_from_slice(arg.as_bytes());
        request.push(0);
    }
    send_with_pipes(socket, &request)?;
    receive_u32(socket)?;
    // The worker has the pipes now: the VM must see them close when it ends.
    // SAFETY: plain syscalls on this process's descriptors.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        libc::dup2(null, 0);
        libc::dup2(null, 1);
    }
    // The zygote gone (with it, the worker: its parent-death signal): as
    // if killed.
    Ok(receive_u32(socket).unwrap_or(libc::SIGKILL as u32))
}

fn connect(name: &[u8]) -> io::Result<libc::c_int> {
    let (address, length) = address::abstract_address(name)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: plain syscalls; `address` is a valid sockaddr_un of `length`
    // bytes.
    unsafe {
        let socket = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let address = &address as *const libc::sockaddr_un as *const libc::sockaddr;
        if libc::connect(socket, address, length) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }
}

fn send_with_pipes(socket: libc::c_int, request: &[u8]) -> io::Result<()> {
    let fds: [libc::c_int; 2] = [0, 1];
    // Room for two descriptors, as CMSG_SPACE computes it.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: request.as_ptr() as *mut libc::c_void,
        iov_len: request.len(),
    };
    // SAFETY: `message` points at our buffers for the call's duration; the
    // control message is written with the kernel's own macros, inside
    // `control`.
    unsafe {
        let mut message: libc::msghdr = zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(size_of::<[libc::c_int; 2]>() as u32) as usize;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<[libc::c_int; 2]>() as u32) as usize;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header) as *mut libc::c_int, 2);
        if libc::sendmsg(socket, &message, libc::MSG_NOSIGNAL) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn receive_u32(socket: libc::c_int) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    // SAFETY: reads at most 4 bytes into `bytes`.
    let read = unsafe { libc::recv(socket, bytes.as_mut_ptr().cast(), 4, 0) };
    if read == 4 {
        Ok(u32::from_le_bytes(bytes))
    } else {
        Err(io::Error::from(io::ErrorKind::UnexpectedEof))
    }
}

/// Ends this process as the worker ended: its exit code, or its signal.
fn end_as(status: u32) -> ! {
    let status = status as libc::c_int;
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status))
    }
    let signal = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        libc::SIGKILL
    };
    // SAFETY: plain syscalls on this process: no core file, the signal's
    // default action.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}

fn become_worker(worker: &[u8], args: &[OsString]) -> ! {
    let path = CString::new(worker).unwrap_or_default();
    let argv: Vec<CString> = std::iter::once(path.clone())
        .chain(
            args.iter()
                .filter_map(|arg| CString::new(arg.as_bytes()).ok()),
        )
        .collect();
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|arg| arg.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: `pointers` is a NULL-terminated array of C strings we own.
    unsafe { libc::execv(path.as_ptr(), pointers.as_ptr()) };
    std::process::exit(127)
}
