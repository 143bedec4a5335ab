//! The system calls a hardened worker may make: the one reviewed list.
//!
//! Everything not listed fails with `EPERM`; the calls in [`FATAL`] end the
//! worker at once (`SIGSYS`), since nothing but an attack makes them. The
//! list was taken from `strace -f -c` of workers running the Session
//! contract, CPython (wasmtime), host mounts and the network suites, then
//! reviewed by hand: a call is here because the interpreter, its allocator,
//! tokio or wasmtime needs it. Paths are not this filter's business
//! (Landlock's), so the file calls are allowed whole.

use libc::c_long;

/// Always allowed, whatever the session.
pub const ALLOWED: &[(&str, c_long)] = &[
    // Memory: the allocator, thread stacks, wasmtime's code and guard pages.
    ("brk", libc::SYS_brk),
    ("mmap", libc::SYS_mmap),
    ("munmap", libc::SYS_munmap),
    ("mprotect", libc::SYS_mprotect),
    ("mremap", libc::SYS_mremap),
    ("madvise", libc::SYS_madvise),
    ("membarrier", libc::SYS_membarrier),
    ("memfd_create", libc::SYS_memfd_create),
    ("ftruncate", libc::SYS_ftruncate),
    // Threads (clone only for threads: see `clone_rules`), futexes, signals.
    ("futex", libc::SYS_futex),
    ("set_robust_list", libc::SYS_set_robust_list),
    ("get_robust_list", libc::SYS_get_robust_list),
    ("rseq", libc::SYS_rseq),
    ("set_tid_address", libc::SYS_set_tid_address),
    ("gettid", libc::SYS_gettid),
    ("getpid", libc::SYS_getpid),
    ("getppid", libc::SYS_getppid),
    ("getuid", libc::SYS_getuid),
    ("geteuid", libc::SYS_geteuid),
    ("getgid", libc::SYS_getgid),
    ("getegid", libc::SYS_getegid),
    ("sched_yield", libc::SYS_sched_yield),
    ("sched_getaffinity", libc::SYS_sched_getaffinity),
    ("sched_getscheduler", libc::SYS_sched_getscheduler),
    ("sched_getparam", libc::SYS_sched_getparam),
    // runtime.rs moves a hogging thread of its own to SCHED_IDLE.
    ("sched_setscheduler", libc::SYS_sched_setscheduler),
    ("exit", libc::SYS_exit),
    ("exit_group", libc::SYS_exit_group),
    ("rt_sigaction", libc::SYS_rt_sigaction),
    ("rt_sigprocmask", libc::SYS_rt_sigprocmask),
    ("rt_sigreturn", libc::SYS_rt_sigreturn),
    ("sigaltstack", libc::SYS_sigaltstack),
    // Time.
    ("clock_gettime", libc::SYS_clock_gettime),
    ("clock_getres", libc::SYS_clock_getres),
    ("clock_nanosleep", libc::SYS_clock_nanosleep),
    ("nanosleep", libc::SYS_nanosleep),
    ("gettimeofday", libc::SYS_gettimeofday),
    // Descriptors: the channel to the VM, tokio's epoll, files of mounts.
    ("read", libc::SYS_read),
    ("write", libc::SYS_write),
    ("readv", libc::SYS_readv),
    ("writev", libc::SYS_writev),
    ("pread64", libc::SYS_pread64),
    ("pwrite64", libc::SYS_pwrite64),
    ("lseek", libc::SYS_lseek),
    ("close", libc::SYS_close),
    ("fcntl", libc::SYS_fcntl),
    ("dup", libc::SYS_dup),
    ("dup3", libc::SYS_dup3),
    ("epoll_create1", libc::SYS_epoll_create1),
    ("epoll_ctl", libc::SYS_epoll_ctl),
    ("epoll_pwait", libc::SYS_epoll_pwait),
    ("epoll_pwait2", libc::SYS_epoll_pwait2),
    ("eventfd2", libc::SYS_eventfd2),
    ("ppoll", libc::SYS_ppoll),
    ("pipe2", libc::SYS_pipe2),
    ("getrandom", libc::SYS_getrandom),
    // Files: only what Landlock lets through reaches anything.
    ("openat", libc::SYS_openat),
    // The host directories' reads (`host_tree.rs`): one call, kept beneath.
    ("openat2", libc::SYS_openat2),
    ("newfstatat", libc::SYS_newfstatat),
    ("fstat", libc::SYS_fstat),
    ("statx", libc::SYS_statx),
    ("fstatfs", libc::SYS_fstatfs),
    ("statfs", libc::SYS_statfs),
    ("faccessat", libc::SYS_faccessat),
    ("faccessat2", libc::SYS_faccessat2),
    ("getdents64", libc::SYS_getdents64),
    ("getcwd", libc::SYS_getcwd),
    ("readlinkat", libc::SYS_readlinkat),
    ("mkdirat", libc::SYS_mkdirat),
    ("unlinkat", libc::SYS_unlinkat),
    ("renameat", libc::SYS_renameat),
    ("renameat2", libc::SYS_renameat2),
    ("symlinkat", libc::SYS_symlinkat),
    ("fchmod", libc::SYS_fchmod),
    ("fchmodat", libc::SYS_fchmodat),
    ("utimensat", libc::SYS_utimensat),
    ("fsync", libc::SYS_fsync),
    ("fdatasync", libc::SYS_fdatasync),
    ("fallocate", libc::SYS_fallocate),
    ("copy_file_range", libc::SYS_copy_file_range),
    // Machine facts the runtime reads.
    ("sysinfo", libc::SYS_sysinfo),
    ("uname", libc::SYS_uname),
    ("getrusage", libc::SYS_getrusage),
];

