//! A host mount's reads, answered by the kernel on the interpreter's own
//! thread.
//!
//! bashkit's `RealFs` canonicalizes every path and takes each step on a
//! blocking thread: two or three thread hops for one `stat` or read, 40 to
//! 160 µs where the system calls take a few. A program that loads
//! hundreds of files from a mount (`require` in node, imports in Python,
//! `find`, `grep -r`) pays that per file. Here `stat`, `exists`, reads and
//! listings of a path with no symlink on it are answered with one `openat2` below
//! the mount's root (crates/jail's `host_tree.rs`), which the kernel keeps
//! there. Everything else, a symlink on the way, a file too big to read
//! without a thread, anything but a regular file, any error but "no such
//! file", is the inner backend's to answer, so each answer is the one
//! `RealFs` gives (the tests below hold them side by side).

use std::io::Error as IoError;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use bashkit::{async_trait, DirEntry, FileType, FsBackend, FsLimits, FsUsage, Metadata};
use ex_bashkit_jail::host_tree::{HostTree, Kind, Status};

/// The most a read takes on the interpreter's thread; a bigger file is
/// read on a blocking thread, as `RealFs` reads it.
const INLINE_READ_BYTES: u64 = 1 << 20;

/// A mount's backend (`RealFs`, or the guard of a read-write mount) with
/// its reads answered directly where that gives the same answer.
pub struct MountReads<B> {
    inner: B,
    tree: HostTree,
}

impl<B: FsBackend> MountReads<B> {
    /// `inner` serves the mount whose canonical host directory is `root`.
    pub fn new(inner: B, root: PathBuf) -> Self {
        Self {
            inner,
            tree: HostTree::new(root),
        }
    }
}

/// The path below the mount's root, when it is plain names.
fn below_root(path: &Path) -> Option<PathBuf> {
    let mut relative = PathBuf::new();
    for part in path.components() {
        match part {
            Component::RootDir => {}
            Component::Normal(name) => relative.push(name),
            _ => return None,
        }
    }
    Some(relative)
}

fn not_found(error: &IoError) -> bool {
    error.raw_os_error() == Some(libc::ENOENT)
}

/// `RealFs`'s metadata of what `statx` said.
fn metadata(status: Status) -> Metadata {
    let file_type = match status.kind {
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        Kind::File | Kind::Other => FileType::File,
    };
    Metadata {
        size: match file_type {
            FileType::Directory => 0,
            _ => status.bytes,
        },
        file_type,
        mode: status.perm,
        modified: status.modified,
        created: status.created.unwrap_or(UNIX_EPOCH),
    }
}

#[async_trait]
impl<B: FsBackend> FsBackend for MountReads<B> {
    async fn read(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        if let Some(relative) = below_root(path) {
            match self.tree.read_at_most(&relative, INLINE_READ_BYTES) {
                Ok(Some(bytes)) => return Ok(bytes),
                Err(error) if not_found(&error) => return Err(error.into()),
                _ => {}
            }
        }
        self.inner.read(path).await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        if let Some(relative) = below_root(path) {
            match self.tree.status(&relative) {
                Ok(status) => return Ok(metadata(status)),
                Err(error) if not_found(&error) => return Err(error.into()),
                Err(_) => {}
            }
        }
        self.inner.stat(path).await
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        if let Some(relative) = below_root(path) {
            match self.tree.status(&relative) {
                // A symlink's answer is its target's: the inner one's.
                Ok(status) if status.kind != Kind::Symlink => return Ok(true),
                Err(error) if not_found(&error) => return Ok(false),
                _ => {}
            }
        }
        self.inner.exists(path).await
    }

    async fn write(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.inner.write(path, content).await
    }

