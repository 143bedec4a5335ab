//! A session's own files, copy-on-write: what bashkit's `InMemoryFs` does,
//! path for path and error for error, over a persistent map whose clone is
//! a pointer copy. A fork of the session takes its files in constant time
//! and both sides share every file neither has changed since
//! (`ExBashkit.Session.fork/2`); a change copies one file and the few map
//! nodes above it. Usage is kept as a running sum, so a write checks the
//! filesystem limits without walking every file.

use std::io::{Error as IoError, ErrorKind};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use bashkit::{
    async_trait, normalize_path, DirEntry, FileSystem, FileSystemExt, FileType, FsLimits, FsUsage,
    Metadata, VfsEntry, VfsEntryKind, VfsSnapshot,
};
use imbl::ordmap::DiffItem;
use imbl::OrdMap;

/// What one read of `/dev/zero` gives, as bashkit bounds it.
const DEV_ZERO_READ_BYTES: usize = 1 << 20;
/// What one read of `/dev/urandom` or `/dev/random` gives.
const DEV_RANDOM_READ_BYTES: usize = 8192;

#[derive(Clone)]
enum Entry {
    /// Contents shared with every fork that has not changed them.
    File {
        content: Arc<Vec<u8>>,
        metadata: Metadata,
    },
    Directory {
        metadata: Metadata,
    },
    Symlink {
        target: PathBuf,
        metadata: Metadata,
    },
    Fifo {
        content: Arc<Vec<u8>>,
        metadata: Metadata,
    },
}

impl Entry {
    fn metadata(&self) -> &Metadata {
        match self {
            Entry::File { metadata, .. }
            | Entry::Directory { metadata }
            | Entry::Symlink { metadata, .. }
            | Entry::Fifo { metadata, .. } => metadata,
        }
    }

    fn metadata_mut(&mut self) -> &mut Metadata {
        match self {
            Entry::File { metadata, .. }
            | Entry::Directory { metadata }
            | Entry::Symlink { metadata, .. }
            | Entry::Fifo { metadata, .. } => metadata,
        }
    }

    /// What it counts toward the filesystem's total: contents, or a
    /// link's target.
    fn bytes(&self) -> u64 {
        match self {
            Entry::File { content, .. } | Entry::Fifo { content, .. } => content.len() as u64,
            Entry::Symlink { metadata, .. } => metadata.size,
            Entry::Directory { .. } => 0,
        }
    }

    /// Every entry but a directory counts toward the file quota.
    fn is_file_like(&self) -> bool {
        !matches!(self, Entry::Directory { .. })
    }

    fn is_dir(&self) -> bool {
        matches!(self, Entry::Directory { .. })
    }

    fn file(content: Vec<u8>, mode: u32) -> Self {
        Entry::File {
            metadata: metadata(FileType::File, content.len() as u64, mode),
            content: Arc::new(content),
        }
    }

    fn directory(mode: u32) -> Self {
        Entry::Directory {
            metadata: metadata(FileType::Directory, 0, mode),
        }
    }
}

/// Entries are the same when nothing a reader sees differs; contents are
/// compared by identity, never byte by byte.
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.metadata(), other.metadata());
        let same_metadata = a.file_type == b.file_type
            && a.size == b.size
            && a.mode == b.mode
            && a.modified == b.modified
            && a.created == b.created;
        same_metadata
            && match (self, other) {
                (Entry::File { content: a, .. }, Entry::File { content: b, .. })
                | (Entry::Fifo { content: a, .. }, Entry::Fifo { content: b, .. }) => {
                    Arc::ptr_eq(a, b)
                }
                (Entry::Symlink { target: a, .. }, Entry::Symlink { target: b, .. }) => a == b,
                (Entry::Directory { .. }, Entry::Directory { .. }) => true,
                _ => false,
            }
    }
}

fn metadata(file_type: FileType, size: u64, mode: u32) -> Metadata {
    let now = SystemTime::now();
    Metadata {
        file_type,
        size,
        mode,
        modified: now,
        created: now,
    }
}

/// The entries by path, with their usage summed as they change. Paths
/// order by component, so a directory's descendants follow it.
#[derive(Clone, Default)]
struct Tree {
    entries: OrdMap<PathBuf, Entry>,
    bytes: u64,
    /// What of `bytes` is links' targets: an append's check leaves them
    /// out, as bashkit's does.
    link_bytes: u64,
    files: u64,
    dirs: u64,
}

