//! The `:mounts` and `:allowed_mount_paths` options: real host directories
//! attached to a session's filesystem.
//!
//! bashkit's builder skips a mount it refuses with a warning on stderr; a
//! session missing a mount its owner asked for is a misconfiguration, so the
//! same policy is checked here first and every refusal becomes an error
//! naming the mount. Path containment (`..`, symlinks leaving the mount) is
//! bashkit's `RealFs`, which canonicalizes every access; a read-write mount
//! is wrapped in `metadata_guard.rs`, which keeps git's metadata for our git.

#[cfg(feature = "mounts")]
use std::path::PathBuf;
#[cfg(feature = "mounts")]
use std::sync::Arc;

use crate::error::SessionError;
#[cfg(feature = "mounts")]
use crate::written::Counted;
use crate::written::Written;

use bashkit::Bash;
#[cfg(feature = "mounts")]
use bashkit::{FileSystem, PosixFs, RealFs, RealFsMode};

#[cfg(feature = "mounts")]
use crate::metadata_guard::GuardedMount;
#[cfg(feature = "mounts")]
use crate::mount_reads::MountReads;

pub use ex_bashkit_protocol::options::{Mount, MountMode};

/// Checks every mount against the host and the mount policy, then attaches
/// them all. Nothing is attached unless every mount is acceptable.
#[cfg(not(feature = "mounts"))]
pub async fn attach(
    _bash: &Bash,
    mounts: &[Mount],
    _allowed: Option<&[String]>,
    _written: &Written,
) -> Result<(), SessionError> {
    // ExBashkit.Session.Options refuses mounts first; this is the backstop.
    match mounts.is_empty() {
        true => Ok(()),
        false => Err(SessionError::Mount(
            "this build of ex_bashkit has no host mounts (the `mounts` feature)".into(),
        )),
    }
}

#[cfg(feature = "mounts")]
pub async fn attach(
    bash: &Bash,
    mounts: &[Mount],
    allowed: Option<&[String]>,
    written: &Written,
) -> Result<(), SessionError> {
    let allowed = match allowed {
        Some(paths) => Some(canonical_prefixes(paths).await),
        None => None,
    };
    let mut ready = Vec::with_capacity(mounts.len());
    for (vfs_path, host_path, mode) in mounts {
        let describe = |why: String| {
            SessionError::Mount(format!("mount {vfs_path:?} -> {host_path:?}: {why}"))
        };
        let root = host_root(host_path, allowed.as_deref())
            .await
            .map_err(describe)?;
        let real_mode = match mode.writable() {
            true => RealFsMode::ReadWrite,
            false => RealFsMode::ReadOnly,
        };
        let real = RealFs::open(&root, real_mode)
            .await
            .map_err(|e| describe(e.to_string()))?;
        // Writes go through the guard: checked, then made with no lookup a
        // script could redirect, and git's metadata kept for our git unless
        // the owner opted out for this mount.
        let point = PathBuf::from(vfs_path);
        // Reads are answered by the kernel where that gives `RealFs`'s
        // answer (mount_reads.rs).
        let fs: Arc<dyn FileSystem> = match mode {
            MountMode::ReadOnly => Arc::new(PosixFs::new(MountReads::new(real, root))),
            MountMode::ReadWrite => {
                let guarded = GuardedMount::new(real, root.clone(), point, true);
                Arc::new(PosixFs::new(MountReads::new(guarded, root)))
            }
            MountMode::ReadWriteGitMetadata => {
                let guarded = GuardedMount::new(real, root.clone(), point, false);
                Arc::new(PosixFs::new(MountReads::new(guarded, root)))
            }
        };
        ready.push((vfs_path, fs));
    }
    for (vfs_path, fs) in ready {
        bash.mount(vfs_path, Counted::wrap(fs, written))
            .map_err(|e| SessionError::Mount(format!("mount {vfs_path:?}: {e}")))?;
    }
    Ok(())
}

/// The canonical host directory for a mount, if the policy lets it in.
#[cfg(feature = "mounts")]
async fn host_root(host_path: &str, allowed: Option<&[PathBuf]>) -> Result<PathBuf, String> {
    let root = tokio::fs::canonicalize(host_path)
        .await
        .map_err(|e| format!("host path cannot be resolved ({e})"))?;
    let is_dir = tokio::fs::metadata(&root).await.is_ok_and(|m| m.is_dir());
    if !is_dir {
        return Err(format!("host path {} is not a directory", root.display()));
    }
    match allowed {
        Some(prefixes) if !prefixes.iter().any(|prefix| root.starts_with(prefix)) => Err(format!(
            "host path {} is rejected: it is not under any :allowed_mount_paths entry",
            root.display()
        )),
        None if bashkit::is_sensitive_mount_path(&root) => Err(format!(
            "host path {} is a sensitive location, rejected by default; \
             list a covering prefix in :allowed_mount_paths to mount it",
            root.display()
        )),
        _ => Ok(root),
    }
}

/// Allowlist entries that exist, canonicalized. An entry that does not exist
/// cannot cover an existing directory, so dropping it changes nothing.
#[cfg(feature = "mounts")]
async fn canonical_prefixes(paths: &[String]) -> Vec<PathBuf> {
    let mut prefixes = Vec::with_capacity(paths.len());
    for path in paths {
        if let Ok(prefix) = tokio::fs::canonicalize(path).await {
            prefixes.push(prefix);
        }
    }
    prefixes
}
