//! The zygote: a worker process loaded once, which forks the workers of
//! `isolation: :process` sessions, so that a fresh worker costs a fork
//! rather than an exec of this 80 MB executable (70,000 relocations, its
//! first page faults, a first interpreter built to warm it).
//!
//! A worker is still a Port of the VM: the VM starts the small launcher
//! (`bin/ex_bashkit_worker_stub.rs`) as the Port, and the launcher hands
//! its two pipe ends to the zygote over a Unix socket (`SCM_RIGHTS`). The
//! zygote forks; the child takes the pipe ends as its stdin and stdout and
//! runs as any worker does (`worker::run`). The launcher stays until the
//! child is reaped and exits with the child's status, so the VM sees the
//! Port end as it sees a worker's.
//!
//! One message each way on a `SOCK_SEQPACKET` connection:
//!
//! | from the launcher                       | from the zygote                 |
//! |-----------------------------------------|---------------------------------|
//! | the worker's arguments, NUL-separated, with its stdin and stdout | the child's pid (4 bytes, little-endian) |
//! |                                         | the child's wait status (4 bytes, little-endian), when it is reaped |
//!
//! The zygote kills a child whose launcher is gone (the VM killed or closed
//! the Port): only the zygote reaps its children, so the pid it signals is
//! never one the kernel gave to another process. It exits when the VM
//! closes its stdin, and with its parent (`PR_SET_PDEATHSIG`); its children
//! die with it the same way.
//!
//! Who may ask for a worker: a process of this user whose parent is the
//! zygote's own parent (the VM's port launcher, `erl_child_setup`), as the
//! VM's Ports are.

mod address;

use std::collections::HashMap;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// Without destructors: the children's pipes are not ours to flush.
use crate::frame::exit_now;

/// How many bytes of arguments a request may carry.
const MAX_REQUEST: usize = 16 * 1024;

/// Serves fork requests on the abstract Unix socket `name` until the VM
/// closes stdin. Forked children return from this function (with their
/// arguments); the zygote itself never does.
pub fn serve(name: &str) -> Vec<String> {
    match Zygote::bind(name) {
        Ok(mut zygote) => {
            // The VM's one frame from the zygote ({:packet, 4}): it may
            // hand out its name.
            let ready = [0, 0, 0, 1, b'r'];
            // SAFETY: writes `ready`'s 5 bytes to the Port's pipe.
            unsafe { libc::write(1, ready.as_ptr().cast(), ready.len()) };
            zygote.run()
        }
        // The launchers find no zygote and start full workers instead.
        Err(_) => exit_now(),
    }
}

struct Zygote {
    listener: OwnedFd,
    children: OwnedFd,
    /// Each child not yet reaped, and its launcher's connection (`None`
    /// once the launcher is gone and the child was killed).
    launchers: HashMap<libc::pid_t, Option<OwnedFd>>,
    /// The zygote's parent, which launchers must share, and the zygote.
    parent: libc::pid_t,
    pid: libc::pid_t,
}

impl Zygote {
    fn bind(name: &str) -> io::Result<Zygote> {
        let listener = socket()?;
        let (address, length) = address::abstract_address(name.as_bytes())
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `address` is a valid sockaddr_un of `length` bytes.
        check(unsafe {
            libc::bind(
                listener.as_raw_fd(),
                &address as *const libc::sockaddr_un as *const libc::sockaddr,
                length,
            )
        })?;
        check(unsafe { libc::listen(listener.as_raw_fd(), 128) })?;
        Ok(Zygote {
            listener,
            children: children_signal()?,
            launchers: HashMap::new(),
            // SAFETY: plain syscalls.
            parent: unsafe { libc::getppid() },
            pid: unsafe { libc::getpid() },
        })
    }