impl Tree {
    fn get(&self, path: &Path) -> Option<&Entry> {
        self.entries.get(path)
    }

    fn insert(&mut self, path: PathBuf, entry: Entry) {
        self.count(&entry, true);
        if let Some(old) = self.entries.insert(path, entry) {
            self.count(&old, false);
        }
    }

    fn remove(&mut self, path: &Path) -> Option<Entry> {
        let old = self.entries.remove(path)?;
        self.count(&old, false);
        Some(old)
    }

    fn count(&mut self, entry: &Entry, added: bool) {
        let bytes = entry.bytes();
        let link_bytes = if matches!(entry, Entry::Symlink { .. }) {
            bytes
        } else {
            0
        };
        let (files, dirs) = (u64::from(entry.is_file_like()), u64::from(entry.is_dir()));
        if added {
            self.bytes += bytes;
            self.link_bytes += link_bytes;
            self.files += files;
            self.dirs += dirs;
        } else {
            self.bytes -= bytes;
            self.link_bytes -= link_bytes;
            self.files -= files;
            self.dirs -= dirs;
        }
    }

    /// `path` and everything under it.
    fn subtree<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = (&'a PathBuf, &'a Entry)> {
        self.entries
            .range::<_, Path>((Bound::Included(path), Bound::Unbounded))
            .take_while(move |(key, _)| key.starts_with(path))
    }

    fn children<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = (&'a PathBuf, &'a Entry)> {
        self.subtree(path)
            .filter(move |(key, _)| key.parent() == Some(path))
    }

    fn has_children(&self, path: &Path) -> bool {
        self.subtree(path).nth(1).is_some()
    }

    /// Whether an ancestor of `path` is a regular file or FIFO.
    fn ancestor_is_file(&self, path: &Path) -> bool {
        path.ancestors().skip(1).any(|ancestor| {
            matches!(
                self.get(ancestor),
                Some(Entry::File { .. } | Entry::Fifo { .. })
            )
        })
    }

    /// A missing parent: `ENOTDIR` under a file, otherwise not found (a
    /// symlink ancestor is left to bashkit's following layer).
    fn missing_parent(&self, path: &Path) -> bashkit::Error {
        if self.ancestor_is_file(path) {
            IoError::new(ErrorKind::NotADirectory, "not a directory").into()
        } else {
            IoError::new(ErrorKind::NotFound, "parent directory not found").into()
        }
    }
}

/// A session's files at one moment (a checkpoint's): sharing every
/// content with the files it was taken from.
#[derive(Clone)]
pub struct Files(Tree);

impl Files {
    /// The bytes of contents `self` holds that `newer` does not share: what
    /// keeping `self` beside `newer` costs.
    pub fn held_beyond(&self, newer: &Files) -> u64 {
        self.0
            .entries
            .diff(&newer.0.entries)
            .map(|change| match change {
                DiffItem::Remove(_, old) => content_bytes(old),
                DiffItem::Update { old, new } if !same_content(old.1, new.1) => {
                    content_bytes(old.1)
                }
                _ => 0,
            })
            .sum()
    }
}

fn content_bytes(entry: &Entry) -> u64 {
    match entry {
        Entry::File { content, .. } | Entry::Fifo { content, .. } => content.len() as u64,
        _ => 0,
    }
}

