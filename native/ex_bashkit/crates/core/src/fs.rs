//! The session filesystem API (`read_file/2`, `write_file/3`, ...).
//!
//! These go straight to the session's filesystem, not through the script
//! lock, so they answer while a script runs; the caller blocks on them (the
//! NIF from a dirty I/O scheduler: a host mount turns them into real disk
//! I/O).

use std::future::Future;
use std::path::Path;
use std::sync::atomic::Ordering;

use bashkit::{normalize_path, Metadata};

use crate::error;
use crate::file_kind::FileKind;
use crate::runtime::interpreters;
use crate::session::Session;

/// What a file operation answers.
pub type FsResult<T> = Result<T, String>;

/// Runs one filesystem future to completion on this (dirty) thread, with the
/// runtime's context available to it.
fn run<T>(
    session: &Session,
    path: &str,
    op: impl Future<Output = bashkit::Result<T>>,
) -> FsResult<T> {
    session.open()?;
    reachable(session, path)?;
    interpreters()?
        .block_on(session.worker.load(Ordering::Relaxed), op)
        .map_err(|e| error::for_path(path, &e))
}

/// The file API on one session, for the NIF's file functions and for a
/// worker's file requests alike.
/// A file larger than `:max_file_bytes` (a host file under a mount) is
/// refused before it is read, in the VM and in a worker alike: the host
/// holds a worker's answers to that size (`ExBashkit.Worker.Protocol`).
pub fn read_file(session: &Session, path: &str) -> FsResult<Vec<u8>> {
    // A path that cannot be stat'ed is read anyway, for read's own error.
    let size = run(session, path, session.fs.stat(Path::new(path))).map_or(0, |m| m.size);
    if size > session.max_file_bytes {
        return Err(format!(
            "{path}: the file is {size} bytes, larger than the session's {} \
             (limit :max_file_bytes)",
            session.max_file_bytes
        ));
    }
    let content = run(session, path, session.fs.read_file(Path::new(path)))?;
    // It may have grown between the two calls.
    if content.len() as u64 > session.max_file_bytes {
        return Err(format!(
            "{path}: the file is larger than the session's {} (limit :max_file_bytes)",
            session.max_file_bytes
        ));
    }
    Ok(content)
}

pub fn write_file(session: &Session, path: &str, content: &[u8]) -> FsResult<()> {
    let target = Path::new(path);
    let parent = target.parent().unwrap_or(Path::new("/"));
    run(session, path, session.fs.mkdir(parent, true))
        .and_then(|()| run(session, path, session.fs.write_file(target, content)))
}

/// The most entries `list_dir/2` returns; a larger directory (under a
/// mount) is refused, in the VM and in a worker alike.
pub const MAX_LISTED: usize = 100_000;

pub fn list_dir(session: &Session, path: &str) -> FsResult<Vec<(String, FileKind)>> {
    let mut entries = run(session, path, session.fs.read_dir(Path::new(path)))?;
    if entries.len() > MAX_LISTED {
        return Err(format!(
            "{path}: the directory has {} entries, more than the {MAX_LISTED} list_dir returns",
            entries.len()
        ));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries
        .into_iter()
        .map(|entry| (entry.name, FileKind::from(entry.metadata.file_type)))
        .collect())
}

pub fn mkdir(session: &Session, path: &str, parents: bool) -> FsResult<()> {
    run(session, path, session.fs.mkdir(Path::new(path), parents))
}

pub fn remove(session: &Session, path: &str, recursive: bool) -> FsResult<()> {
    run(session, path, session.fs.remove(Path::new(path), recursive))
}

pub fn rename(session: &Session, from: &str, to: &str) -> FsResult<()> {
    let op = session.fs.rename(Path::new(from), Path::new(to));
    reachable(session, to).and_then(|()| run(session, from, op))
}

pub fn stat(session: &Session, path: &str) -> FsResult<(FileKind, u64)> {
    let Metadata {
        file_type, size, ..
    } = run(session, path, session.fs.stat(Path::new(path)))?;
    Ok((FileKind::from(file_type), size))
}

/// Paths under a `:virtual_fs` mount belong to its backend, which serves
/// scripts only: from here, a call would block a dirty scheduler on Elixir.
/// Paths are normalized the way the session's filesystem does it.
fn reachable(session: &Session, path: &str) -> FsResult<()> {
    let path = normalize_path(Path::new(path));
    match session
        .virtual_mounts
        .iter()
        .find(|mount| path.starts_with(mount))
    {
        Some(mount) => Err(format!(
            "{}: under the :virtual_fs mount {}, which only scripts can reach",
            path.display(),
            mount.display()
        )),
        None => Ok(()),
    }
}
