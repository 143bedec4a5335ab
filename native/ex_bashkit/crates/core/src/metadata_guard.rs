//! Writes into a read-write host mount: checked, then made with no
//! lookup a script could redirect in between, and git's metadata kept
//! from everything but our git.
//!
//! A user's checkout mounted `:read_write` is also where real git runs on
//! the host next, with the user's rights: whatever lands in a repository's
//! `hooks/` or `config` (`core.fsmonitor`, aliases) runs there. So every
//! writer of the session (bash's redirections and builtins, `node`'s `fs`,
//! Python, `sqlite3`, callbacks, the file API) writes through this backend
//! of the mount, which refuses, with a message naming the rule:
//!
//! - any change inside a git directory: one named `.git` in any spelling
//!   (crates/git's `paths.rs`) or one git would take for a repository (`HEAD` with
//!   `objects/` and `refs/`, or a `commondir`), and the whole mount when it
//!   lies inside one;
//! - creating, renaming or changing a `.git` entry anywhere (removing a
//!   whole repository stays allowed: it runs nothing);
//! - creating what would turn a directory into a git directory.
//!
//! A path is checked where it lands on the host (links on the way followed
//! as the kernel follows them, so a link to `.git` or a `..` walk is the
//! path it leads to), and the write then walks that resolved path from the
//! mount's root with `O_NOFOLLOW` (crates/jail's `host_tree.rs`): a link swapped in after
//! the check fails the write instead of redirecting it. Creations that
//! could complete a git directory are checked and made under one lock.
//! Our git runs its commands inside [`as_git`] and may write its own
//! metadata (never a hook); what it writes there is checked by git itself
//! (refused config keys, plain paths). Reads are `mount_reads.rs`'s.
//!
//! Symlinks whose target resolves inside the mount are made (bashkit
//! refuses any with `..`); one resolving outside is refused. With
//! `{:read_write, git_metadata: :writable}` only the metadata rules are off.

use std::ffi::OsStr;
use std::future::Future;
use std::io::{Error as IoError, ErrorKind};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bashkit::{async_trait, DirEntry, FsBackend, FsLimits, FsUsage, Metadata, RealFs};

use ex_bashkit_git::paths::is_dot_git;
use ex_bashkit_jail::host_tree::{HostTree, Kind};

tokio::task_local! {
    static OUR_GIT: ();
}

/// Runs `work` as the sandbox's git: the guard lets it write a
/// repository's metadata (never a hook).
pub async fn as_git<F: Future>(work: F) -> F::Output {
    OUR_GIT.scope((), work).await
}

fn by_our_git() -> bool {
    OUR_GIT.try_with(|_| ()).is_ok()
}

/// Held while a creation that could complete a git directory is checked
/// and made, so two writers cannot each add the part the other checked
/// was missing.
static COMPLETING: Mutex<()> = Mutex::new(());

/// The names that make a directory a git directory.
const GIT_DIR_PARTS: [&str; 4] = ["HEAD", "objects", "refs", "commondir"];

/// What an operation does to the entry it names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Makes it (or replaces its content): a write, mkdir, link, copy or
    /// rename's destination.
    Create,
    /// Makes it and every missing directory on the way: `mkdir -p`.
    CreateAll,
    /// Changes it in place: mode, times.
    Modify,
    /// Takes it away: `rm`.
    Remove,
    /// Moves it elsewhere: rename's source.
    MoveAway,
}

impl Change {
    fn creates(self) -> bool {
        matches!(self, Change::Create | Change::CreateAll)
    }
}

/// A read-write host mount's backend.
pub struct GuardedMount {
    real: RealFs,
    guard: Arc<Guard>,
}

impl GuardedMount {
    /// `real` is the mount's `RealFs` (for reads), `root` its canonical
    /// host directory, `point` where the session sees it; `protect` keeps
    /// git's metadata for our git.
    pub fn new(real: RealFs, root: PathBuf, point: PathBuf, protect: bool) -> Self {
        let enclosing = root
            .ancestors()
            .find(|dir| {
                dir.file_name()
                    .is_some_and(|n| is_dot_git(&n.to_string_lossy()))
                    || is_git_directory(dir, None)
            })
            .map(Path::to_path_buf);
        let guard = Guard {
            tree: HostTree::new(root.clone()),
            root,
            point,
            enclosing,
            protect,
        };
        Self {
            real,
            guard: Arc::new(guard),
        }
    }

