//! A cgroup of the worker's own, below the VM's: the kernel caps the
//! memory the worker may hold (`memory.max`; the VM's own cap on scripts
//! stays the first line) and how many threads it may have (`pids.max`).
//!
//! cgroup v1 (a hierarchy per controller): a child of the VM's cgroup in
//! each of `memory` and `pids`. cgroup v2: a sibling of the VM's cgroup,
//! `ex_bashkit_workers/<pid>` (a cgroup with processes may not delegate
//! controllers to children), where the parent delegates `memory` and
//! `pids`. Made as root, before the worker gives root up; the VM removes
//! the directories once the worker is gone (`ExBashkit.Worker.Cgroups`).

use std::fs;
use std::path::{Path, PathBuf};

const WORKERS: &str = "ex_bashkit_workers";

/// Where the worker's memory cap is written, in v1 and v2.
const MEMORY_FILES: &[&str] = &["memory.limit_in_bytes", "memory.max"];

/// Moves this process into a cgroup of its own with its thread cap; the
/// directories made, for the VM to remove. Moving a process between
/// cgroups waits for an RCU grace period (~15 ms here), so a worker does
/// it as it starts, a spare ahead of its session; [`cap_memory`] follows
/// once the session's limits are known.
pub fn enter(pids_max: u64) -> Result<Vec<PathBuf>, String> {
    // SAFETY: a plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        return Err("only a VM running as root places workers in cgroups".into());
    }
    match bases()? {
        Bases::V1 { memory, pids } => {
            let memory = place(&memory, &[])?;
            let pids = place(&pids, &[("pids.max", pids_max)])?;
            Ok(vec![memory, pids])
        }
        Bases::V2(base) => {
            if !base.exists() {
                fs::create_dir(&base).map_err(|e| format!("{}: {e}", base.display()))?;
            }
            fs::write(base.join("cgroup.subtree_control"), "+memory +pids")
                .map_err(|e| format!("{}: {e}", base.display()))?;
            Ok(vec![place(&base, &[("pids.max", pids_max)])?])
        }
    }
}

/// The directories workers' cgroups are made in, for the VM to sweep.
pub fn base_dirs() -> Vec<PathBuf> {
    match bases() {
        Ok(Bases::V1 { memory, pids }) => vec![memory, pids],
        Ok(Bases::V2(base)) => vec![base],
        Err(_) => vec![],
    }
}

enum Bases {
    V1 { memory: PathBuf, pids: PathBuf },
    V2(PathBuf),
}

fn bases() -> Result<Bases, String> {
    let membership = fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| e.to_string())?;
    let v1 = |controller: &str| {
        let path = membership.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            controllers
                .split(',')
                .any(|name| name == controller)
                .then(|| path.to_string())
        })?;
        let mount = mount_point(&mounts, "cgroup", Some(controller))?;
        Some(mount.join(path.trim_start_matches('/')))
    };
    match (v1("memory"), v1("pids")) {
        (Some(memory), Some(pids)) => Ok(Bases::V1 {
            memory: memory.join(WORKERS),
            pids: pids.join(WORKERS),
        }),
        _ => v2(&membership, &mounts).map(Bases::V2),
    }
}

fn v2(membership: &str, mounts: &str) -> Result<PathBuf, String> {
    let own = membership
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("no cgroup v2 membership")?;
    let mount = mount_point(mounts, "cgroup2", None).ok_or("no cgroup2 mount")?;
    let own = mount.join(own.trim_start_matches('/'));
    let parent = match own.parent() {
        Some(parent) if own != mount && parent.starts_with(&mount) => parent.to_path_buf(),
        _ => return Err("the VM is at the root of its cgroup tree: nothing to delegate".into()),
    };
    let delegated = fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    if !["memory", "pids"]
        .iter()
        .all(|c| delegated.split_whitespace().any(|d| d == *c))
    {
        return Err(format!(
            "{} does not delegate memory and pids",
            parent.display()
        ));
    }
    Ok(parent.join(WORKERS))
}

/// Caps the memory of the cgroup among `dirs` that has the memory
/// controller (a v1 memory hierarchy's, or the v2 one).
pub fn cap_memory(dirs: &[PathBuf], bytes: u64) -> Result<(), String> {
    let file = dirs
        .iter()
        .flat_map(|dir| MEMORY_FILES.iter().map(move |file| dir.join(file)))
        .find(|file| file.exists())
        .ok_or("the worker's cgroup has no memory controller")?;
    fs::write(&file, bytes.to_string()).map_err(|e| format!("{}: {e}", file.display()))
}

/// `base/<pid>`, with `limits` written, and this process moved in.
fn place(base: &Path, limits: &[(&str, u64)]) -> Result<PathBuf, String> {
    let dir = base.join(std::process::id().to_string());
    let failed = |e: std::io::Error| format!("{}: {e}", dir.display());
    fs::create_dir_all(&dir).map_err(failed)?;
    for (file, value) in limits {
        fs::write(dir.join(file), value.to_string()).map_err(failed)?;
    }
    fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).map_err(failed)?;
    Ok(dir)
}

/// Where a cgroup filesystem of `kind` (with `controller`, for v1) is mounted.
fn mount_point(mounts: &str, kind: &str, controller: Option<&str>) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (point, fstype, options) = (fields.get(1)?, fields.get(2)?, fields.get(3)?);
        let matches = *fstype == kind
            && controller.is_none_or(|name| options.split(',').any(|option| option == name));
        matches.then(|| PathBuf::from(point))
    })
}