fn same_content(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (
            Entry::File { content: a, .. } | Entry::Fifo { content: a, .. },
            Entry::File { content: b, .. } | Entry::Fifo { content: b, .. },
        ) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// A session's in-memory files; `fork` shares them with a new session.
pub struct CowFs {
    tree: RwLock<Tree>,
    limits: FsLimits,
}

impl CowFs {
    /// The directories and devices bashkit's own in-memory filesystem
    /// starts with.
    pub fn with_limits(limits: FsLimits) -> Self {
        let mut tree = Tree::default();
        tree.insert(PathBuf::from("/"), Entry::directory(0o755));
        for dir in ["/tmp", "/home", "/home/user", "/dev", "/dev/fd"] {
            // `/tmp` is world-writable and sticky, as on Linux.
            let mode = if dir == "/tmp" { 0o1777 } else { 0o755 };
            tree.insert(PathBuf::from(dir), Entry::directory(mode));
        }
        for device in ["/dev/null", "/dev/urandom", "/dev/random"] {
            tree.insert(PathBuf::from(device), Entry::file(Vec::new(), 0o666));
        }
        Self {
            tree: RwLock::new(tree),
            limits,
        }
    }

    /// Makes a directory and its missing parents, for setting a session
    /// up (its user's home).
    pub fn add_dir(&self, path: &str, mode: u32) {
        let path = normalize_path(Path::new(path));
        if self.limits.validate_path(&path).is_err() {
            return;
        }
        let mut tree = self.write();
        let mut current = PathBuf::from("/");
        for component in path.components().skip(1) {
            current.push(component);
            if tree.get(&current).is_none() {
                if self.limits.check_dir_count(tree.dirs).is_err() {
                    return;
                }
                tree.insert(current.clone(), Entry::directory(mode));
            }
        }
    }

    /// Gives this filesystem `other`'s files, sharing their contents: a
    /// change on either side from now on is its own.
    pub fn share_from(&self, other: &CowFs) {
        self.put_back(&other.capture());
    }

    /// Its files now, shared: a later change here does not touch them.
    pub fn capture(&self) -> Files {
        Files(self.read().clone())
    }

    /// Makes `files` its files again.
    pub fn put_back(&self, files: &Files) {
        *self.write() = files.0.clone();
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tree> {
        self.tree
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tree> {
        self.tree
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn checked(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.limits.validate_path(path).map_err(invalid)?;
        Ok(normalize_path(path))
    }

    /// The limits a write of `new_size` bytes at `path` must keep.
    fn check_write(&self, tree: &Tree, path: &Path, new_size: usize) -> bashkit::Result<()> {
        self.limits
            .check_file_size(new_size as u64)
            .map_err(invalid)?;
        let existing = tree.get(path).filter(|entry| entry.is_file_like());
        if existing.is_none() {
            self.limits.check_file_count(tree.files).map_err(invalid)?;
        }
        let old_size = existing.map_or(0, Entry::bytes);
        let new_total = tree.bytes - old_size + new_size as u64;
        if new_total > self.limits.max_total_bytes {
            return Err(full(new_total, self.limits.max_total_bytes));
        }
        Ok(())
    }

    /// The parent a new entry at `path` needs: a directory (or, for a
    /// write, a symlink the following layer resolved).
    fn parent_ready(tree: &Tree, path: &Path, symlink_ok: bool) -> bashkit::Result<()> {
        match path.parent() {
            Some(parent) if parent != Path::new("/") => match tree.get(parent) {
                Some(Entry::Directory { .. }) => Ok(()),
                Some(Entry::Symlink { .. }) if symlink_ok => Ok(()),
                _ => Err(tree.missing_parent(path)),
            },
            _ => Ok(()),
        }
    }

    fn snapshot(&self) -> VfsSnapshot {
        let tree = self.read();
        let entries = tree
            .entries
            .iter()
            .map(|(path, entry)| VfsEntry {
                path: path.clone(),
                kind: match entry {
                    Entry::File { content, .. } => VfsEntryKind::File {
                        content: content.as_ref().clone(),
                    },
                    Entry::Directory { .. } => VfsEntryKind::Directory,
                    Entry::Symlink { target, .. } => VfsEntryKind::Symlink {
                        target: target.clone(),
                    },
                    Entry::Fifo { .. } => VfsEntryKind::Fifo,
                },
                mode: entry.metadata().mode,
            })
            .collect();
        VfsSnapshot::from_entries(entries)
    }

    /// Replaces every file with the snapshot's, or with nothing changed
    /// if a single entry breaks the limits.
    fn restore(&self, snapshot: &VfsSnapshot) -> bashkit::Result<()> {
        let mut total = 0u64;
        let mut files = 0u64;
        for entry in snapshot.entries() {
            self.limits.validate_path(&entry.path).map_err(invalid)?;
            if let VfsEntryKind::File { content } = &entry.kind {
                self.limits
                    .check_file_size(content.len() as u64)
                    .map_err(invalid)?;
                total += content.len() as u64;
            }
            if !matches!(entry.kind, VfsEntryKind::Directory) {
                files += 1;
            }
        }
        if total > self.limits.max_total_bytes {
            return Err(IoError::other("snapshot total bytes exceed limit").into());
        }
        self.limits.check_final_file_count(files).map_err(invalid)?;
        let mut tree = Tree::default();
        for entry in snapshot.entries() {
            let mode = entry.mode;
            let restored = match &entry.kind {
                VfsEntryKind::File { content } => Entry::file(content.clone(), mode),
                VfsEntryKind::Directory => Entry::directory(mode),
                VfsEntryKind::Symlink { target } => Entry::Symlink {
                    metadata: metadata(FileType::Symlink, 0, mode),
                    target: target.clone(),
                },
                VfsEntryKind::Fifo => Entry::Fifo {
                    content: Arc::new(Vec::new()),
                    metadata: metadata(FileType::Fifo, 0, mode),
                },
            };
            tree.insert(entry.path.clone(), restored);
        }
        *self.write() = tree;
        Ok(())
    }
}

fn invalid(error: impl std::fmt::Display) -> bashkit::Error {
    IoError::new(ErrorKind::InvalidInput, error.to_string()).into()
}

fn full(total: u64, limit: u64) -> bashkit::Error {
    IoError::other(format!(
        "filesystem full: {total} bytes would exceed {limit} byte limit"
    ))
    .into()
}

fn not_found(message: &'static str) -> bashkit::Error {
    IoError::new(ErrorKind::NotFound, message).into()
}

fn is_a_directory() -> bashkit::Error {
    IoError::other("is a directory").into()
}

fn random_bytes() -> bashkit::Result<Vec<u8>> {
    let mut buf = vec![0; DEV_RANDOM_READ_BYTES];
    // The OS's CSPRNG: scripts take tokens and keys from these devices.
    getrandom::fill(&mut buf).map_err(|_| IoError::other("random device unavailable"))?;
    Ok(buf)
}

fn discards_writes(path: &Path) -> bool {
    path == Path::new("/dev/null") || path == Path::new("/dev/zero")
}

#[async_trait]
impl FileSystemExt for CowFs {
    fn backend_kind(&self) -> &'static str {
        // Restores what bashkit's in-memory filesystem does, in both
        // directions: snapshots move between the two unchanged.
        "in-memory"
    }

    async fn mkfifo(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        let mut tree = self.write();
        if let Some(parent) = path.parent() {
            if parent != Path::new("/") && tree.get(parent).is_none() {
                return Err(not_found("parent directory not found"));
            }
        }
        if tree.get(&path).is_some() {
            return Err(IoError::new(ErrorKind::AlreadyExists, "file exists").into());
        }
        self.limits.check_file_count(tree.files).map_err(invalid)?;
        let fifo = Entry::Fifo {
            content: Arc::new(Vec::new()),
            metadata: metadata(FileType::Fifo, 0, mode),
        };
        tree.insert(path, fifo);
        Ok(())
    }

    fn usage(&self) -> FsUsage {
        let tree = self.read();
        FsUsage::new(tree.bytes, tree.files, tree.dirs)
    }

    fn limits(&self) -> FsLimits {
        self.limits.clone()
    }

    fn vfs_snapshot(&self) -> Option<VfsSnapshot> {
        Some(self.snapshot())
    }

    fn vfs_restore(&self, snapshot: &VfsSnapshot) -> bashkit::Result<()> {
        self.restore(snapshot)
    }
}

#[async_trait]
impl FileSystem for CowFs {
    async fn read_file(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        let path = self.checked(path)?;
        if path == Path::new("/dev/urandom") || path == Path::new("/dev/random") {
            return random_bytes();
        }
        if path == Path::new("/dev/zero") {
            return Ok(vec![0; DEV_ZERO_READ_BYTES]);
        }
        let tree = self.read();
        match tree.get(&path) {
            Some(Entry::File { content, .. } | Entry::Fifo { content, .. }) => {
                Ok(content.as_ref().clone())
            }
            Some(Entry::Directory { .. }) => Err(is_a_directory()),
            // Links are followed by the layer above, never here.
            Some(Entry::Symlink { .. }) => Err(not_found("file not found")),
            None if tree.ancestor_is_file(&path) => {
                Err(IoError::new(ErrorKind::NotADirectory, "not a directory").into())
            }
            None => Err(not_found("file not found")),
        }
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        if discards_writes(&path) {
            return Ok(());
        }
        let mut tree = self.write();
        Self::parent_ready(&tree, &path, true)?;
        let fifo = match tree.get(&path) {
            Some(Entry::Directory { .. }) => return Err(is_a_directory()),
            Some(Entry::Fifo { .. }) => true,
            _ => false,
        };
        self.check_write(&tree, &path, content.len())?;
        let entry = if fifo {
            Entry::Fifo {
                metadata: metadata(FileType::Fifo, content.len() as u64, 0o644),
                content: Arc::new(content.to_vec()),
            }
        } else {
            Entry::file(content.to_vec(), 0o644)
        };
        tree.insert(path, entry);
        Ok(())
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        if discards_writes(&path) {
            return Ok(());
        }
        let mut tree = self.write();
        let current = match tree.get(&path) {
            Some(Entry::Directory { .. }) => return Err(is_a_directory()),
            Some(Entry::Symlink { .. }) => return Err(not_found("file not found")),
            Some(Entry::File { content, .. } | Entry::Fifo { content, .. }) => content.len(),
            None => {
                self.check_write(&tree, &path, content.len())?;
                Self::parent_ready(&tree, &path, true)?;
                tree.insert(path, Entry::file(content.to_vec(), 0o644));
                return Ok(());
            }
        };
        self.limits
            .check_file_size((current + content.len()) as u64)
            .map_err(invalid)?;
        let new_total = tree.bytes - tree.link_bytes + content.len() as u64;
        if new_total > self.limits.max_total_bytes {
            return Err(full(new_total, self.limits.max_total_bytes));
        }
        let Some(mut entry) = tree.remove(&path) else {
            unreachable!("checked above, under the same lock")
        };
        if let Entry::File {
            content: existing,
            metadata,
        }
        | Entry::Fifo {
            content: existing,
            metadata,
        } = &mut entry
        {
            // In place unless a fork still shares the old contents.
            let grown = Arc::make_mut(existing);
            grown.extend_from_slice(content);
            metadata.size = grown.len() as u64;
            metadata.modified = SystemTime::now();
        }
        tree.insert(path, entry);
        Ok(())
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        let mut tree = self.write();
        if recursive {
            let mut current = PathBuf::from("/");
            for component in path.components().skip(1) {
                current.push(component);
                match tree.get(&current) {
                    Some(Entry::Directory { .. }) => {}
                    Some(_) => {
                        return Err(IoError::new(ErrorKind::AlreadyExists, "file exists").into());
                    }
                    None => {
                        self.limits.check_dir_count(tree.dirs).map_err(invalid)?;
                        tree.insert(current.clone(), Entry::directory(0o755));
                    }
                }
            }
            return Ok(());
        }
        // A symlink parent is refused: the following layer resolves it.
        Self::parent_ready(&tree, &path, false)?;
        if tree.get(&path).is_some() {
            return Err(IoError::new(ErrorKind::AlreadyExists, "directory exists").into());
        }
        self.limits.check_dir_count(tree.dirs).map_err(invalid)?;
        tree.insert(path, Entry::directory(0o755));
        Ok(())
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        let mut tree = self.write();
        match tree.get(&path) {
            Some(Entry::Directory { .. }) if recursive => {
                let doomed: Vec<PathBuf> = tree.subtree(&path).map(|(p, _)| p.clone()).collect();
                for doomed in doomed {
                    tree.remove(&doomed);
                }
            }
            Some(Entry::Directory { .. }) if tree.has_children(&path) => {
                return Err(IoError::other("directory not empty").into());
            }
            Some(_) => {
                tree.remove(&path);
            }
            None => return Err(not_found("not found")),
        }
        Ok(())
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        let path = self.checked(path)?;
        let tree = self.read();
        match tree.get(&path) {
            Some(entry) => Ok(entry.metadata().clone()),
            None if tree.ancestor_is_file(&path) => {
                Err(IoError::new(ErrorKind::NotADirectory, "not a directory").into())
            }
            None => Err(not_found("not found")),
        }
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        let path = self.checked(path)?;
        let tree = self.read();
        match tree.get(&path) {
            Some(Entry::Directory { .. }) => Ok(tree
                .children(&path)
                .map(|(child, entry)| DirEntry {
                    name: child
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    metadata: entry.metadata().clone(),
                })
                .collect()),
            Some(_) => Err(IoError::other("not a directory").into()),
            None => Err(not_found("not found")),
        }
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        let path = self.checked(path)?;
        Ok(self.read().get(&path).is_some())
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let from = self.checked(from)?;
        let to = self.checked(to)?;
        let mut tree = self.write();
        if from == to {
            return match tree.get(&from) {
                Some(_) => Ok(()),
                None => Err(not_found("not found")),
            };
        }
        if let Some(parent) = to.parent() {
            if !matches!(tree.get(parent), Some(Entry::Directory { .. })) {
                return Err(tree.missing_parent(&to));
            }
        }
        let moving_dir = match tree.get(&from) {
            Some(entry) => entry.is_dir(),
            None => return Err(not_found("not found")),
        };
        let target = tree.get(&to);
        if moving_dir {
            if to.starts_with(&from) {
                return Err(IoError::new(
                    ErrorKind::InvalidInput,
                    "cannot move a directory into itself",
                )
                .into());
            }
            match target {
                Some(Entry::Directory { .. }) if tree.has_children(&to) => {
                    return Err(IoError::other("directory not empty").into());
                }
                Some(Entry::Directory { .. }) | None => {}
                Some(_) => {
                    return Err(IoError::other("cannot rename directory over file").into());
                }
            }
        } else if matches!(target, Some(Entry::Directory { .. })) {
            return Err(IoError::other("cannot rename file over directory").into());
        }
        let moved: Vec<(PathBuf, Entry)> = tree
            .subtree(&from)
            .map(|(path, entry)| (path.clone(), entry.clone()))
            .take(if moving_dir { usize::MAX } else { 1 })
            .collect();
        for (path, _) in &moved {
            tree.remove(path);
        }
        for (path, entry) in moved {
            let suffix = path.strip_prefix(&from).expect("a path under `from`");
            tree.insert(bashkit::vfs_join(&to, suffix), entry);
        }
        Ok(())
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let from = self.checked(from)?;
        let to = self.checked(to)?;
        let mut tree = self.write();
        let entry = tree
            .get(&from)
            .cloned()
            .ok_or_else(|| not_found("not found"))?;
        if entry.is_dir() {
            return Err(IoError::other("cannot copy directory").into());
        }
        if matches!(tree.get(&to), Some(Entry::Directory { .. })) {
            return Err(IoError::other("cannot copy file over directory").into());
        }
        if let Some(parent) = to.parent() {
            if !matches!(tree.get(parent), Some(Entry::Directory { .. })) {
                return Err(tree.missing_parent(&to));
            }
        }
        let size = match &entry {
            Entry::File { content, .. } | Entry::Fifo { content, .. } => content.len(),
            _ => 0,
        };
        self.check_write(&tree, &to, size)?;
        // The copy shares the contents until one of the two changes.
        tree.insert(to, entry);
        Ok(())
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        self.limits.validate_path(link).map_err(invalid)?;
        self.limits.validate_path(target).map_err(invalid)?;
        let link = normalize_path(link);
        let size = target.as_os_str().as_encoded_bytes().len();
        let mut tree = self.write();
        if let Some(parent) = link.parent() {
            if parent != Path::new("/")
                && !matches!(tree.get(parent), Some(Entry::Directory { .. }))
            {
                return Err(not_found("parent directory not found"));
            }
        }
        self.check_write(&tree, &link, size)?;
        let entry = Entry::Symlink {
            target: target.to_path_buf(),
            metadata: metadata(FileType::Symlink, size as u64, 0o777),
        };
        tree.insert(link, entry);
        Ok(())
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        let path = self.checked(path)?;
        match self.read().get(&path) {
            Some(Entry::Symlink { target, .. }) => Ok(target.clone()),
            Some(_) => Err(IoError::other("not a symlink").into()),
            None => Err(not_found("not found")),
        }
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        let mut tree = self.write();
        match tree.entries.get_mut(&path) {
            Some(entry) => {
                entry.metadata_mut().mode = mode;
                Ok(())
            }
            None => Err(not_found("not found")),
        }
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        let path = self.checked(path)?;
        let mut tree = self.write();
        match tree.entries.get_mut(&path) {
            Some(entry) => {
                entry.metadata_mut().modified = time;
                Ok(())
            }
            None => Err(not_found("not found")),
        }
    }
}
