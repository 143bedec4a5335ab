//! The `:virtual_fs` option: a filesystem mounted in the session whose
//! operations an Elixir backend serves. Paths reach the backend rooted at
//! the mount (`/api/users/1` mounted at `/api` arrives as `/users/1`).

use std::io::{Error as IoError, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bashkit::{async_trait, DirEntry, FileSystem, FileSystemExt, FileType, Metadata};

use crate::callback::{Channel, Errno, Failure, FsOp, Reply, Request};

pub struct ElixirFs {
    mount: String,
    channel: Arc<Channel>,
}

impl ElixirFs {
    pub fn new(mount: String, channel: Arc<Channel>) -> Self {
        Self { mount, channel }
    }

    /// Sends `op` on `path` to the backend and waits for the answer.
    async fn call(&self, op: FsOp<'_>, path: &Path) -> bashkit::Result<Reply> {
        let path = path.to_string_lossy();
        let request = Request::Fs {
            mount: &self.mount,
            op,
            path: &path,
        };
        match self.channel.call(request).await {
            Ok(Reply::Error(failure)) => Err(error(failure)),
            Ok(reply) => Ok(reply),
            Err(why) => Err(IoError::other(why).into()),
        }
    }

    async fn call_done(&self, op: FsOp<'_>, path: &Path) -> bashkit::Result<()> {
        match self.call(op, path).await? {
            Reply::Ok => Ok(()),
            _ => Err(invalid_reply()),
        }
    }
}

fn invalid_reply() -> bashkit::Error {
    IoError::other("invalid reply from the virtual_fs backend").into()
}

/// POSIX-style reasons become the I/O errors the shell's commands print as
/// usual (`cat: /api/x: No such file or directory`).
fn error(failure: Failure) -> bashkit::Error {
    let code = match failure {
        Failure::Message(message) => return IoError::other(message).into(),
        Failure::Code(code) => code,
    };
    let (kind, message) = match code {
        Errno::Enoent => (ErrorKind::NotFound, "No such file or directory"),
        Errno::Eacces | Errno::Eperm => (ErrorKind::PermissionDenied, "Permission denied"),
        Errno::Eexist => (ErrorKind::AlreadyExists, "File exists"),
        Errno::Enotdir => (ErrorKind::NotADirectory, "Not a directory"),
        Errno::Eisdir => (ErrorKind::IsADirectory, "Is a directory"),
        Errno::Enotempty => (ErrorKind::DirectoryNotEmpty, "Directory not empty"),
        Errno::Enotsup | Errno::Eopnotsupp => (ErrorKind::Unsupported, "Operation not supported"),
        Errno::Etimedout => (ErrorKind::TimedOut, "Timed out waiting for the backend"),
        Errno::Erofs => (ErrorKind::ReadOnlyFilesystem, "Read-only file system"),
        Errno::Enospc => (ErrorKind::StorageFull, "No space left on device"),
        Errno::Einval => (ErrorKind::InvalidInput, "Invalid argument"),
    };
    IoError::new(kind, message).into()
}

fn unsupported() -> bashkit::Error {
    error(Failure::Code(Errno::Enotsup))
}

fn metadata(file_type: FileType, size: u64) -> Metadata {
    let mode = match file_type {
        FileType::Directory => 0o755,
        _ => 0o644,
    };
    let now = SystemTime::now();
    Metadata {
        file_type,
        size,
        mode,
        modified: now,
        created: now,
    }
}

fn is_root(path: &Path) -> bool {
    path.as_os_str().is_empty() || path == Path::new("/")
}

#[async_trait]
impl FileSystemExt for ElixirFs {}

#[async_trait]
impl FileSystem for ElixirFs {
    async fn read_file(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        match self.call(FsOp::Read, path).await? {
            Reply::Data(data) => Ok(data.into_vec()),
            _ => Err(invalid_reply()),
        }
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.call_done(FsOp::Write(content), path).await
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.call_done(FsOp::Append(content), path).await
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        if is_root(path) && recursive {
            return Ok(());
        }
        self.call_done(FsOp::Mkdir { recursive }, path).await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.call_done(FsOp::Remove { recursive }, path).await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        match self.call(FsOp::Stat, path).await {
            Ok(Reply::Stat(kind, size)) => Ok(metadata(crate::file_kind::file_type(kind), size)),
            Ok(_) => Err(invalid_reply()),
            // The mount point is a directory even for a backend that cannot
            // describe it.
            Err(_) if is_root(path) => Ok(metadata(FileType::Directory, 0)),
            Err(e) => Err(e),
        }
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        match self.call(FsOp::List, path).await? {
            Reply::Entries(entries) => Ok(entries
                .into_iter()
                .map(|(name, kind, size)| DirEntry {
                    name,
                    metadata: metadata(crate::file_kind::file_type(kind), size),
                })
                .collect()),
            _ => Err(invalid_reply()),
        }
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        Ok(self.stat(path).await.is_ok())
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let to = to.to_string_lossy();
        self.call_done(FsOp::Rename { to: &to }, from).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let content = self.read_file(from).await?;
        self.write_file(to, &content).await
    }

    async fn symlink(&self, _target: &Path, _link: &Path) -> bashkit::Result<()> {
        Err(unsupported())
    }

    async fn read_link(&self, _path: &Path) -> bashkit::Result<PathBuf> {
        Err(error(Failure::Code(Errno::Einval)))
    }

    async fn chmod(&self, _path: &Path, _mode: u32) -> bashkit::Result<()> {
        Err(unsupported())
    }
}