    fn run(&mut self) -> Vec<String> {
        loop {
            let connections: Vec<(libc::pid_t, RawFd)> = self
                .launchers
                .iter()
                .filter_map(|(pid, fd)| Some((*pid, fd.as_ref()?.as_raw_fd())))
                .collect();
            let mut polled: Vec<libc::pollfd> = [0, self.listener.as_raw_fd()]
                .into_iter()
                .chain([self.children.as_raw_fd()])
                .chain(connections.iter().map(|(_, fd)| *fd))
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: `polled` is a valid array of pollfd of that length.
            if unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, -1) } < 0 {
                continue;
            }
            if polled[0].revents != 0 && vm_gone() {
                exit_now();
            }
            if polled[2].revents != 0 {
                self.reap();
            }
            for (polled, (pid, _)) in polled[3..].iter().zip(&connections) {
                if polled.revents != 0 {
                    // A launcher sends nothing after its request: it is gone.
                    // SAFETY: `pid` is our child, not yet reaped.
                    unsafe { libc::kill(*pid, libc::SIGKILL) };
                    self.launchers.insert(*pid, None);
                }
            }
            if polled[1].revents != 0 {
                if let Some(args) = self.accept() {
                    return args;
                }
            }
        }
    }

    /// Answers one request; in the forked child, returns its arguments.
    fn accept(&mut self) -> Option<Vec<String>> {
        // SAFETY: a plain syscall on our listening socket.
        let fd = unsafe {
            libc::accept4(
                self.listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: accept4 gave us this descriptor.
        let connection = unsafe { OwnedFd::from_raw_fd(fd) };
        if !self.trusted(&connection) {
            return None;
        }
        let (args, pipes) = receive(&connection).ok()?;
        // SAFETY: this process has one thread, so the child may run
        // anything; fork's errors are answered by dropping the request.
        match unsafe { libc::fork() } {
            0 => Some(self.become_worker(args, pipes, connection)),
            pid if pid > 0 => {
                drop(pipes);
                send_u32(&connection, pid as u32);
                self.launchers.insert(pid, Some(connection));
                None
            }
            _ => None,
        }
    }

    /// A launcher is one of the VM's Ports: this user's, and a child of the
    /// process that started the zygote.
    fn trusted(&self, connection: &OwnedFd) -> bool {
        // SAFETY: `credentials` is written by getsockopt, of that size.
        let mut credentials: libc::ucred = unsafe { zeroed() };
        let mut length = size_of::<libc::ucred>() as libc::socklen_t;
        let got = unsafe {
            libc::getsockopt(
                connection.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut credentials as *mut libc::ucred).cast(),
                &mut length,
            )
        };
        // SAFETY: a plain syscall.
        got == 0
            && credentials.uid == unsafe { libc::getuid() }
            && parent_of(credentials.pid) == Some(self.parent)
    }

    fn become_worker(&mut self, args: Vec<String>, pipes: [OwnedFd; 2], _: OwnedFd) -> Vec<String> {
        // SAFETY: plain syscalls on this (single-threaded) child; the rest
        // of the zygote's descriptors close in the worker's clean start.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != self.pid {
                exit_now();
            }
            libc::dup2(pipes[0].as_raw_fd(), 0);
            libc::dup2(pipes[1].as_raw_fd(), 1);
            let mut unblocked: libc::sigset_t = zeroed();
            libc::sigemptyset(&mut unblocked);
            libc::sigprocmask(libc::SIG_SETMASK, &unblocked, std::ptr::null_mut());
        }
        self.launchers.clear();
        args
    }

    /// Reaps every child that ended and tells its launcher how.
    fn reap(&mut self) {
        let mut info: libc::signalfd_siginfo = unsafe { zeroed() };
        // SAFETY: drains the signalfd into `info`, of its record size.
        while unsafe {
            libc::read(
                self.children.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size_of::<libc::signalfd_siginfo>(),
            )
        } > 0
        {}
        loop {
            let mut status = 0;
            // SAFETY: a plain syscall.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            if let Some(Some(connection)) = self.launchers.remove(&pid) {
                send_u32(&connection, status as u32);
            }
        }
    }
}

/// The VM closed the zygote's stdin (or it can no longer be read).
fn vm_gone() -> bool {
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into `byte`.
    unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) <= 0 }
}

/// SIGCHLD as a descriptor to poll: blocked, and read from a signalfd.
fn children_signal() -> io::Result<OwnedFd> {
    // SAFETY: plain syscalls on a set of ours; the process has one thread.
    unsafe {
        let mut set: libc::sigset_t = zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        check(libc::sigprocmask(
            libc::SIG_BLOCK,
            &set,
            std::ptr::null_mut(),
        ))?;
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        check(fd)?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Receives a request: the arguments and the two descriptors.
fn receive(connection: &OwnedFd) -> io::Result<(Vec<String>, [OwnedFd; 2])> {
    let mut buffer = vec![0u8; MAX_REQUEST];
    // Room for two descriptors, as CMSG_SPACE computes it.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: a zeroed msghdr is valid; its pointers are set to our buffers.
    let mut message: libc::msghdr = unsafe { zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = size_of::<[u64; 8]>();
    // SAFETY: `message` describes buffers we own for the call's duration.
    let length =
        unsafe { libc::recvmsg(connection.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) };
    check(length as libc::c_int)?;
    let mut fds = Vec::new();
    // SAFETY: walking the control messages recvmsg wrote, with the
    // kernel's own macros.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let count =
                    ((*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / size_of::<RawFd>();
                let data = libc::CMSG_DATA(header) as *const RawFd;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    let invalid = || io::Error::from(io::ErrorKind::InvalidData);
    if message.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(invalid());
    }
    let pipes: [OwnedFd; 2] = fds.try_into().map_err(|_| invalid())?;
    let args = buffer[..length as usize]
        .split(|&byte| byte == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8(arg.to_vec()).map_err(|_| invalid()))
        .collect::<io::Result<Vec<String>>>()?;
    Ok((args, pipes))
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: a plain syscall.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    check(fd)?;
    // SAFETY: socket gave us this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One of the zygote's replies: 4 bytes, little-endian. A launcher that is
/// gone reads nothing, and needs nothing.
fn send_u32(connection: &OwnedFd, value: u32) {
    let reply = value.to_le_bytes();
    // SAFETY: `reply` is 4 readable bytes.
    unsafe {
        libc::send(
            connection.as_raw_fd(),
            reply.as_ptr().cast(),
            reply.len(),
            libc::MSG_NOSIGNAL,
        )
    };
}

/// A process's parent, from `/proc/<pid>/stat`.
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last `)`.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split(' ').nth(1)?.parse().ok()
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