    /// Checks `changes` (each a path, what happens to it, whether its last
    /// link is followed) and runs `work` on their resolved paths, off the
    /// interpreter's thread: the host's disk may take its time.
    async fn guarded<T: Send + 'static>(
        &self,
        changes: Vec<(PathBuf, Change, bool)>,
        work: impl FnOnce(&Guard, Vec<PathBuf>) -> std::io::Result<T> + Send + 'static,
    ) -> bashkit::Result<T> {
        let guard = self.guard.clone();
        let git = by_our_git();
        let done = tokio::task::spawn_blocking(move || {
            let completing = changes
                .iter()
                .any(|(path, change, _)| guard.may_complete(path, *change));
            let _held = completing.then(|| COMPLETING.lock().unwrap_or_else(|e| e.into_inner()));
            let mut resolved = Vec::with_capacity(changes.len());
            for (path, change, follow) in &changes {
                resolved.push(guard.check(path, *change, *follow, git)?);
            }
            work(&guard, resolved)
        })
        .await
        .map_err(|e| IoError::other(format!("a mount's write failed: {e}")))??;
        Ok(done)
    }
}

/// What the checks need, shared with the blocking pool.
struct Guard {
    tree: HostTree,
    /// The mount's host directory, canonical.
    root: PathBuf,
    /// Where the session sees it, for messages.
    point: PathBuf,
    /// The git directory the whole mount lies in, if it does.
    enclosing: Option<PathBuf>,
    /// Whether git's metadata is kept for our git (`false`: the owner's
    /// `git_metadata: :writable`).
    protect: bool,
}

impl Guard {
    /// `path` (mount-relative) as the session names it.
    fn shown(&self, path: &Path) -> String {
        self.point.join(lexical(path)).display().to_string()
    }

    /// Whether `change` to `path` could make a git directory: it creates
    /// an entry named as one of a git directory's parts (the last one, or
    /// any on the way for `mkdir -p`).
    fn may_complete(&self, path: &Path, change: Change) -> bool {
        let part = |name: &OsStr| {
            GIT_DIR_PARTS
                .iter()
                .any(|part| name.as_bytes() == part.as_bytes())
        };
        let path = lexical(path);
        self.protect
            && match change {
                Change::CreateAll => path.iter().any(part),
                Change::Create => path.file_name().is_some_and(part),
                _ => false,
            }
    }

    /// The entry `path` (mount-relative) names on the host, relative to
    /// the root: directories on the way resolved as the kernel will,
    /// the last component followed only for `follow`. `None` where it
    /// cannot be placed under the root.
    fn locate(&self, path: &Path, follow: bool) -> Option<PathBuf> {
        let relative = lexical(path);
        let Some(leaf) = relative.file_name() else {
            return Some(PathBuf::new());
        };
        let parent = canonical_under(&self.root.join(relative.parent()?))?;
        let mut host = parent.join(leaf);
        if follow && host.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
            host = std::fs::canonicalize(&host).ok()?;
        }
        host.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// `path` resolved below the root, once `change` to it is allowed.
    fn check(
        &self,
        path: &Path,
        change: Change,
        follow: bool,
        git: bool,
    ) -> std::io::Result<PathBuf> {
        let refused = |why: String| IoError::new(ErrorKind::PermissionDenied, why);
        let Some(relative) = self.locate(path, follow) else {
            // Fail closed: a dangling link or a way out on the path.
            return Err(refused(format!(
                "{}: refused: the path does not resolve inside the mount",
                self.shown(path)
            )));
        };
        match self.refusal(path, &relative, change, git) {
            Some(why) => Err(refused(why)),
            None => Ok(relative),
        }
    }

