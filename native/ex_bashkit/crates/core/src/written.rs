//! Bytes written to a session's files: every filesystem of the session
//! (its in-memory files, each host mount, each `:virtual_fs` mount) is
//! wrapped in [`Counted`], which adds what each successful write, append
//! or copy put in a file to the session's [`Written`]. Every writer —
//! bash's redirections and builtins, `git`, Python, `node`, `sqlite3`,
//! child shells, the file API — goes through one of them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use bashkit::{async_trait, DirEntry, FileSystem, FileSystemExt, FsLimits, FsUsage, Metadata};

/// The bytes a session's filesystems took in, since it was built.
#[derive(Clone, Default)]
pub struct Written(Arc<AtomicU64>);

impl Written {
    fn add(&self, bytes: u64) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A filesystem whose writes are counted in `written`; everything else
/// is `inner`'s, unchanged.
pub struct Counted {
    inner: Arc<dyn FileSystem>,
    written: Written,
}

impl Counted {
    pub fn wrap(inner: Arc<dyn FileSystem>, written: &Written) -> Arc<dyn FileSystem> {
        Arc::new(Self {
            inner,
            written: written.clone(),
        })
    }

    /// Counts `bytes` if `outcome` is a success.
    fn counted<T>(&self, outcome: bashkit::Result<T>, bytes: u64) -> bashkit::Result<T> {
        if outcome.is_ok() {
            self.written.add(bytes);
        }
        outcome
    }
}

#[async_trait]
impl FileSystemExt for Counted {
    fn usage(&self) -> FsUsage {
        self.inner.usage()
    }

    async fn mkfifo(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.inner.mkfifo(path, mode).await
    }

    fn limits(&self) -> FsLimits {
        self.inner.limits()
    }

    fn vfs_snapshot(&self) -> Option<bashkit::VfsSnapshot> {
        self.inner.vfs_snapshot()
    }

    fn vfs_restore(&self, snapshot: &bashkit::VfsSnapshot) -> bashkit::Result<()> {
        self.inner.vfs_restore(snapshot)
    }

    fn backend_kind(&self) -> &'static str {
        // A snapshot's fingerprint names the backend: counting changes
        // nothing a restore depends on.
        self.inner.backend_kind()
    }
}

#[async_trait]
impl FileSystem for Counted {
    async fn read_file(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        self.inner.read_file(path).await
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let outcome = self.inner.write_file(path, content).await;
        self.counted(outcome, content.len() as u64)
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let outcome = self.inner.append_file(path, content).await;
        self.counted(outcome, content.len() as u64)
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.inner.mkdir(path, recursive).await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.inner.remove(path, recursive).await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.inner.stat(path).await
    }

    async fn lstat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.inner.lstat(path).await
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        self.inner.read_dir(path).await
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        self.inner.exists(path).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let outcome = self.inner.copy(from, to).await;
        // What the copy wrote is the file it made.
        let bytes = match &outcome {
            Ok(()) => self.inner.stat(to).await.map_or(0, |meta| meta.size),
            Err(_) => 0,
        };
        self.counted(outcome, bytes)
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        self.inner.symlink(target, link).await
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.inner.read_link(path).await
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.inner.chmod(path, mode).await
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        self.inner.set_modified_time(path, time).await
    }

    fn as_search_capable(&self) -> Option<&dyn bashkit::SearchCapable> {
        self.inner.as_search_capable()
    }
}
