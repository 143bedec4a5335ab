//! The VM's side of worker processes (`ExBashkit.Worker`): a guard that
//! tells a worker's owner when the last `%ExBashkit.Session{}` holding it
//! was freed, and the kill that ends a worker wherever it is.

use rustler::{Encoder, Env, LocalPid, Resource, ResourceArc};

mod atoms {
    rustler::atoms! { ex_bashkit_session_dropped }
}

pub struct WorkerGuard(LocalPid);

#[rustler::resource_impl]
impl Resource for WorkerGuard {
    const IMPLEMENTS_DESTRUCTOR: bool = true;

    fn destructor(self, env: Env<'_>) {
        // An owner that is gone already has nothing to end.
        let _ = env.send(&self.0, atoms::ex_bashkit_session_dropped().encode(env));
    }
}

/// A guard for the worker owned by `owner`.
#[rustler::nif]
fn worker_guard(owner: LocalPid) -> ResourceArc<WorkerGuard> {
    ResourceArc::new(WorkerGuard(owner))
}

/// Sends SIGKILL to the worker process `os_pid`: it cannot be caught, and
/// needs nothing of a process whose interpreter may never yield. The owner
/// calls this only while the worker's Port is open, so the pid is still
/// its child's and cannot have been reused.
#[rustler::nif]
fn worker_kill(os_pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(os_pid) else {
        return false;
    };
    // SAFETY: a plain syscall; a pid <= 0 would signal a process group.
    pid > 0 && unsafe { libc::kill(pid, libc::SIGKILL) } == 0
}

/// What this host offers worker processes: `{seccomp, landlock_abi,
/// user_namespaces, root}` (`hardening.rs`).
#[rustler::nif]
fn host_isolation() -> (bool, u32, bool, bool) {
    ex_bashkit_core::hardening::host_offers()
}

/// The directories workers' cgroups are made in (`hardening/cgroup.rs`).
#[rustler::nif]
fn worker_cgroup_bases() -> Vec<String> {
    ex_bashkit_core::hardening::cgroup_bases()
        .into_iter()
        .map(|dir| dir.to_string_lossy().into_owned())
        .collect()
}
