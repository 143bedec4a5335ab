//! The session filesystem API (`read_file/2`, `write_file/3`, ...).
//!
//! These go straight to the session's filesystem, not through the script
//! lock, so they answer while a script runs. They are dirty I/O NIFs: a host
//! mount turns them into real disk I/O.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::Ordering;

use bashkit::{normalize_path, Metadata};
use rustler::{Binary, Encoder, Env, ResourceArc, Term};

use crate::atoms;
use crate::error;
use crate::file_kind::FileKind;
use crate::runtime::interpreters;
use crate::session::SessionResource;
use crate::terms::bytes;

pub(crate) type FsResult<T> = Result<T, String>;

/// The reply of an operation with no value: `:ok` or `{:error, message}`.
pub struct Done(FsResult<()>);

impl Encoder for Done {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        match &self.0 {
            Ok(()) => atoms::ok().encode(env),
            Err(message) => (atoms::error(), message).encode(env),
        }
    }
}

/// Runs one filesystem future to completion on this (dirty) thread, with the
/// runtime's context available to it.
fn run<T>(
    session: &SessionResource,
    path: &str,
    op: impl Future<Output = bashkit::Result<T>>,
) -> FsResult<T> {
    session.open()?;
    reachable(session, path)?;
    interpreters()?
        .block_on(session.worker.load(Ordering::Relaxed), op)
        .map_err(|e| error::for_path(path, &e))
}

/// The file API on one session, shared by the NIFs below and by worker
/// processes (`worker.rs`).
/// A file larger than `:max_file_bytes` (a host file under a mount) is
/// refused before it is read, in the VM and in a worker alike: the host
/// holds a worker's answers to that size (`ExBashkit.Worker.Protocol`).
pub(crate) fn read_file(session: &SessionResource, path: &str) -> FsResult<Vec<u8>> {
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

pub(crate) fn write_file(session: &SessionResource, path: &str, content: &[u8]) -> FsResult<()> {
    let target = Path::new(path);
    let parent = target.parent().unwrap_or(Path::new("/"));
    run(session, path, session.fs.mkdir(parent, true))
        .and_then(|()| run(session, path, session.fs.write_file(target, content)))
}

/// The most entries `list_dir/2` returns; a larger directory (under a
/// mount) is refused, in the VM and in a worker alike.
pub(crate) const MAX_LISTED: usize = 100_000;

pub(crate) fn list_dir(session: &SessionResource, path: &str) -> FsResult<Vec<(String, FileKind)>> {
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

pub(crate) fn mkdir(session: &SessionResource, path: &str, parents: bool) -> FsResult<()> {
    run(session, path, session.fs.mkdir(Path::new(path), parents))
}

pub(crate) fn remove(session: &SessionResource, path: &str, recursive: bool) -> FsResult<()> {
    run(session, path, session.fs.remove(Path::new(path), recursive))
}

pub(crate) fn rename(session: &SessionResource, from: &str, to: &str) -> FsResult<()> {
    let op = session.fs.rename(Path::new(from), Path::new(to));
    reachable(session, to).and_then(|()| run(session, from, op))
}

pub(crate) fn stat(session: &SessionResource, path: &str) -> FsResult<(FileKind, u64)> {
    let Metadata {
        file_type, size, ..
    } = run(session, path, session.fs.stat(Path::new(path)))?;
    Ok((FileKind::from(file_type), size))
}

/// Paths under a `:virtual_fs` mount belong to its backend, which serves
/// scripts only: from here, a call would block a dirty scheduler on Elixir.
/// Paths are normalized the way the session's filesystem does it.
fn reachable(session: &SessionResource, path: &str) -> FsResult<()> {
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

#[rustler::nif(schedule = "DirtyIo")]
fn session_read_file<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    path: String,
) -> FsResult<Binary<'a>> {
    Ok(bytes(env, &read_file(&session, &path)?))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_write_file(
    session: ResourceArc<SessionResource>,
    path: String,
    content: Binary,
) -> Done {
    Done(write_file(&session, &path, &content))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_list_dir(
    session: ResourceArc<SessionResource>,
    path: String,
) -> FsResult<Vec<(String, FileKind)>> {
    list_dir(&session, &path)
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_mkdir(session: ResourceArc<SessionResource>, path: String, parents: bool) -> Done {
    Done(mkdir(&session, &path, parents))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_remove(session: ResourceArc<SessionResource>, path: String, recursive: bool) -> Done {
    Done(remove(&session, &path, recursive))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_rename(session: ResourceArc<SessionResource>, from: String, to: String) -> Done {
    Done(rename(&session, &from, &to))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_stat(session: ResourceArc<SessionResource>, path: String) -> FsResult<(FileKind, u64)> {
    stat(&session, &path)
}
