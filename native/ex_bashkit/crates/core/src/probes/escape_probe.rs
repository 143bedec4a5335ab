//! Test builds only (cargo feature `escape_probe`, the
//! `ex_bashkit_worker_probe` executable): a builtin that does what a
//! script that took over its worker would, with raw system calls the
//! interpreter never makes, so the suite can attack the hardening from
//! inside (test/ex_bashkit/worker/escape_test.exs). Never in a release build: a
//! test checks the shipped worker for the marker below.
//!
//! `escape OP [ARG]` prints `allowed` or `denied <errno>`; an attempt the
//! seccomp filter finds fatal kills the worker instead.

use std::ffi::CString;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

use ex_bashkit_jail::syscalls;

/// Found in the probe executable, never in the shipped worker.
pub const MARKER: &str = "ex_bashkit escape probe: test builds only";

pub struct EscapeProbe;

#[async_trait]
impl Builtin for EscapeProbe {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let op = ctx.args.first().map(String::as_str).unwrap_or("");
        let arg = ctx.args.get(1).cloned().unwrap_or_default();
        let text = match op {
            "marker" => MARKER.to_string(),
            "sweep" => sweep(),
            _ => match attempt(op, &arg) {
                Some(outcome) => verdict(outcome),
                None => return Ok(ExecResult::err(format!("escape: unknown op {op}\n"), 2)),
            },
        };
        Ok(ExecResult::ok(format!("{text}\n")))
    }
}

fn verdict(outcome: libc::c_long) -> String {
    if outcome >= 0 {
        "allowed".into()
    } else {
        format!(
            "denied {}",
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        )
    }
}

fn c(text: &str) -> CString {
    CString::new(text).unwrap_or_default()
}

/// One raw attempt; its return value (`-1` and errno on failure).
fn attempt(op: &str, arg: &str) -> Option<libc::c_long> {
    let path = c(arg);
    let number = arg.parse::<i64>().unwrap_or(0);
    // SAFETY: each call gets valid pointers to our own buffers; what they
    // do to the process is the point of the probe.
    let outcome = unsafe {
        match op {
            "read" => {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
                if fd >= 0 {
                    let mut buffer = [0u8; 16];
                    let read = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
                    libc::close(fd);
                    read as libc::c_long
                } else {
                    -1
                }
            }
            "create" => {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o644);
                if fd >= 0 {
                    libc::write(fd, b"escaped\n".as_ptr().cast(), 8);
                    libc::close(fd);
                }
                fd.into()
            }
            "append" => {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_APPEND);
                if fd >= 0 {
                    libc::write(fd, b"escaped\n".as_ptr().cast(), 8);
                    libc::close(fd);
                }
                fd.into()
            }
            "list" => {
                let dir = libc::opendir(path.as_ptr());
                if dir.is_null() {
                    -1
                } else {
                    libc::closedir(dir);
                    0
                }
            }
            "connect" => connect(number as u16),
            "socket" => libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0).into(),
            "unix_socket" => libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0).into(),
            "fork" => libc::fork().into(),
            // clone for a new process, not a thread.
            "clone_process" => libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0),
            "exec" => {
                let shell = c("/bin/sh");
                let argv = [shell.as_ptr(), std::ptr::null()];
                libc::execv(shell.as_ptr(), argv.as_ptr()).into()
            }
            "ptrace" => libc::ptrace(libc::PTRACE_ATTACH, number as libc::pid_t, 0, 0),
            "signal" => libc::kill(number as libc::pid_t, libc::SIGCONT).into(),
            "mount" => libc::mount(
                c("none").as_ptr(),
                path.as_ptr(),
                c("tmpfs").as_ptr(),
                0,
                std::ptr::null(),
            )
            .into(),
            "bpf" => libc::syscall(libc::SYS_bpf, 0, 0, 0),
            "io_uring" => libc::syscall(libc::SYS_io_uring_setup, 8, 0),
            "unshare" => libc::unshare(libc::CLONE_NEWUSER).into(),
            "setuid" => libc::setuid(0).into(),
            "chmod" => libc::chmod(path.as_ptr(), 0o777).into(),
            "raise_limit" => {
                let limit = libc::rlimit {
                    rlim_cur: libc::RLIM_INFINITY,
                    rlim_max: libc::RLIM_INFINITY,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit).into()
            }
            _ => return None,
        }
    };
    Some(outcome)
}

/// A TCP connection to 127.0.0.1:`port`.
unsafe fn connect(port: u16) -> libc::c_long {
    let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
    if fd < 0 {
        return -1;
    }
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    let outcome = libc::connect(
        fd,
        (&address as *const libc::sockaddr_in).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    );
    let errno = std::io::Error::last_os_error();
    libc::close(fd);
    if outcome < 0 {
        // close may have changed errno.
        *libc::__errno_location() = errno.raw_os_error().unwrap_or(0);
    }
    outcome.into()
}

/// Calls the kernel runs past seccomp by design: x86_64's `uretprobe` and
/// `uprobe` (Linux 6.11+) only serve probes' trampolines and kill any other
/// caller with `SIGILL`, which is all they can do to a worker.
#[cfg(target_arch = "x86_64")]
const KERNEL_EXEMPT: &[libc::c_long] = &[335, 336];
#[cfg(not(target_arch = "x86_64"))]
const KERNEL_EXEMPT: &[libc::c_long] = &[];

/// Every system call number the filter should refuse, made with invalid
/// arguments: those that did not fail with `EPERM`, or `none`. The allowed,
/// conditional and fatal calls are left out (the latter would end the
/// probe); everything else, numbers no kernel defines included, must be
/// refused by the filter before the kernel sees it.
fn sweep() -> String {
    let skipped: Vec<libc::c_long> = syscalls::allowed()
        .chain(syscalls::CONDITIONAL.iter().copied())
        .chain(syscalls::UNSUPPORTED.iter().copied())
        .chain(syscalls::fatal())
        .map(|(_, number)| number)
        .collect();
    let mut leaks = Vec::new();
    let mut tried = 0;
    for number in 0..1024 {
        if skipped.contains(&number) || KERNEL_EXEMPT.contains(&number) {
            continue;
        }
        tried += 1;
        // SAFETY: the filter answers before the kernel reads an argument;
        // were it not to, every argument is invalid (-1).
        let outcome = unsafe { libc::syscall(number, -1i64, -1i64, -1i64, -1i64, -1i64, -1i64) };
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if outcome >= 0 || errno != libc::EPERM {
            leaks.push(format!("{number}:{errno}"));
        }
    }
    if leaks.is_empty() {
        format!("tried {tried}, leaks none")
    } else {
        format!("tried {tried}, leaks {}", leaks.join(","))
    }
}
