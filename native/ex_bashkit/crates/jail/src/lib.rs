//! OS hardening of worker processes: what a script that took over its
//! worker (a bug in bashkit or in our code) still cannot do; and
//! [`host_tree`], a host directory no path leaves, for the mounts of
//! sessions in the VM.
//!
//! Each layer is applied once per worker, before any script runs, and
//! reported to the VM as in force or missing with the reason
//! (`ExBashkit.Worker`, `Session.info/1`'s `:layers`):
//!
//! | layer                | what it takes away                                        |
//! |----------------------|-----------------------------------------------------------|
//! | `:network_namespace` | every network, loopback services of the host included (`:allow_net` requests go through the host); SysV IPC too |
//! | `:cgroup`            | memory and threads past the kernel's caps (a VM running as root) |
//! | `:rlimits`           | core dumps, big files, many descriptors, runaway CPU      |
//! | `:unprivileged_user` | root: a root host's workers run as `worker_user`          |
//! | `:no_new_privs`      | gaining privileges through exec                            |
//! | `:landlock`          | every file but the session's mounts; every TCP connection; signals out |
//! | `:seccomp`           | every system call not on the reviewed list (`syscalls.rs`) |
//!
//! Namespaces need a process with one thread, so they are made when the
//! worker starts (a spare does it ahead of its session); the rest needs the
//! session's options (its mounts, its limits) and is applied on `{:new, …}`,
//! still on the only thread, before the interpreter starts its own.

mod cgroup;
mod landlock;
pub mod seccomp;
pub mod syscalls;

pub mod host_tree;

use std::ffi::CString;
use std::time::Duration;

use ex_bashkit_protocol::options::Mount;

/// How a worker was started (its command line, from `ExBashkit.Worker`).
#[derive(Debug, Clone)]
pub struct Plan {
    /// `--harden=off` turns every layer off (for measurements).
    pub enabled: bool,
    /// `--user=UID:GID`: who a worker started as root becomes.
    pub user: Option<(u32, u32)>,
}

impl Plan {
    pub fn from_args(args: impl Iterator<Item = String>) -> Plan {
        let mut plan = Plan {
            enabled: true,
            user: None,
        };
        for arg in args {
            match arg.split_once('=') {
                Some(("--harden", value)) => plan.enabled = value != "off",
                Some(("--user", value)) => {
                    plan.user = value
                        .split_once(':')
                        .and_then(|(uid, gid)| Some((uid.parse().ok()?, gid.parse().ok()?)))
                }
                _ => {}
            }
        }
        plan
    }
}

/// Why a layer is missing, one variant per cause; `Display` is the reason
/// the worker reports to the VM (`{:missing, reason}` in the session's
/// `:layers`).
#[derive(Debug, thiserror::Error)]
pub enum HardeningError {
    #[error("unshare: {0} (user namespaces disabled?)")]
    Namespaces(std::io::Error),
    #[error("setrlimit: {0}")]
    Rlimit(std::io::Error),
    #[error("the VM runs as root and worker_user is :keep")]
    RootKept,
    #[error("worker_user names root")]
    UserIsRoot,
    #[error("cannot become {uid}:{gid}: {error}")]
    User {
        uid: u32,
        gid: u32,
        error: std::io::Error,
    },
    #[error("{0}")]
    NoNewPrivs(std::io::Error),
    /// The cgroup could not be made, entered or capped (`hardening/cgroup.rs`).
    #[error("{0}")]
    Cgroup(String),
    /// The kernel or the ruleset refused Landlock (`hardening/landlock.rs`).
    #[error("{0}")]
    Landlock(String),
    /// The filters could not be compiled or installed (`hardening/seccomp.rs`).
    #[error("{0}")]
    Seccomp(String),
}

/// Each layer, in force (`Ok`) or missing with the reason, and the cgroup
/// directories made for the worker (which the VM removes after it).
#[derive(Debug, Default)]
pub struct Report {
    pub layers: Vec<(&'static str, Result<(), HardeningError>)>,
    pub cgroups: Vec<std::path::PathBuf>,
    /// The seccomp filters, compiled as the worker starts (a spare does it
    /// ahead of its session): the plan says whether it has the network.
    filters: Option<Result<Vec<seccompiler::BpfProgram>, String>>,
    /// The worker's cgroup, entered as it starts, capped for its session.
    cgroup: Option<Result<Vec<std::path::PathBuf>, String>>,
}

impl Report {
    fn record(&mut self, layer: &'static str, outcome: Result<(), HardeningError>) {
        self.layers.push((layer, outcome));
    }
}

/// Threads a worker may have: its interpreter's, the runtime's blocking
/// pool and wasmtime's, with room to spare; no process can be forked.
const PIDS_MAX: u64 = 256;

/// The steps taken while the worker has a single thread, as it starts:
/// a clean slate (no environment, no descriptors but the pipe to the VM,
/// `/` as working directory, stderr to `/dev/null`), then its namespaces.
pub fn at_start(plan: &Plan) -> Report {
    let mut report = Report::default();
    clean_start();
    if !plan.enabled {
        return report;
    }
    report.record("network_namespace", unshare_network());
    report.filters = Some(seccomp::programs());
    report.cgroup = Some(cgroup::enter(PIDS_MAX));
    report
}

/// Work done once in a zygote rather than in each worker it forks: the
/// seccomp filters, compiled.
pub fn prepare() {
    let _ = seccomp::programs();
}

/// What a session needs of its worker (`SessionOptions::worker_needs`).
pub struct Needs<'a> {
    pub mounts: &'a [Mount],
    /// What the session may hold: each script's cap, and its files.
    pub script_bytes: u64,
    pub files_bytes: u64,
    /// The largest file a script may write (`:max_file_bytes`), if set.
    pub file_bytes: Option<u64>,
    /// CPython's WebAssembly guest (wasmtime) runs in it.
    pub python_vm: bool,
}