    /// Why `change` to `path` (on the host: `relative`) is refused, if it is.
    fn refusal(&self, path: &Path, relative: &Path, change: Change, git: bool) -> Option<String> {
        if !self.protect {
            return None;
        }
        if let Some(dir) = &self.enclosing {
            return (!git).then(|| {
                format!(
                    "{}: refused: this mount lies in the git directory {}, which only the \
                     sandbox's git writes",
                    self.shown(path),
                    dir.display()
                )
            });
        }
        let names: Vec<&OsStr> = relative.iter().collect();
        let mut dir = self.root.clone();
        for (at, name) in names.iter().enumerate() {
            let inside = if is_git_directory(&dir, None) {
                Some(&names[at..])
            } else if is_dot_git(&name.to_string_lossy()) {
                Some(&names[at + 1..])
            } else {
                None
            };
            if let Some(contents) = inside {
                return self.in_git_dir(path, contents, change, git);
            }
            dir.push(name);
        }
        if change.creates() && !git {
            return self.would_make_git_dir(path, &names);
        }
        None
    }

    /// A change to `contents` (empty: the `.git` entry itself) of a git
    /// directory.
    fn in_git_dir(
        &self,
        path: &Path,
        contents: &[&OsStr],
        change: Change,
        git: bool,
    ) -> Option<String> {
        let entry_itself = contents.is_empty();
        if entry_itself && change == Change::Remove {
            return None;
        }
        if git {
            let hook = contents.len() > 1 && contents[0] == "hooks";
            return hook.then(|| {
                format!(
                    "{}: refused: the sandbox's git never writes hooks",
                    self.shown(path)
                )
            });
        }
        Some(if entry_itself {
            format!(
                "{}: refused: only the sandbox's git creates, moves or changes a `.git` entry \
                 in a mount (git metadata is protected: see guides/security.md)",
                self.shown(path)
            )
        } else {
            format!(
                "{}: refused: git metadata, which only the sandbox's git writes in a mount \
                 (real git on the host runs what lands in hooks/ or config; see \
                 guides/security.md)",
                self.shown(path)
            )
        })
    }

    /// Whether creating `names` (each missing component on the way) would
    /// make a directory git takes for a repository.
    fn would_make_git_dir(&self, path: &Path, names: &[&OsStr]) -> Option<String> {
        let mut dir = self.root.clone();
        for name in names {
            let entry = dir.join(name);
            if entry.symlink_metadata().is_err() && is_git_directory(&dir, Some(name)) {
                return Some(format!(
                    "{}: refused: it would make a git directory, which only the sandbox's git \
                     creates in a mount",
                    self.shown(path)
                ));
            }
            dir = entry;
        }
        None
    }

    /// Makes `relative` a link to `target` if the target resolves inside
    /// the mount.
    fn symlink(&self, target: &Path, link: &Path, relative: &Path) -> std::io::Result<()> {
        let escapes = |why: &str| {
            IoError::new(
                ErrorKind::PermissionDenied,
                format!(
                    "{}: symlink target {} {why} (sandbox security)",
                    self.shown(link),
                    target.display()
                ),
            )
        };
        if target.has_root() {
            return Err(escapes("is absolute, which a mount does not allow"));
        }
        let parent = self.root.join(relative);
        let parent = parent.parent().ok_or_else(|| escapes("has no place"))?;
        resolve_within(&self.root, parent, target)
            .ok_or_else(|| escapes("resolves outside the mount"))?;
        self.tree.symlink(target, relative)
    }
}

/// `path` with `.` and `..` resolved lexically, relative (bashkit's
/// `RealFs` does the same before it joins the root).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// `path` with its nearest existing ancestor canonicalized, if that stays
/// under `root`.
fn canonical_under(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    while existing.symlink_metadata().is_err() {
        existing = existing.parent()?;
    }
    let canonical = std::fs::canonicalize(existing).ok()?;
    let rest = path.strip_prefix(existing).ok()?;
    Some(canonical.join(rest))
}

