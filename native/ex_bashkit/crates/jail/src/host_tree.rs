//! A directory tree on the host, read and written straight through the
//! kernel, never leaving its root: every path is opened from the root
//! with no symlink followed (`openat2` with `RESOLVE_BENEATH` and
//! `RESOLVE_NO_SYMLINKS` in one call, or component by component with
//! `O_NOFOLLOW` where the kernel lacks it), so no symlink, planted or
//! swapped in meanwhile, leads anywhere else; a symlink in the tree is
//! read as a link, never followed.
//!
//! Three users: the sandbox's git on a work tree in a host mount (listing
//! a directory with its entries' `lstat` in one pass, where bashkit's
//! asynchronous `FileSystem` costs a thread hop a call), every write into
//! a read-write mount (the core's `metadata_guard.rs`), which checks a
//! path and then writes it with no lookup a script could redirect in
//! between, and the reads of every mount (the core's `mount_reads.rs`).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `lstat` says of a file, as git's index keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub dev: u32,
    pub ino: u32,
    pub uid: u32,
    pub gid: u32,
    /// The size, truncated to 32 bits as git keeps it.
    pub size: u32,
}

/// An open descriptor, closed when dropped.
struct Fd(libc::c_int);

impl Fd {
    /// The descriptor, no longer closed by this.
    fn into_raw(self) -> libc::c_int {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// What `lstat` says of an entry.
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    pub stat: Stat,
    /// The permission bits.
    pub perm: u32,
    /// The file's size, whole.
    pub bytes: u64,
    /// The bytes the file takes on disk (its blocks).
    pub disk_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

fn stat_of(st: &libc::stat) -> Stat {
    Stat {
        ctime: (st.st_ctime as u32, st.st_ctime_nsec as u32),
        mtime: (st.st_mtime as u32, st.st_mtime_nsec as u32),
        dev: st.st_dev as u32,
        ino: st.st_ino as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u32,
    }
}

fn kind_of(mode: libc::mode_t) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// An open directory's entries' names (not `.` and `..`).
fn names_of(dir: &Fd) -> io::Result<Vec<CString>> {
    // fdopendir takes the descriptor over: hand it a copy.
    // SAFETY: `dir` is open; the copy is owned by the stream below.
    let copy = check(unsafe { libc::fcntl(dir.0, libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: `copy` is an open directory descriptor.
    let stream = unsafe { libc::fdopendir(copy) };
    if stream.is_null() {
        let error = io::Error::last_os_error();
        // SAFETY: the copy was not taken over.
        unsafe { libc::close(copy) };
        return Err(error);
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: `stream` is open until closedir below.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: readdir's entry holds a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(name.to_owned());
        }
    }
    // SAFETY: the stream is open and closed once.
    unsafe { libc::closedir(stream) };
    Ok(names)
}

/// An open directory's entries (not `.` and `..`) with their `lstat`.
fn entries_of(dir: &Fd) -> io::Result<Vec<(CString, libc::stat)>> {
    Ok(names_of(dir)?
        .into_iter()
        .filter_map(|name| lstat_at(dir, &name).ok().map(|st| (name, st)))
        .collect())
}

/// `name`'s `lstat` in the open directory `dir`.
fn lstat_at(dir: &Fd, name: &std::ffi::CStr) -> io::Result<libc::stat> {
    // SAFETY: a plain-old-data struct the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is open, the name NUL-terminated, `st` ours.
    check(unsafe { libc::fstatat(dir.0, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// Removes `name` from the open directory `parent`, a directory with all
/// it holds (never following a link).
fn remove_tree(parent: &Fd, name: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: `parent` is open; the name is one NUL-terminated component.
    let dir = Fd(check(unsafe {
        libc::openat(
            parent.0,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?);
    for (child, st) in entries_of(&dir)? {
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            remove_tree(&dir, &child)?;
        } else {
            // SAFETY: `dir` is open; the name is NUL-terminated.
            check(unsafe { libc::unlinkat(dir.0, child.as_ptr(), 0) })?;
        }
    }
    // SAFETY: `parent` is open; the name is NUL-terminated.
    check(unsafe { libc::unlinkat(parent.0, name.as_ptr(), libc::AT_REMOVEDIR) }).map(|_| ())
}

/// One component opened below `dir` without following a symlink.
fn openat_nofollow(dir: &Fd, name: &[u8], flags: libc::c_int) -> io::Result<Fd> {
    let name = cstring(name)?;
    // SAFETY: `dir` is open; the name is one NUL-terminated component.
    check(unsafe {
        libc::openat(
            dir.0,
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
    .map(Fd)
}

/// `names` opened below `root` one at a time, none followed if a symlink.
fn open_walking(root: Fd, names: &[&[u8]], flags: libc::c_int) -> io::Result<Fd> {
    let Some((last, dirs)) = names.split_last() else {
        return Ok(root);
    };
    let mut fd = root;
    for name in dirs {
        fd = openat_nofollow(&fd, name, libc::O_RDONLY | libc::O_DIRECTORY)?;
    }
    openat_nofollow(&fd, last, flags)
}

/// Whether `openat2` is there to use (a kernel before 5.6, or a seccomp
/// filter without it, answers `ENOSYS`/`EPERM`: asked once).
static OPENAT2_MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `path` (components joined by `/`, none `..`) opened below `root` in
/// one call, the kernel refusing any symlink and any way out of `root`;
/// `None` where the kernel has no `openat2`.
fn openat2_beneath(root: &Fd, path: &[u8], flags: libc::c_int) -> Option<io::Result<Fd>> {
    use std::sync::atomic::Ordering;
    if OPENAT2_MISSING.load(Ordering::Relaxed) {
        return None;
    }
    let path = match cstring(path) {
        Ok(path) => path,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: an all-zero `open_how` is valid; its fields are set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `root` is open, the path NUL-terminated, `how` ours and
    // its size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.0,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd >= 0 {
        return Some(Ok(Fd(fd as libc::c_int)));
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::ENOSYS | libc::EPERM) => {
            OPENAT2_MISSING.store(true, Ordering::Relaxed);
            None
        }
        // Interrupted by a rename elsewhere in the tree: the walk
        // answers instead.
        Some(libc::EAGAIN) => None,
        _ => Some(Err(error)),
    }
}

static STAGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A host directory tree, read below its root only.
pub struct HostTree {
    root: PathBuf,
}

impl HostTree {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// `relative` opened as a directory, no symlink followed on the way.
    fn open_dir(&self, relative: &Path) -> io::Result<Fd> {
        self.open_beneath(relative, libc::O_RDONLY | libc::O_DIRECTORY)
    }

    /// `relative` opened with `flags` below the root, no component a
    /// symlink (the last one too): one `openat2` that the kernel keeps
    /// beneath the root where it has that call, else each component
    /// opened in turn with `O_NOFOLLOW`.
    fn open_beneath(&self, relative: &Path, flags: libc::c_int) -> io::Result<Fd> {
        let mut names = Vec::new();
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            names.push(name.as_bytes());
        }
        let root = cstring(self.root.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let root = Fd(check(unsafe {
            libc::open(
                root.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?);
        if names.is_empty() {
            return Ok(root);
        }
        match openat2_beneath(&root, &names.join(&b'/'), flags) {
            Some(opened) => opened,
            None => open_walking(root, &names, flags),
        }
    }

    /// The directory `relative`'s entries with their `lstat`.
    pub fn list(&self, relative: &Path) -> io::Result<Vec<Entry>> {
        let dir = self.open_dir(relative)?;
        Ok(entries_of(&dir)?
            .into_iter()
            .map(|(name, st)| Entry {
                name: String::from_utf8_lossy(name.as_bytes()).into_owned(),
                kind: kind_of(st.st_mode),
                stat: stat_of(&st),
                perm: st.st_mode & 0o7777,
                bytes: st.st_size as u64,
                disk_bytes: st.st_blocks as u64 * 512,
            })
            .collect())
    }

    fn split(relative: &Path) -> io::Result<(&Path, CString)> {
        let parent = relative.parent().unwrap_or(Path::new(""));
        let name = relative
            .file_name()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok((parent, cstring(name.as_bytes())?))
    }

    /// One entry's `lstat`.
    pub fn lstat(&self, relative: &Path) -> io::Result<Entry> {
        let (parent, name) = Self::split(relative)?;
        let dir = self.open_dir(parent)?;
        let st = lstat_at(&dir, &name)?;
        Ok(Entry {
            name: name.to_string_lossy().into_owned(),
            kind: kind_of(st.st_mode),
            stat: stat_of(&st),
            perm: st.st_mode & 0o7777,
            bytes: st.st_size as u64,
            disk_bytes: st.st_blocks as u64 * 512,
        })
    }

    /// A regular file's bytes (a symlink there is an error, not followed).
    pub fn read(&self, relative: &Path) -> io::Result<Vec<u8>> {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        Self::split(relative)?;
        let fd = self.open_beneath(relative, libc::O_RDONLY)?;
        // SAFETY: `fd` is open and owned by the File from here on.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd.into_raw()) };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// A symlink's target, as bytes.
    pub fn read_link(&self, relative: &Path) -> io::Result<Vec<u8>> {
        let (parent, name) = Self::split(relative)?;
        let dir = self.open_dir(parent)?;
        let mut buffer = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: `dir` is open, the name NUL-terminated, the buffer ours.
        let len = unsafe {
            libc::readlinkat(
                dir.0,
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        if len < 0 {
            return Err(io::Error::last_os_error());
        }
        buffer.truncate(len as usize);
        Ok(buffer)
    }
}

/// What `statx` says of an entry, not following it: what a session's
/// `stat` of a file in a mount answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub kind: Kind,
    /// The permission bits.
    pub perm: u32,
    pub bytes: u64,
    pub modified: SystemTime,
    /// Where the filesystem records it.
    pub created: Option<SystemTime>,
}

fn time_of(stamp: libc::statx_timestamp) -> SystemTime {
    let whole = Duration::from_secs(stamp.tv_sec.unsigned_abs());
    let base = match stamp.tv_sec >= 0 {
        true => UNIX_EPOCH + whole,
        false => UNIX_EPOCH - whole,
    };
    base + Duration::from_nanos(u64::from(stamp.tv_nsec))
}

/// `name`'s `statx` in the open directory `dir` (`dir` itself for an
/// empty name), not following a symlink.
fn statx_at(dir: &Fd, name: &std::ffi::CStr) -> io::Result<Status> {
    let flags = match name.to_bytes().is_empty() {
        true => libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH,
        false => libc::AT_SYMLINK_NOFOLLOW,
    };
    // SAFETY: a plain-old-data struct the kernel fills.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is open, the name NUL-terminated, `st` ours.
    check(unsafe {
        libc::statx(
            dir.0,
            name.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut st,
        )
    })?;
    let mode = libc::mode_t::from(st.stx_mode);
    Ok(Status {
        kind: kind_of(mode),
        perm: u32::from(st.stx_mode) & 0o7777,
        bytes: st.stx_size,
        modified: time_of(st.stx_mtime),
        created: (st.stx_mask & libc::STATX_BTIME != 0).then(|| time_of(st.stx_btime)),
    })
}

/// Reading a session's files in a mount on the interpreter's own thread:
/// calls that answer at once, whatever is there.
impl HostTree {
    /// `relative`'s status (the root's for an empty path), not following
    /// a symlink there.
    pub fn status(&self, relative: &Path) -> io::Result<Status> {
        if relative.as_os_str().is_empty() {
            return statx_at(&self.open_dir(relative)?, c"");
        }
        let (parent, name) = Self::split(relative)?;
        statx_at(&self.open_dir(parent)?, &name)
    }

    /// The directory `relative`'s entries with their status, in the
    /// order the directory gives them.
    pub fn statuses(&self, relative: &Path) -> io::Result<Vec<(String, Status)>> {
        let dir = self.open_dir(relative)?;
        names_of(&dir)?
            .into_iter()
            .map(|name| {
                let status = statx_at(&dir, &name)?;
                Ok((name.to_string_lossy().into_owned(), status))
            })
            .collect()
    }

    /// A regular file's bytes when it holds at most `limit`; `None` for
    /// anything else there (a directory, a device, a FIFO, which is opened
    /// without waiting for a writer, or a bigger file). A symlink there
    /// is an error.
    pub fn read_at_most(&self, relative: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        Self::split(relative)?;
        let fd = self.open_beneath(relative, libc::O_RDONLY | libc::O_NONBLOCK)?;
        // SAFETY: `fd` is open and owned by the File from here on.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd.into_raw()) };
        let meta = file.metadata()?;
        if !meta.file_type().is_file() || meta.len() > limit {
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.by_ref().take(limit + 1).read_to_end(&mut bytes)?;
        // Grown past the limit since: the caller's slower path reads it.
        Ok((bytes.len() as u64 <= limit).then_some(bytes))
    }
}

/// Writing, for a read-write mount: the same walk from the root, no
/// symlink followed on the way or at the end.
impl HostTree {
    /// `relative`'s directory, opened, and its last component.
    fn parent_of(&self, relative: &Path) -> io::Result<(Fd, CString)> {
        let (parent, name) = Self::split(relative)?;
        Ok((self.open_dir(parent)?, name))
    }

    fn open_file(&self, relative: &Path, flags: libc::c_int) -> io::Result<std::fs::File> {
        use std::os::fd::FromRawFd;
        let (dir, name) = self.parent_of(relative)?;
        // SAFETY: `dir` is open; the name is one NUL-terminated component.
        let fd = check(unsafe {
            libc::openat(
                dir.0,
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: `fd` is open and owned by the File from here on.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    pub fn write(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        self.open_file(relative, flags)?.write_all(bytes)
    }

    pub fn append(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND;
        self.open_file(relative, flags)?.write_all(bytes)
    }

    /// Every missing directory of `relative`, made.
    pub fn mkdir_all(&self, relative: &Path) -> io::Result<()> {
        let mut done = PathBuf::new();
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            let dir = self.open_dir(&done)?;
            let name_c = cstring(name.as_bytes())?;
            // SAFETY: `dir` is open; the name is one NUL-terminated component.
            let made = unsafe { libc::mkdirat(dir.0, name_c.as_ptr(), 0o777) };
            if made != 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EEXIST) {
                    return Err(error);
                }
            }
            done.push(name);
        }
        Ok(())
    }

    /// Removes a file (or an empty directory, `dir`).
    pub fn remove(&self, relative: &Path, dir: bool) -> io::Result<()> {
        let (parent, name) = self.parent_of(relative)?;
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: `parent` is open; the name is one NUL-terminated component.
        check(unsafe { libc::unlinkat(parent.0, name.as_ptr(), flags) }).map(|_| ())
    }

    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = self.parent_of(from)?;
        let (to_dir, to_name) = self.parent_of(to)?;
        // SAFETY: both directories are open; the names are NUL-terminated.
        check(unsafe { libc::renameat(from_dir.0, from_name.as_ptr(), to_dir.0, to_name.as_ptr()) })
            .map(|_| ())
    }

    /// Replaces `relative` with `bytes`, at once: written beside it,
    /// synced, then renamed over it (its permission bits kept). A symlink
    /// there is refused, never written through.
    pub fn replace(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        self.replace_with(relative, |file| file.write_all(bytes))
    }

    /// Replaces `relative` with a copy of `source`, as [`Self::replace`].
    pub fn replace_from(&self, relative: &Path, source: &mut std::fs::File) -> io::Result<()> {
        self.replace_with(relative, |file| io::copy(source, file).map(|_| ()))
    }

    fn replace_with(
        &self,
        relative: &Path,
        fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    ) -> io::Result<()> {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        let (dir, name) = self.parent_of(relative)?;
        let kept = match lstat_at(&dir, &name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "refusing to create or write through a symlink (sandbox security)",
                ))
            }
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory",
                ))
            }
            Ok(st) => Some(st.st_mode & 0o7777),
            Err(_) => None,
        };
        let staged = cstring(
            format!(
                ".bashkit-tmp-{}-{}",
                std::process::id(),
                STAGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )
            .as_bytes(),
        )?;
        // SAFETY: `dir` is open; the name is one NUL-terminated component.
        let fd = check(unsafe {
            libc::openat(
                dir.0,
                staged.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: `fd` is open and owned by the File from here on.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        let written = (|| {
            fill(&mut file)?;
            file.flush()?;
            if let Some(mode) = kept {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            file.sync_all()?;
            // SAFETY: both names are NUL-terminated, in the open `dir`.
            check(unsafe { libc::renameat(dir.0, staged.as_ptr(), dir.0, name.as_ptr()) })
        })();
        if written.is_err() {
            // SAFETY: as above; the staged file is ours.
            unsafe { libc::unlinkat(dir.0, staged.as_ptr(), 0) };
        }
        written.map(|_| ())
    }

    /// Appends to `relative` (made if missing), synced.
    pub fn append_synced(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND;
        let mut file = self.open_file(relative, flags)?;
        file.write_all(bytes)?;
        file.sync_all()
    }

    /// A regular file opened for reading (a symlink is an error).
    pub fn open_read(&self, relative: &Path) -> io::Result<std::fs::File> {
        self.open_file(relative, libc::O_RDONLY)
    }

    /// Makes the directory `relative` (its parent must exist).
    pub fn mkdir(&self, relative: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        // SAFETY: `dir` is open; the name is one NUL-terminated component.
        check(unsafe { libc::mkdirat(dir.0, name.as_ptr(), 0o777) }).map(|_| ())
    }

    /// Removes an entry of any kind: a link itself, never its target; a
    /// directory with what it holds where `recursive`.
    pub fn remove_entry(&self, relative: &Path, recursive: bool) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        let st = lstat_at(&dir, &name)?;
        match (st.st_mode & libc::S_IFMT == libc::S_IFDIR, recursive) {
            (true, true) => remove_tree(&dir, &name),
            // SAFETY: `dir` is open; the name is NUL-terminated.
            (true, false) => {
                check(unsafe { libc::unlinkat(dir.0, name.as_ptr(), libc::AT_REMOVEDIR) })
                    .map(|_| ())
            }
            // SAFETY: as above.
            (false, _) => check(unsafe { libc::unlinkat(dir.0, name.as_ptr(), 0) }).map(|_| ()),
        }
    }

    /// Makes `relative` a symlink to `target` (stored as given).
    pub fn symlink(&self, target: &Path, relative: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        let target = cstring(target.as_os_str().as_bytes())?;
        // SAFETY: `dir` is open; both strings are NUL-terminated.
        check(unsafe { libc::symlinkat(target.as_ptr(), dir.0, name.as_ptr()) }).map(|_| ())
    }

    /// Sets `relative`'s modification time (a link's own, never its
    /// target's).
    pub fn set_mtime(&self, relative: &Path, time: std::time::SystemTime) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        let since = time
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let times = [
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
            libc::timespec {
                tv_sec: since.as_secs() as libc::time_t,
                tv_nsec: since.subsec_nanos() as libc::c_long,
            },
        ];
        // SAFETY: `dir` is open, the name NUL-terminated, `times` ours.
        check(unsafe {
            libc::utimensat(
                dir.0,
                name.as_ptr(),
                times.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })
        .map(|_| ())
    }

    /// Sets a file's or a directory's permission bits (never a link's
    /// target's).
    pub fn chmod(&self, relative: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let file = self
            .open_file(relative, libc::O_RDONLY)
            .or_else(|_| self.open_file(relative, libc::O_WRONLY))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_reads_and_never_follows_a_link_out() {
        let base = std::env::temp_dir().join(format!("host_tree_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("tree/sub")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), "secret").unwrap();
        std::fs::write(base.join("tree/sub/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("tree/out")).unwrap();
        std::os::unix::fs::symlink(base.join("outside/secret"), base.join("tree/link")).unwrap();
        let tree = HostTree::new(base.join("tree"));

        let mut names: Vec<(String, bool)> = tree
            .list(Path::new(""))
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind == Kind::Symlink))
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                ("link".to_string(), true),
                ("out".to_string(), true),
                ("sub".to_string(), false)
            ]
        );
        assert_eq!(tree.read(Path::new("sub/a.txt")).unwrap(), b"a");
        assert!(tree.read(Path::new("link")).is_err());
        assert!(tree.read(Path::new("out/secret")).is_err());
        assert!(tree.list(Path::new("out")).is_err());
        assert!(tree.read(Path::new("../outside/secret")).is_err());
        assert_eq!(
            tree.read_link(Path::new("link")).unwrap(),
            base.join("outside/secret").as_os_str().as_bytes()
        );
        // Writes stay inside too: through a link they fail.
        assert!(tree.write(Path::new("link"), b"x").is_err());
        assert!(tree.write(Path::new("out/new"), b"x").is_err());
        assert!(tree.mkdir_all(Path::new("out/deeper")).is_err());
        assert_eq!(
            std::fs::read(base.join("outside/secret")).unwrap(),
            b"secret"
        );
        tree.mkdir_all(Path::new("made/here")).unwrap();
        tree.write(Path::new("made/here/f"), b"1").unwrap();
        tree.append(Path::new("made/here/f"), b"2").unwrap();
        tree.rename(Path::new("made/here/f"), Path::new("made/g"))
            .unwrap();
        tree.chmod(Path::new("made/g"), 0o444).unwrap();
        assert_eq!(tree.read(Path::new("made/g")).unwrap(), b"12");
        tree.remove(Path::new("made/g"), false).unwrap();
        tree.remove(Path::new("made/here"), true).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn openat2_and_the_walk_open_the_same_and_refuse_the_same() {
        let base = std::env::temp_dir().join(format!("host_tree_open_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("tree/a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("tree/a/b/f"), "f").unwrap();
        std::fs::write(base.join("outside/secret"), "secret").unwrap();
        std::os::unix::fs::symlink("../outside", base.join("tree/a/up")).unwrap();
        std::os::unix::fs::symlink("b", base.join("tree/a/inner")).unwrap();
        std::os::unix::fs::symlink("b/f", base.join("tree/a/file_link")).unwrap();
        let root = || {
            let path = cstring(base.join("tree").as_os_str().as_bytes()).unwrap();
            // SAFETY: a NUL-terminated path; the result is checked.
            Fd(
                check(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) })
                    .unwrap(),
            )
        };
        // What each open must answer: the errors it may give (none: it
        // opens). Through a link the walk hears ELOOP or ENOTDIR (asked
        // for a directory, it found a link), the kernel's resolution too.
        let link = &[libc::ELOOP, libc::ENOTDIR][..];
        let cases: &[(&str, libc::c_int, &[i32])] = &[
            ("a/b/f", libc::O_RDONLY, &[]),
            ("a/b", libc::O_RDONLY | libc::O_DIRECTORY, &[]),
            ("a/inner/f", libc::O_RDONLY, link),
            ("a/file_link", libc::O_RDONLY, &[libc::ELOOP]),
            ("a/up/secret", libc::O_RDONLY, link),
            (
                "a/b/f",
                libc::O_RDONLY | libc::O_DIRECTORY,
                &[libc::ENOTDIR],
            ),
            ("a/nope", libc::O_RDONLY, &[libc::ENOENT]),
        ];
        let answer = |opened: io::Result<Fd>| opened.err().map(|e| e.raw_os_error().unwrap());
        for &(path, flags, refused) in cases {
            let names: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
            let walked = answer(open_walking(root(), &names, flags));
            assert_eq!(walked.is_some(), !refused.is_empty(), "{path}: {walked:?}");
            assert!(
                walked.is_none_or(|e| refused.contains(&e)),
                "{path}: {walked:?}"
            );
            if let Some(opened) = openat2_beneath(&root(), path.as_bytes(), flags) {
                let opened = answer(opened);
                assert_eq!(opened.is_some(), !refused.is_empty(), "{path}: {opened:?}");
                assert!(
                    opened.is_none_or(|e| refused.contains(&e)),
                    "{path}: {opened:?}"
                );
            }
        }
        // `..` never gets as far as the kernel: both refuse it first.
        let tree = HostTree::new(base.join("tree"));
        assert!(tree.read(Path::new("a/../../outside/secret")).is_err());
        assert_eq!(tree.read(Path::new("a/b/f")).unwrap(), b"f");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