/// What a worker hardened ahead of its session (a spare) was hardened for:
/// sessions without mounts, whose other needs are these.
/// A session that needs anything else cannot use it: landlock and the
/// limits only ever narrow, and the worker is no longer root to widen them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    script_bytes: u64,
    files_bytes: u64,
    file_bytes: Option<u64>,
    python_vm: bool,
}

impl Needs<'_> {
    /// The fit of a worker hardened for these needs, if one can be.
    pub fn fit(&self) -> Option<Fit> {
        self.mounts.is_empty().then_some(Fit {
            script_bytes: self.script_bytes,
            files_bytes: self.files_bytes,
            file_bytes: self.file_bytes,
            python_vm: self.python_vm,
        })
    }
}

/// The layers that depend on the session, applied before it is built.
pub fn for_session(plan: &Plan, needs: &Needs, report: &mut Report) {
    if !plan.enabled {
        return;
    }
    let cgroup = report
        .cgroup
        .take()
        .unwrap_or_else(|| cgroup::enter(PIDS_MAX));
    let capped = cgroup.and_then(|dirs| {
        report.cgroups = dirs;
        cgroup::cap_memory(&report.cgroups, memory_max(needs))
    });
    report.record("cgroup", capped.map_err(HardeningError::Cgroup));
    report.record("rlimits", rlimits(needs));
    report.record(
        "unprivileged_user",
        unprivileged_user(writer(needs.mounts, plan.user).or(plan.user)),
    );
    report.record("no_new_privs", no_new_privs());
    let landlock = landlock::apply(needs.mounts).map(|_| ());
    report.record("landlock", landlock.map_err(HardeningError::Landlock));
    let filters = report.filters.take().unwrap_or_else(seccomp::programs);
    report.record(
        "seccomp",
        filters
            .and_then(|filters| seccomp::apply(&filters))
            .map_err(HardeningError::Seccomp),
    );
    ENABLED.store(true, std::sync::atomic::Ordering::Relaxed);
}

static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Behind a script's own deadline, the kernel's: the worker may spend this
/// much more CPU time (on all its threads) before it is killed with
/// `SIGXCPU`, should the VM's kill never come.
pub fn cpu_backstop(timeout: Duration) {
    if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is ours and fully written by getrusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return;
    }
    let used = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) as u64 + 1;
    let limit = libc::rlimit {
        rlim_cur: used + 4 * timeout.as_secs() + 30,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a plain syscall on this process with a limit of ours.
    unsafe { libc::setrlimit(libc::RLIMIT_CPU, &limit) };
}

/// A clean slate: no environment, no descriptors but the pipe to the VM,
/// `/` as working directory, stderr to `/dev/null`.
pub fn clean_start() {
    // SAFETY: the process has one thread; these touch only itself.
    unsafe {
        libc::clearenv();
        // Everything but the pipe to the VM (0, 1) and stderr, which goes
        // nowhere: a worker's panics and scripts never reach the VM's log.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let null = CString::new("/dev/null").unwrap();
        let fd = libc::open(null.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::dup2(fd, 2);
            libc::close(fd);
        }
        let root = CString::new("/").unwrap();
        libc::chdir(root.as_ptr());
        libc::umask(0o022);
    }
}

/// An empty network namespace (no interface but a loopback of its own,
/// down) and an IPC namespace. Root makes them directly; anyone else in a
/// user namespace of its own, which holds no right on the host.
fn unshare_network() -> Result<(), HardeningError> {
    let namespaces = libc::CLONE_NEWNET | libc::CLONE_NEWIPC;
    // SAFETY: plain syscalls; the process has one thread, as unshare needs.
    let flags = if unsafe { libc::geteuid() } == 0 {
        namespaces
    } else {
        libc::CLONE_NEWUSER | namespaces
    };
    if unsafe { libc::unshare(flags) } == 0 {
        Ok(())
    } else {
        Err(HardeningError::Namespaces(std::io::Error::last_os_error()))
    }
}