/// Where `target`, read from the directory `from`, leads, as the kernel
/// follows it, if it never leaves `root` on the way.
fn resolve_within(root: &Path, from: &Path, target: &Path) -> Option<PathBuf> {
    let mut at = from.to_path_buf();
    for part in target.components() {
        match part {
            Component::Normal(name) => {
                at.push(name);
                if at.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
                    at = std::fs::canonicalize(&at).ok()?;
                }
            }
            Component::ParentDir => {
                at.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
        if !at.starts_with(root) {
            return None;
        }
    }
    Some(at)
}

/// Whether git would take `dir` for a git directory (`HEAD`, and
/// `objects/` with `refs/` or a `commondir`), counting `adding` as
/// present.
fn is_git_directory(dir: &Path, adding: Option<&OsStr>) -> bool {
    let has = |name: &str, directory: bool| {
        adding.is_some_and(|a| a.as_bytes() == name.as_bytes())
            || match directory {
                true => dir.join(name).is_dir(),
                false => dir.join(name).symlink_metadata().is_ok(),
            }
    };
    has("HEAD", false) && (has("commondir", false) || (has("objects", true) && has("refs", true)))
}

#[async_trait]
impl FsBackend for GuardedMount {
    async fn read(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        self.real.read(path).await
    }

    async fn write(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let content = content.to_vec();
        self.guarded(
            vec![(path.into(), Change::Create, false)],
            move |guard, at| guard.tree.replace(&at[0], &content),
        )
        .await
    }

    async fn append(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let content = content.to_vec();
        self.guarded(
            vec![(path.into(), Change::Create, false)],
            move |guard, at| guard.tree.append_synced(&at[0], &content),
        )
        .await
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        let change = match recursive {
            true => Change::CreateAll,
            false => Change::Create,
        };
        self.guarded(vec![(path.into(), change, false)], move |guard, at| match (
            at[0].as_os_str().is_empty(),
            recursive,
        ) {
            (true, true) => Ok(()),
            (true, false) => Err(IoError::from(ErrorKind::AlreadyExists)),
            (false, true) => guard.tree.mkdir_all(&at[0]),
            (false, false) => guard.tree.mkdir(&at[0]),
        })
        .await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.guarded(
            vec![(path.into(), Change::Remove, false)],
            move |guard, at| guard.tree.remove_entry(&at[0], recursive),
        )
        .await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.real.stat(path).await
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        self.real.read_dir(path).await
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        self.real.exists(path).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let changes = vec![
            (from.into(), Change::MoveAway, false),
            (to.into(), Change::Create, false),
        ];
        self.guarded(changes, |guard, at| guard.tree.rename(&at[0], &at[1]))
            .await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let (from_path, to_path) = (from.to_path_buf(), to.to_path_buf());
        self.guarded(
            vec![(to.into(), Change::Create, false)],
            move |guard, at| {
                let source = guard
                    .locate(&from_path, false)
                    .ok_or_else(|| IoError::from(ErrorKind::NotFound))?;
                match guard.tree.lstat(&source)?.kind {
                    Kind::Symlink => {
                        let target = guard.tree.read_link(&source)?;
                        let target = Path::new(OsStr::from_bytes(&target));
                        guard.symlink(target, &to_path, &at[0])
                    }
                    _ => guard
                        .tree
                        .replace_from(&at[0], &mut guard.tree.open_read(&source)?),
                }
            },
        )
        .await
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        let (target, link_path) = (target.to_path_buf(), link.to_path_buf());
        self.guarded(
            vec![(link.into(), Change::Create, false)],
            move |guard, at| guard.symlink(&target, &link_path, &at[0]),
        )
        .await
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.real.read_link(path).await
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.guarded(
            vec![(path.into(), Change::Modify, true)],
            move |guard, at| guard.tree.chmod(&at[0], mode),
        )
        .await
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        self.guarded(
            vec![(path.into(), Change::Modify, true)],
            move |guard, at| guard.tree.set_mtime(&at[0], time),
        )
        .await
    }

    fn usage(&self) -> FsUsage {
        self.real.usage()
    }

    fn limits(&self) -> FsLimits {
        self.real.limits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bashkit::{FileSystem, PosixFs, RealFsMode};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NEXT: AtomicUsize = AtomicUsize::new(0);

    /// A host directory holding a checkout (`.git` with HEAD, objects,
    /// refs, config, hooks) and a file outside it, mounted as a session
    /// mounts it.
    fn checkout(protect: bool) -> (PathBuf, Arc<dyn FileSystem>) {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("guard_{}_{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("repo");
        for dir in [".git/objects", ".git/refs/heads", ".git/hooks", "src"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::fs::write(base.join("outside"), "o").unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        let real = runtime()
            .block_on(RealFs::open(&root, RealFsMode::ReadWrite))
            .unwrap();
        let mount = GuardedMount::new(real, root, PathBuf::from("/work"), protect);
        (base, Arc::new(PosixFs::new(mount)))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn p(path: &str) -> &Path {
        Path::new(path)
    }

    #[test]
    fn every_route_into_git_metadata_is_refused() {
        let (base, fs) = checkout(true);
        let rt = runtime();
        rt.block_on(async {
            let refused = |r: bashkit::Result<()>| match r {
                Err(e) => assert!(e.to_string().contains("refused"), "{e}"),
                Ok(()) => panic!("a write into git metadata went through"),
            };
            refused(fs.write_file(p("/.git/hooks/post-checkout"), b"x").await);
            refused(fs.append_file(p("/.git/config"), b"[core]\n").await);
            refused(fs.write_file(p("/.git/refs/heads/x"), b"x").await);
            refused(fs.chmod(p("/.git/config"), 0o777).await);
            refused(fs.remove(p("/.git/config"), false).await);
            refused(fs.mkdir(p("/.git/hooks/sub"), true).await);
            refused(
                fs.rename(p("/src/a.txt"), p("/.git/hooks/pre-commit"))
                    .await,
            );
            refused(fs.rename(p("/.git"), p("/moved")).await);
            refused(fs.copy(p("/src/a.txt"), p("/.git/config")).await);
            // Aliases: a link to the git directory, `..` walks, spellings.
            fs.symlink(p(".git"), p("/g")).await.unwrap();
            refused(fs.write_file(p("/g/config"), b"x").await);
            refused(fs.write_file(p("/src/../.git/config"), b"x").await);
            fs.symlink(p("../.git/hooks"), p("/src/h")).await.unwrap();
            refused(fs.write_file(p("/src/h/post-commit"), b"x").await);
            refused(fs.chmod(p("/src/h"), 0o777).await);
            // New `.git` entries, any spelling, and new git directories.
            refused(fs.mkdir(p("/src/.git"), false).await);
            refused(fs.write_file(p("/src/.GIT"), b"gitdir: /x").await);
            refused(fs.mkdir(p("/nested/git~1/hooks"), true).await);
            refused(fs.rename(p("/src"), p("/.git.")).await);
            fs.mkdir(p("/bare/objects"), true).await.unwrap();
            fs.mkdir(p("/bare/refs"), true).await.unwrap();
            refused(
                fs.write_file(p("/bare/HEAD"), b"ref: refs/heads/main\n")
                    .await,
            );
        });
        assert_eq!(
            std::fs::read_to_string(base.join("repo/.git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert_eq!(
            std::fs::read_dir(base.join("repo/.git/hooks"))
                .unwrap()
                .count(),
            0
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn the_work_tree_and_our_git_are_served() {
        let (base, fs) = checkout(true);
        runtime().block_on(async {
            fs.write_file(p("/src/b.txt"), b"b").await.unwrap();
            fs.append_file(p("/src/a.txt"), b"+").await.unwrap();
            fs.mkdir(p("/src/deep/er"), true).await.unwrap();
            fs.rename(p("/src/b.txt"), p("/src/deep/b.txt"))
                .await
                .unwrap();
            fs.symlink(p("../../a.txt"), p("/src/deep/up"))
                .await
                .unwrap();
            let outside = fs.symlink(p("../../outside"), p("/src/out")).await;
            assert!(outside
                .unwrap_err()
                .to_string()
                .contains("outside the mount"));
            // Our git writes its metadata, but never a hook.
            as_git(async {
                fs.write_file(p("/.git/config"), b"[core]\n").await.unwrap();
                fs.mkdir(p("/sub/.git/refs"), true).await.unwrap();
                let hook = fs.write_file(p("/.git/hooks/post-checkout"), b"x").await;
                assert!(hook.unwrap_err().to_string().contains("never writes hooks"));
            })
            .await;
            // Removing a whole repository runs nothing.
            fs.remove(p("/sub"), true).await.unwrap();
            fs.remove(p("/.git"), true).await.unwrap();
        });
        assert_eq!(
            std::fs::read_link(base.join("repo/src/deep/up")).unwrap(),
            PathBuf::from("../../a.txt")
        );
        assert!(!base.join("repo/.git").exists());
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn an_owner_who_opts_out_lets_every_writer_in() {
        let (base, fs) = checkout(false);
        runtime().block_on(async {
            fs.write_file(p("/.git/hooks/post-checkout"), b"x")
                .await
                .unwrap();
            fs.symlink(p("../.git"), p("/src/g")).await.unwrap();
        });
        std::fs::remove_dir_all(base).unwrap();
    }
}
