//! A work tree in a host mount, read straight from the kernel: listing a
//! directory and its entries' `lstat` in one pass, and reading files,
//! where bashkit's asynchronous `FileSystem` costs a thread hop a call
//! (`git status` on 5,000 files spent most of its time there).
//!
//! Containment is the same as bashkit's `RealFs` gives: every path is
//! opened component by component from the mount's root with `O_NOFOLLOW`
//! (`openat`), so no symlink, planted or swapped in while git runs, leads
//! out of the mount; a symlink in the tree is read as a link, never
//! followed. Writes still go through the session's filesystem.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::index_file::Stat;

/// An open descriptor, closed when dropped.
struct Fd(libc::c_int);

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
}

#[derive(Clone, Copy, PartialEq, Eq)]
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

/// A host directory tree, read below its root only.
pub struct HostTree {
    root: PathBuf,
}

impl HostTree {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// `relative` opened as a directory, each component without
    /// following a symlink.
    fn open_dir(&self, relative: &Path) -> io::Result<Fd> {
        let root = cstring(self.root.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let mut fd = Fd(check(unsafe {
            libc::open(
                root.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?);
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            let name = cstring(name.as_bytes())?;
            // SAFETY: `fd` is open; the name is one NUL-terminated component.
            fd = Fd(check(unsafe {
                libc::openat(
                    fd.0,
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            })?);
        }
        Ok(fd)
    }

    /// The directory `relative`'s entries with their `lstat`.
    pub fn list(&self, relative: &Path) -> io::Result<Vec<Entry>> {
        let dir = self.open_dir(relative)?;
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
        let mut entries = Vec::new();
        loop {
            // SAFETY: `stream` is open until closedir below.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: readdir's entry holds a NUL-terminated name.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: `dir` is open, the name NUL-terminated, `st` ours.
            let found =
                unsafe { libc::fstatat(dir.0, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
            if found != 0 {
                continue;
            }
            entries.push(Entry {
                name: String::from_utf8_lossy(bytes).into_owned(),
                kind: kind_of(st.st_mode),
                stat: stat_of(&st),
                perm: st.st_mode & 0o7777,
            });
        }
        // SAFETY: the stream is open and closed once.
        unsafe { libc::closedir(stream) };
        Ok(entries)
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
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `dir` is open, the name NUL-terminated, `st` ours.
        check(unsafe { libc::fstatat(dir.0, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
        Ok(Entry {
            name: name.to_string_lossy().into_owned(),
            kind: kind_of(st.st_mode),
            stat: stat_of(&st),
            perm: st.st_mode & 0o7777,
        })
    }

    /// A regular file's bytes (a symlink there is an error, not followed).
    pub fn read(&self, relative: &Path) -> io::Result<Vec<u8>> {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        let (parent, name) = Self::split(relative)?;
        let dir = self.open_dir(parent)?;
        // SAFETY: `dir` is open; the name is one NUL-terminated component.
        let fd = check(unsafe {
            libc::openat(
                dir.0,
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` is open and owned by the File from here on.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
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

    /// Sets a regular file's permission bits.
    pub fn chmod(&self, relative: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let file = self.open_file(relative, libc::O_RDONLY)?;
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
}
