//! Where the repository's files are read and written: straight on the
//! host for a work tree in a host mount (`host.rs`; writes only where the
//! mount is read-write), through the session's filesystem for the rest
//! (the in-memory filesystem, virtual filesystems, a `.git` elsewhere).
//! One place, so each command pays one system call per file where it can
//! rather than a trip through bashkit's asynchronous filesystem (whose
//! writes also sync every file to disk, which git does not).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::FileSystem;

use ex_bashkit_jail::host_tree::{HostTree, Kind};

use crate::error::{Error, Result};

/// Every path git writes is plain: a name with `..` (a branch called
/// `../hooks/x`) never walks out of where it belongs.
fn plain(path: &Path) -> Result<()> {
    use std::path::Component;
    match path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    {
        true => Ok(()),
        false => Err(Error::OutsidePath(path.to_path_buf())),
    }
}

/// The work tree's root in the session, its host directory, and whether
/// the mount may be written.
pub struct HostRoot {
    pub point: PathBuf,
    pub tree: HostTree,
    pub writable: bool,
}

pub struct Io {
    pub fs: Arc<dyn FileSystem>,
    host: Option<HostRoot>,
}

impl Io {
    pub fn new(fs: Arc<dyn FileSystem>, host: Option<HostRoot>) -> Self {
        Self { fs, host }
    }

    pub fn host(&self) -> Option<&HostTree> {
        self.host.as_ref().map(|h| &h.tree)
    }

    /// `path` on the host: the tree and the path below its root.
    fn on_host(&self, path: &Path) -> Option<(&HostTree, PathBuf)> {
        let host = self.host.as_ref()?;
        let below = path.strip_prefix(&host.point).ok()?;
        Some((&host.tree, below.to_path_buf()))
    }

    fn on_writable_host(&self, path: &Path) -> Option<(&HostTree, PathBuf)> {
        self.host.as_ref().filter(|h| h.writable)?;
        self.on_host(path)
    }

    pub async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        match self.on_host(path) {
            Some((tree, below)) => tree.read(&below).map_err(Error::from),
            None => self.fs.read_file(path).await.map_err(Error::from),
        }
    }

    /// A file on the host opened for reading where `path` is in the
    /// host tree, to be read a part at a time (a pack of any size).
    pub fn open_on_host(&self, path: &Path) -> Option<std::fs::File> {
        let (tree, below) = self.on_host(path)?;
        tree.open_read(&below).ok()
    }

    pub async fn exists(&self, path: &Path) -> bool {
        match self.on_host(path) {
            Some((tree, below)) => below.as_os_str().is_empty() || tree.lstat(&below).is_ok(),
            None => self.fs.exists(path).await.unwrap_or(false),
        }
    }

    /// The modification time, as `(seconds, nanoseconds)`.
    pub async fn mtime(&self, path: &Path) -> Result<(u32, u32)> {
        match self.on_host(path) {
            Some((tree, below)) => tree
                .lstat(&below)
                .map(|e| e.stat.mtime)
                .map_err(Error::from),
            None => {
                let meta = self.fs.stat(path).await.map_err(Error::from)?;
                Ok(meta
                    .modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or((0, 0), |d| (d.as_secs() as u32, d.subsec_nanos())))
            }
        }
    }

    /// A file's size, and the bytes it takes on disk as git counts them
    /// (its blocks; in the session's own filesystem, 4 KiB blocks).
    pub async fn sizes(&self, path: &Path) -> Result<(u64, u64)> {
        match self.on_host(path) {
            Some((tree, below)) => tree
                .lstat(&below)
                .map(|e| (e.bytes, e.disk_bytes))
                .map_err(Error::from),
            None => {
                let size = self.fs.stat(path).await.map_err(Error::from)?.size;
                Ok((size, size.div_ceil(4096) * 4096))
            }
        }
    }

    /// A directory's entries: name and whether it is a directory.
    pub async fn read_dir(&self, path: &Path) -> Result<Vec<(String, bool)>> {
        match self.on_host(path) {
            Some((tree, below)) => Ok(tree
                .list(&below)
                .map_err(Error::from)?
                .into_iter()
                .map(|e| (e.name, e.kind == Kind::Dir))
                .collect()),
            None => Ok(self
                .fs
                .read_dir(path)
                .await
                .map_err(Error::from)?
                .into_iter()
                .map(|e| (e.name, e.metadata.file_type.is_dir()))
                .collect()),
        }
    }

    pub async fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        plain(path)?;
        match self.on_writable_host(path) {
            Some((tree, below)) => tree.write(&below, bytes).map_err(Error::from),
            None => self.fs.write_file(path, bytes).await.map_err(Error::from),
        }
    }

    pub async fn append_file(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        plain(path)?;
        match self.on_writable_host(path) {
            Some((tree, below)) => tree.append(&below, bytes).map_err(Error::from),
            None => self.fs.append_file(path, bytes).await.map_err(Error::from),
        }
    }

    pub async fn mkdir_all(&self, path: &Path) -> Result<()> {
        plain(path)?;
        match self.on_writable_host(path) {
            Some((tree, below)) => tree.mkdir_all(&below).map_err(Error::from),
            None => self.fs.mkdir(path, true).await.map_err(Error::from),
        }
    }

    /// Removes a file, or an empty directory (`dir`).
    pub async fn remove(&self, path: &Path, dir: bool) -> Result<()> {
        plain(path)?;
        match self.on_writable_host(path) {
            Some((tree, below)) => tree.remove(&below, dir).map_err(Error::from),
            None => self.fs.remove(path, false).await.map_err(Error::from),
        }
    }

    pub async fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        plain(from)?;
        plain(to)?;
        match (self.on_writable_host(from), self.on_writable_host(to)) {
            (Some((tree, from)), Some((_, to))) => tree.rename(&from, &to).map_err(Error::from),
            _ => self.fs.rename(from, to).await.map_err(Error::from),
        }
    }

    pub async fn chmod(&self, path: &Path, mode: u32) -> Result<()> {
        plain(path)?;
        match self.on_writable_host(path) {
            Some((tree, below)) => tree.chmod(&below, mode).map_err(Error::from),
            None => self.fs.chmod(path, mode).await.map_err(Error::from),
        }
    }
}
