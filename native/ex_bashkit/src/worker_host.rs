//! The VM's side of worker processes (`ExBashkit.Worker`): the guard that
//! ends a worker, and the kill that ends one wherever it is.
//!
//! A session's worker ends one way: its guard tells the worker's owner,
//! once. It tells when the last `%ExBashkit.Session{}` holding it is freed
//! (the session dropped, or the process that held it dead), or earlier, at
//! `close/1`.

use std::sync::Mutex;

use ex_bashkit_core::sync::lock;
use rustler::{Encoder, Env, LocalPid, Resource, ResourceArc};

mod atoms {
    rustler::atoms! { ex_bashkit_session_dropped, ex_bashkit_session_closed }
}

/// The owner to tell, until told.
pub struct WorkerGuard(Mutex<Option<LocalPid>>);

#[rustler::resource_impl]
impl Resource for WorkerGuard {
    const IMPLEMENTS_DESTRUCTOR: bool = true;

    fn destructor(self, env: Env<'_>) {
        // An owner that is gone already has nothing to end.
        if let Some(owner) = lock(&self.0).take() {
            let _ = env.send(&owner, atoms::ex_bashkit_session_dropped().encode(env));
        }
    }
}

/// A guard for the worker owned by `owner`.
#[rustler::nif]
fn worker_guard(owner: LocalPid) -> ResourceArc<WorkerGuard> {
    ResourceArc::new(WorkerGuard(Mutex::new(Some(owner))))
}

/// Tells the owner now (`close/1`); `false` if it was told already.
#[rustler::nif]
fn worker_guard_close(env: Env<'_>, guard: ResourceArc<WorkerGuard>) -> bool {
    let Some(owner) = lock(&guard.0).take() else {
        return false;
    };
    // An owner that is gone already has nothing to end.
    let _ = env.send(&owner, atoms::ex_bashkit_session_closed().encode(env));
    true
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
/// user_namespaces, root}` (the jail crate, `crates/jail`).
#[rustler::nif]
fn host_isolation() -> (bool, u32, bool, bool) {
    ex_bashkit_jail::host_offers()
}

/// The directories workers' cgroups are made in (`hardening/cgroup.rs`).
#[rustler::nif]
fn worker_cgroup_bases() -> Vec<String> {
    ex_bashkit_jail::cgroup_bases()
        .into_iter()
        .map(|dir| dir.to_string_lossy().into_owned())
        .collect()
}
