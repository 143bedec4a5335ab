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

/// What `stat` and `list_dir` tell of an entry (the protocol's type).
pub use ex_bashkit_protocol::outcome::Entry;

/// The entry bashkit's metadata describes.
fn entry_of(meta: &Metadata) -> Entry {
    let mtime = match meta.modified.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    };
    Entry {
        kind: crate::file_kind::of(meta.file_type),
        size: meta.size,
        mode: meta.mode & 0o7777,
        mtime,
    }
}

pub fn list_dir(session: &Session, path: &str) -> FsResult<Vec<(String, Entry)>> {
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
        .map(|entry| {
            let described = entry_of(&entry.metadata);
            (entry.name, described)
        })
        .collect())
}

pub fn mkdir(session: &Session, path: &str, parents: bool) -> FsResult<()> {
    run(session, path, session.fs.mkdir(Path::new(path), parents))
}

pub fn remove(session: &Session, path: &str, recursive: bool) -> FsResult<()> {
    run(session, path, session.fs.remove(Path::new(path), recursive))
}

/// Moves `from` to `to`; an existing `to` is replaced only with
/// `overwrite`.
pub fn rename(session: &Session, from: &str, to: &str, overwrite: bool) -> FsResult<()> {
    reachable(session, to)?;
    if !overwrite && run(session, to, session.fs.exists(Path::new(to)))? {
        return Err(format!(
            "{to}: already exists (rename with overwrite: true to replace it)"
        ));
    }
    run(
        session,
        from,
        session.fs.rename(Path::new(from), Path::new(to)),
    )
}

pub fn stat(session: &Session, path: &str) -> FsResult<Entry> {
    let meta = run(session, path, session.fs.stat(Path::new(path)))?;
    Ok(entry_of(&meta))
}

/// Sets the permission bits of `path`, and with `recursive` of all below
/// it (at most `MAX_LISTED` entries in all; symbolic links are not
/// followed).
pub fn chmod(session: &Session, path: &str, mode: u32, recursive: bool) -> FsResult<()> {
    if mode > 0o7777 {
        return Err(format!("{path}: mode {mode:o} is not a permission mode"));
    }
    run(session, path, session.fs.chmod(Path::new(path), mode))?;
    if !recursive {
        return Ok(());
    }
    let mut pending = vec![normalize_path(Path::new(path))];
    let mut changed = 0usize;
    while let Some(dir) = pending.pop() {
        let shown = dir.display().to_string();
        let kind = run(session, &shown, session.fs.lstat(&dir))?.file_type;
        if crate::file_kind::of(kind) != FileKind::Dir {
            continue;
        }
        for entry in run(session, &shown, session.fs.read_dir(&dir))? {
            changed += 1;
            if changed > MAX_LISTED {
                return Err(format!(
                    "{path}: more than {MAX_LISTED} entries below it; chmod stopped there"
                ));
            }
            let child = dir.join(&entry.name);
            let shown = child.display().to_string();
            if crate::file_kind::of(entry.metadata.file_type) == FileKind::Symlink {
                continue;
            }
            run(session, &shown, session.fs.chmod(&child, mode))?;
            pending.push(child);
        }
    }
    Ok(())
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
