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

/// Moves this process into a cgroup of its own with these caps; the
/// directories made, for the VM to remove.
pub fn enter(memory_max: u64, pids_max: u64) -> Result<Vec<PathBuf>, String> {
    // SAFETY: a plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        return Err("only a VM running as root places workers in cgroups".into());
    }
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
        (Some(memory), Some(pids)) => {
            let memory = place(
                &memory.join(WORKERS),
                &[("memory.limit_in_bytes", memory_max)],
            )?;
            let pids = place(&pids.join(WORKERS), &[("pids.max", pids_max)])?;
            Ok(vec![memory, pids])
        }
        _ => v2(&membership, &mounts, memory_max, pids_max),
    }
}

fn v2(
    membership: &str,
    mounts: &str,
    memory_max: u64,
    pids_max: u64,
) -> Result<Vec<PathBuf>, String> {
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
    let base = parent.join(WORKERS);
    if !base.exists() {
        fs::create_dir(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    }
    fs::write(base.join("cgroup.subtree_control"), "+memory +pids")
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let dir = place(&base, &[("memory.max", memory_max), ("pids.max", pids_max)])?;
    Ok(vec![dir])
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