    async fn append(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.inner.append(path, content).await
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.inner.mkdir(path, recursive).await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.inner.remove(path, recursive).await
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        if let Some(relative) = below_root(path) {
            match self.tree.statuses(&relative) {
                Ok(found) => {
                    let mut entries: Vec<DirEntry> = found
                        .into_iter()
                        .map(|(name, status)| DirEntry {
                            name,
                            metadata: metadata(status),
                        })
                        .collect();
                    entries.sort_by(|a, b| a.name.cmp(&b.name));
                    return Ok(entries);
                }
                Err(error) if not_found(&error) => return Err(error.into()),
                Err(_) => {}
            }
        }
        self.inner.read_dir(path).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.inner.rename(from, to).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.inner.copy(from, to).await
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

    fn usage(&self) -> FsUsage {
        self.inner.usage()
    }

    fn limits(&self) -> FsLimits {
        self.inner.limits()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bashkit::{FsBackend, RealFs, RealFsMode};

    use super::MountReads;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A directory removed when dropped.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A host directory with what a mount may hold: files, directories,
    /// links inside and out, a FIFO, a file past the inline limit.
    fn tree() -> (Scratch, PathBuf) {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("mount_reads_{}_{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let outside = Scratch(base);
        std::fs::create_dir_all(&outside.0).unwrap();
        std::fs::write(outside.0.join("secret"), "outside").unwrap();
        let root = outside.0.join("mount");
        std::fs::create_dir_all(root.join("lib/deep")).unwrap();
        std::fs::write(root.join("lib/index.js"), "module.exports = 1;\n").unwrap();
        std::fs::write(root.join("lib/deep/empty"), "").unwrap();
        std::fs::write(root.join("big"), vec![7u8; (1 << 20) + 1]).unwrap();
        symlink("lib/index.js", root.join("relative")).unwrap();
        symlink("lib", root.join("dir_link")).unwrap();
        symlink(root.join("lib/index.js"), root.join("absolute_inside")).unwrap();
        symlink(outside.0.join("secret"), root.join("escape")).unwrap();
        symlink("../secret", root.join("climb")).unwrap();
        symlink("nowhere", root.join("dangling")).unwrap();
        let fifo = std::ffi::CString::new(root.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let root = root.canonicalize().unwrap();
        (outside, root)
    }

    const PATHS: [&str; 18] = [
        "/",
        "/lib",
        "/lib/",
        "/lib/index.js",
        "/lib/deep/empty",
        "/lib/missing.js",
        "/missing/index.js",
        "/lib/index.js/inside",
        "/big",
        "/relative",
        "/dir_link",
        "/dir_link/index.js",
        "/absolute_inside",
        "/escape",
        "/climb",
        "/dangling",
        "/lib/../lib/index.js",
        "/fifo",
    ];

    fn shown<T: std::fmt::Debug>(answer: bashkit::Result<T>) -> String {
        match answer {
            Ok(value) => format!("ok {value:?}"),
            Err(error) => format!("error {error}"),
        }
    }

    #[test]
    fn every_answer_is_the_one_realfs_gives() {
        let (_dir, root) = tree();
        runtime().block_on(async {
            let real = RealFs::open(&root, RealFsMode::ReadOnly).await.unwrap();
            let direct = MountReads::new(
                RealFs::open(&root, RealFsMode::ReadOnly).await.unwrap(),
                root.clone(),
            );
            for path in PATHS.map(Path::new) {
                assert_eq!(
                    shown(direct.stat(path).await),
                    shown(real.stat(path).await),
                    "stat {path:?}"
                );
                assert_eq!(
                    shown(direct.exists(path).await),
                    shown(real.exists(path).await),
                    "exists {path:?}"
                );
                assert_eq!(
                    shown(direct.read_dir(path).await),
                    shown(real.read_dir(path).await),
                    "read_dir {path:?}"
                );
                // A FIFO with no writer: reading it waits (on `RealFs`'s
                // thread), so only its status is compared.
                if path != Path::new("/fifo") {
                    assert_eq!(
                        shown(direct.read(path).await),
                        shown(real.read(path).await),
                        "read {path:?}"
                    );
                }
            }
        });
    }

    #[test]
    fn a_fifo_is_never_opened_on_the_interpreters_thread() {
        let (_dir, root) = tree();
        let tree = ex_bashkit_jail::host_tree::HostTree::new(root);
        // Opened without waiting for a writer, and left to the slower path.
        assert!(tree
            .read_at_most(Path::new("fifo"), 1 << 20)
            .unwrap()
            .is_none());
    }
}