/// The kernel's cap on the worker's memory, above what the session may
/// hold (scripts, files) so that the interpreter's own caps answer first.
fn memory_max(needs: &Needs) -> u64 {
    let python_vm = if needs.python_vm { 2u64 << 30 } else { 0 };
    (2 * needs.script_bytes)
        .saturating_add(needs.files_bytes)
        .saturating_add(256 << 20)
        .saturating_add(python_vm)
}

fn rlimits(needs: &Needs) -> Result<(), HardeningError> {
    // Past this size a write fails (EFBIG) instead of killing the process.
    // SAFETY: ignoring a signal.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    // wasmtime backs a guest's memory (up to 4 GiB) with a memfd, which the
    // file size limit bounds too, and reserves several GiB of address space
    // for it; a worker without it peaks near 3 GiB of address space.
    let (file_bytes, address_space) = if needs.python_vm {
        (8u64 << 30, 64u64 << 30)
    } else {
        let file_bytes = needs.file_bytes.unwrap_or(64 << 20);
        (file_bytes.max(1 << 20), 16u64 << 30)
    };
    let limits = [
        (libc::RLIMIT_CORE, 0),
        (libc::RLIMIT_NOFILE, 256),
        (libc::RLIMIT_FSIZE, file_bytes),
        (libc::RLIMIT_MEMLOCK, 0),
        (libc::RLIMIT_MSGQUEUE, 0),
        (libc::RLIMIT_AS, address_space),
    ];
    for (resource, value) in limits {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: a plain syscall on this process with a limit of ours.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(HardeningError::Rlimit(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Who writes a session's `:read_write` mounts: their owner, so that what
/// a script writes there is the owner's as in the user's own shell. Only
/// for mounts that share one owner other than root (`new/1` refuses the
/// rest, `ExBashkit.Session.Options.Filesystem`); else `None`, and the
/// worker is `worker_user`. The group is the directory's, unless that is
/// root's: then `worker_user`'s.
fn writer(mounts: &[Mount], worker_user: Option<(u32, u32)>) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut owners = mounts
        .iter()
        .filter(|(_, _, mode)| mode.writable())
        .map(|(_, host, _)| std::fs::metadata(host).map(|m| (m.uid(), m.gid())).ok());
    let first = owners.next()??;
    let shared = owners.all(|owner| owner == Some(first));
    let (uid, gid) = first;
    let gid = match gid {
        0 => worker_user?.1,
        gid => gid,
    };
    (shared && uid != 0).then_some((uid, gid))
}

/// A worker started as root becomes `user`, with no supplementary groups
/// and no capability left; one started as anyone else already is.
fn unprivileged_user(user: Option<(u32, u32)>) -> Result<(), HardeningError> {
    // SAFETY: plain syscalls on this process (glibc applies the set*id
    // calls to every thread).
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        if libc::geteuid() != 0 {
            return Ok(());
        }
        let Some((uid, gid)) = user else {
            return Err(HardeningError::RootKept);
        };
        if uid == 0 {
            return Err(HardeningError::UserIsRoot);
        }
        let parent = libc::getppid();
        let failed = libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(gid, gid, gid) != 0
            || libc::setresuid(uid, uid, uid) != 0;
        if failed || libc::geteuid() == 0 || libc::setuid(0) == 0 {
            return Err(HardeningError::User {
                uid,
                gid,
                error: std::io::Error::last_os_error(),
            });
        }
        // Losing root cleared the capabilities; exec could not restore any.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        // It cleared the parent-death signal too: armed again, so that the
        // worker still dies with its parent (a zygote's children hold the
        // Port's pipes, whose end would not come while they live).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
    }
    Ok(())
}

fn no_new_privs() -> Result<(), HardeningError> {
    // SAFETY: a plain prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(HardeningError::NoNewPrivs(std::io::Error::last_os_error()))
    }
}

/// Where workers' cgroups are made, for the VM to sweep what workers of
/// an earlier VM left (`ExBashkit.Worker.Cgroups`).
pub fn cgroup_bases() -> Vec<std::path::PathBuf> {
    cgroup::base_dirs()
}

/// What this host offers workers, for `ExBashkit.isolation_info/0`:
/// `(seccomp, landlock_abi, user_namespaces, root)`.
pub fn host_offers() -> (bool, u32, bool, bool) {
    let seccomp = std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists();
    // SAFETY: landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION
    // only answers the ABI version; the other calls read facts.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    let user_namespaces = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .is_some_and(|max| max > 0);
    let root = unsafe { libc::geteuid() } == 0;
    (seccomp, abi.max(0) as u32, user_namespaces, root)
}