/// The same on x86_64, which keeps the older call of each.
#[cfg(target_arch = "x86_64")]
pub const ALLOWED_X86_64: &[(&str, c_long)] = &[
    ("open", libc::SYS_open),
    ("stat", libc::SYS_stat),
    ("lstat", libc::SYS_lstat),
    ("access", libc::SYS_access),
    ("readlink", libc::SYS_readlink),
    ("mkdir", libc::SYS_mkdir),
    ("rmdir", libc::SYS_rmdir),
    ("unlink", libc::SYS_unlink),
    ("rename", libc::SYS_rename),
    ("symlink", libc::SYS_symlink),
    ("chmod", libc::SYS_chmod),
    ("poll", libc::SYS_poll),
    ("epoll_wait", libc::SYS_epoll_wait),
    ("dup2", libc::SYS_dup2),
    ("arch_prctl", libc::SYS_arch_prctl),
    ("time", libc::SYS_time),
];

#[cfg(not(target_arch = "x86_64"))]
pub const ALLOWED_X86_64: &[(&str, c_long)] = &[];

/// Allowed with conditions on their arguments (`hardening::seccomp`).
#[allow(dead_code)] // read by the escape probe's sweep, and a review list
pub const CONDITIONAL: &[(&str, c_long)] = &[
    // Threads only, never a new process.
    ("clone", libc::SYS_clone),
    // Thread names and mimalloc's mapping names; nothing else of prctl.
    ("prctl", libc::SYS_prctl),
    // Reading this process's limits; the CPU limit is set before each exec.
    ("prlimit64", libc::SYS_prlimit64),
    ("setrlimit", libc::SYS_setrlimit),
    // A panic's abort signals its own thread.
    ("tgkill", libc::SYS_tgkill),
    // FIONBIO/FIOCLEX on descriptors, and isatty's TCGETS.
    ("ioctl", libc::SYS_ioctl),
];

/// Answered `ENOSYS`, so that glibc falls back to a call this filter can
/// see into: clone3 passes its flags in memory, out of a filter's reach.
pub const UNSUPPORTED: &[(&str, c_long)] = &[("clone3", libc::SYS_clone3)];

/// Nothing but an attack makes these: the worker is killed on the spot.
pub const FATAL: &[(&str, c_long)] = &[
    ("execve", libc::SYS_execve),
    ("execveat", libc::SYS_execveat),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("process_madvise", libc::SYS_process_madvise),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsmount", libc::SYS_fsmount),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
];

/// The same on x86_64.
#[cfg(target_arch = "x86_64")]
pub const FATAL_X86_64: &[(&str, c_long)] = &[("fork", libc::SYS_fork), ("vfork", libc::SYS_vfork)];

#[cfg(not(target_arch = "x86_64"))]
pub const FATAL_X86_64: &[(&str, c_long)] = &[];

/// Every allowed call. None opens or uses a socket: a worker has no
/// network, its requests go through the host (`worker/egress.rs`).
pub fn allowed() -> impl Iterator<Item = (&'static str, c_long)> {
    ALLOWED.iter().chain(ALLOWED_X86_64).copied()
}

/// Every fatal call.
pub fn fatal() -> impl Iterator<Item = (&'static str, c_long)> {
    FATAL.iter().chain(FATAL_X86_64).copied()
}
