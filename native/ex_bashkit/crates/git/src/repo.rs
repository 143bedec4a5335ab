//! A repository on the session's filesystem, in git's own formats, so
//! that real git and ours take turns on it: objects loose and packed
//! (`odb.rs`), refs loose and packed (`refs.rs`), the real `.git/index`
//! (`index_file.rs`), `config` edited in place (`config.rs`), and the
//! ignore rules (`ignore.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use bashkit::FileSystem;

use super::commit_graph::CommitGraph;
use super::error::Error;
use super::ignore::Ignores;
use super::index_file::{self, CacheNode, IndexFile, Stat};
use super::io::{HostRoot, Io};
pub use super::odb::Abbrev;
use super::odb::{from_hex, to_hex, Odb};
pub use super::odb::{hash, Oid};
use super::revspec::RevSpec;
use super::{config, dates, Here};
use ex_bashkit_jail::host_tree::{self as host, HostTree};

/// A file as a tree or the index holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    pub mode: u32,
    pub oid: Oid,
}

/// Path (relative to the work tree, `/`-separated) → blob.
pub type Files = BTreeMap<String, Blob>;

/// A merged (stage 0) entry of the index.
#[derive(Clone, Debug)]
pub struct IndexEntry {
    pub blob: Blob,
    pub stat: Stat,
    pub assume_valid: bool,
    /// Version 3's flags: skip-worktree, intent-to-add.
    pub extended: u16,
}

impl IndexEntry {
    pub fn new(blob: Blob, stat: Stat) -> Self {
        Self {
            blob,
            stat,
            assume_valid: false,
            extended: 0,
        }
    }

    /// Added with `git add -N`: known, but not yet in what a commit takes.
    pub fn intent_to_add(&self) -> bool {
        self.extended & index_file::INTENT_TO_ADD != 0
    }

    /// An entry git does not compare with the work tree as a file: sparse
    /// checkouts' skip-worktree, `update-index --assume-unchanged`, and a
    /// submodule (its work tree is its own).
    pub fn not_checked(&self) -> bool {
        self.assume_valid
            || self.extended & index_file::SKIP_WORKTREE != 0
            || self.blob.mode == 0o160000
    }
}

/// The merged entries by path; conflicts and extensions are kept by the
/// repository between `index()` and `save_index()`.
pub type Index = BTreeMap<String, IndexEntry>;

/// The index's files, as a tree holds them.
pub fn index_files(index: &Index) -> Files {
    index
        .iter()
        .map(|(p, e)| (p.clone(), e.blob.clone()))
        .collect()
}

/// The files a commit of the index takes: all but `git add -N` paths.
pub fn committed_files(index: &Index) -> Files {
    index
        .iter()
        .filter(|(_, e)| !e.intent_to_add())
        .map(|(p, e)| (p.clone(), e.blob.clone()))
        .collect()
}

/// A file of the work tree, as `lstat` sees it.
#[derive(Clone, Debug)]
pub struct WorkFile {
    pub mode: u32,
    pub stat: Stat,
    /// Ignored by `.gitignore` and friends (it may still be tracked).
    pub ignored: bool,
}

/// A person and a moment, as a commit's `author`/`committer` line has
/// them.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    pub name: String,
    pub email: String,
    pub time: i64,
    /// `+0100`, as written.
    pub zone: String,
}

impl Signature {
    pub fn parse(text: &str) -> Signature {
        let (name, rest) = text.split_once(" <").unwrap_or((text, ""));
        let (email, when) = rest.rsplit_once("> ").unwrap_or((rest, ""));
        let mut when = when.split(' ');
        Signature {
            name: name.to_string(),
            email: email.to_string(),
            time: when.next().and_then(|t| t.parse().ok()).unwrap_or(0),
            zone: when.next().unwrap_or("+0000").to_string(),
        }
    }

    /// `Thu Nov 26 17:40:15 2026 +0100`, in the signature's own zone.
    pub fn date(&self) -> String {
        dates::date(self.time, &self.zone)
    }
}

/// A commit as walks over history see it: no message, no people.
#[derive(Default, Clone)]
pub struct Shape {
    pub tree: Oid,
    pub parents: Vec<Oid>,
    /// Its date, as [`Commit::date`].
    pub date: i64,
}

#[derive(Default)]
pub struct Commit {
    pub tree: Oid,
    pub parents: Vec<Oid>,
    pub author: Signature,
    pub committer: Signature,
    pub message: String,
    /// The date history is walked and filtered by (`--since`): git's, from
    /// the commit-graph where that has the commit, else the committer's.
    pub date: i64,
}

impl Commit {
    /// The message's first paragraph on one line, as git's `%s` and
    /// `--oneline` show it: blank lines before it skipped, its lines
    /// trimmed at the end and joined by spaces.
    pub fn subject(&self) -> String {
        self.subject_and_body().0
    }

    /// What follows the subject, from its first non-blank line (`%b`).
    pub fn body(&self) -> &str {
        self.subject_and_body().1
    }

    fn subject_and_body(&self) -> (String, &str) {
        let blank = |line: &str| line.trim_end().is_empty();
        let mut rest = self.message.as_str();
        let mut subject = String::new();
        let mut started = false;
        while !rest.is_empty() {
            let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let line = &rest[..end];
            if blank(line) {
                if started {
                    break;
                }
            } else {
                if started {
                    subject.push(' ');
                }
                subject.push_str(line.trim_end());
                started = true;
            }
            rest = &rest[end..];
        }
        while let Some(end) = rest
            .find('\n')
            .map(|i| i + 1)
            .filter(|&end| blank(&rest[..end]))
        {
            rest = &rest[end..];
        }
        if blank(rest) {
            rest = "";
        }
        (subject, rest)
    }
}

pub enum Head {
    Branch(String),
    Detached(Oid),
}

pub type Res<T> = Result<T, Error>;

/// What of `.git/index` lives beside its merged entries.
#[derive(Default)]
struct IndexRest {
    version: u32,
    /// Conflict stages (1–3), kept until their path is resolved.
    unmerged: Vec<index_file::Entry>,
    /// Extensions written back as they were read.
    kept: Vec<([u8; 4], Vec<u8>)>,
    /// The cache tree (`TREE`) as read: each directory's tree where it is
    /// known to match the index.
    cache: BTreeMap<String, [u8; 20]>,
    /// Why this index must not be written, if it must not.
    unwritable: Option<String>,
    /// The index file's own modification time: an entry whose file
    /// changed in that same second may have changed after it was staged
    /// (git's "racy" entries), so its content is compared.
    written: (u32, u32),
}

/// git's advice when a new repository's first branch is `master` because
/// nothing configured `init.defaultBranch`.
const DEFAULT_BRANCH_ADVICE: &str = "\
hint: Using 'master' as the name for the initial branch. This default branch name
hint: is subject to change. To configure the initial branch name to use in all
hint: of your new repositories, which will suppress this warning, call:
hint:
hint: \tgit config --global init.defaultBranch <name>
hint:
hint: Names commonly chosen instead of 'master' are 'main', 'trunk' and
hint: 'development'. The just-created branch can be renamed via this command:
hint:
hint: \tgit branch -m <name>
";

pub struct Repo {
    pub fs: Arc<dyn FileSystem>,
    pub root: PathBuf,
    pub git: PathBuf,
    odb: Odb,
    rest: Mutex<IndexRest>,
    /// Reads and writes, straight on the host where the work tree is in a
    /// mount.
    pub(super) io: Arc<Io>,
    /// The environment and default identity commits are made with.
    env: HashMap<String, String>,
    default_name: String,
    default_email: String,
    abbrev: tokio::sync::OnceCell<Arc<Abbrev>>,
    /// The commit-graph file, read once where git would read it.
    commit_graph: tokio::sync::OnceCell<Option<CommitGraph>>,
    /// `packed-refs` as read (`refs.rs`).
    pub(super) packed: Mutex<Option<Arc<BTreeMap<String, Oid>>>>,
    /// The commits `.git/shallow` cuts history at, read once.
    shallow: Mutex<Option<Arc<HashSet<Oid>>>>,
    /// Each `.gitattributes` (and `info/attributes`) read so far, by path:
    /// a walk diffing thousands of commits reads each once. This git's
    /// own writes of one forget it.
    attribute_files: Mutex<HashMap<String, Option<Arc<str>>>>,
    /// `git -c key=value`: read after the config file, so they win.
    overrides: Vec<(String, String)>,
}

pub const NULL_OID: &str = "0000000000000000000000000000000000000000";

fn split_time(time: std::time::SystemTime) -> (u32, u32) {
    time.duration_since(UNIX_EPOCH)
        .map_or((0, 0), |d| (d.as_secs() as u32, d.subsec_nanos()))
}

/// The stat git would record for a file with this metadata; what the
/// session's filesystem does not know (device, inode, owner) is zero.
pub fn stat_of(meta: &bashkit::Metadata) -> Stat {
    let mtime = split_time(meta.modified);
    Stat {
        ctime: mtime,
        mtime,
        size: meta.size as u32,
        ..Stat::default()
    }
}

/// Git's file modes: a link, or a file executable by its owner or not.
pub fn file_mode(meta: &bashkit::Metadata) -> u32 {
    git_mode(meta.file_type.is_symlink(), meta.mode)
}

fn host_mode(entry: &host::Entry) -> u32 {
    git_mode(entry.kind == host::Kind::Symlink, entry.perm)
}

fn git_mode(symlink: bool, perm: u32) -> u32 {
    if symlink {
        0o120000
    } else if perm & 0o100 != 0 {
        0o100755
    } else {
        0o100644
    }
}

/// Extensions git may write that this index layer cannot keep true.
fn extension_refusal(signature: &[u8; 4]) -> Option<String> {
    let what = match signature {
        b"UNTR" => "the untracked cache (run `git update-index --no-untracked-cache` on it first)",
        b"FSMN" => "a file-system monitor (run `git config core.fsmonitor false` and `git update-index --no-fsmonitor` on it first)",
        b"link" => "a split index (run `git update-index --no-split-index` on it first)",
        b"sdir" => "a sparse index (run `git sparse-checkout disable` on it first)",
        _ => return None,
    };
    Some(format!("this repository's index uses {what}, which the sandbox's git cannot keep up to date; it refuses to write the index"))
}

/// A tree's entries as their bytes: (mode, name, 20-byte object name).
struct RawEntries<'a>(&'a [u8]);

impl<'a> Iterator for RawEntries<'a> {
    type Item = Res<(&'a [u8], &'a [u8], &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.0;
        if rest.is_empty() {
            return None;
        }
        let corrupt = || {
            // Nothing more is read after a corrupt entry.
            Some(Err(Error::CorruptObject("tree".into())))
        };
        let (Some(space), Some(nul)) = (
            rest.iter().position(|&b| b == b' '),
            rest.iter().position(|&b| b == 0),
        ) else {
            self.0 = &[];
            return corrupt();
        };
        let Some(raw) = rest.get(nul + 1..nul + 21).filter(|_| space < nul) else {
            self.0 = &[];
            return corrupt();
        };
        self.0 = &rest[nul + 21..];
        Some(Ok((&rest[..space], &rest[space + 1..nul], raw)))
    }
}

impl Repo {
    fn open(here: &Here<'_>, root: &Path, git: PathBuf) -> Repo {
        // The mount holding the whole work tree (no other mount inside it).
        let mounts = &here.git.mounts;
        let host = mounts
            .iter()
            .filter(|(point, _, _)| root.starts_with(point))
            .max_by_key(|(point, _, _)| point.as_os_str().len())
            .filter(|_| {
                !mounts
                    .iter()
                    .any(|(point, _, _)| point != root && point.starts_with(root))
            })
            .and_then(|(point, dir, writable)| {
                let below = root.strip_prefix(point).ok()?;
                Some(HostRoot {
                    point: root.to_path_buf(),
                    tree: HostTree::new(dir.join(below)),
                    writable: *writable,
                })
            });
        let io = Arc::new(Io::new(here.fs.clone(), host));
        Repo {
            odb: Odb::new(io.clone(), git.join("objects")),
            io,
            fs: here.fs.clone(),
            root: root.to_path_buf(),
            git,
            rest: Mutex::new(IndexRest::default()),
            env: here.env.clone(),
            default_name: here.git.name.clone(),
            default_email: here.git.email.clone(),
            abbrev: tokio::sync::OnceCell::new(),
            commit_graph: tokio::sync::OnceCell::new(),
            shallow: Mutex::new(None),
            packed: Mutex::new(None),
            attribute_files: Mutex::new(HashMap::new()),
            overrides: here.overrides.to_vec(),
        }
    }

    /// The repository `cwd` is in: the nearest directory up with a `.git`
    /// (a directory, or a file saying `gitdir: …`).
    pub async fn discover(here: &Here<'_>, cwd: &Path) -> Option<Repo> {
        let fs = &here.fs;
        let mut dir = Some(cwd);
        while let Some(candidate) = dir {
            let git = candidate.join(".git");
            if let Ok(meta) = fs.stat(&git).await {
                if meta.file_type.is_dir() {
                    return Some(Repo::open(here, candidate, git));
                }
                let text = fs.read_file(&git).await.ok()?;
                let text = String::from_utf8_lossy(&text);
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                return Some(Repo::open(
                    here,
                    candidate,
                    super::resolve(candidate, target),
                ));
            }
            dir = candidate.parent();
        }
        None
    }

    /// The repository exactly at `dir`, as `git upload-pack` finds one on
    /// a path: its `.git` (a directory, or a file naming one), or `dir`
    /// itself when it is a bare repository. Never a directory above it.
    #[cfg(feature = "network")]
    pub async fn at(here: &Here<'_>, dir: &Path) -> Option<Repo> {
        let fs = &here.fs;
        let git = dir.join(".git");
        match fs.stat(&git).await {
            Ok(meta) if meta.file_type.is_dir() => return Some(Repo::open(here, dir, git)),
            Ok(_) => {
                let text = fs.read_file(&git).await.ok()?;
                let text = String::from_utf8_lossy(&text);
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                return Some(Repo::open(here, dir, super::resolve(dir, target)));
            }
            Err(_) => {}
        }
        let bare = fs.exists(&dir.join("HEAD")).await.unwrap_or(false)
            && fs.exists(&dir.join("objects")).await.unwrap_or(false)
            && fs.exists(&dir.join("refs")).await.unwrap_or(false);
        bare.then(|| Repo::open(here, dir, dir.to_path_buf()))
    }

    /// Refuses a work tree inside a git directory, which would put files
    /// of its own where git reads metadata; `init` and `clone` ask before
    /// they make anything.
    pub fn outside_git_dirs(root: &Path) -> Res<()> {
        match root
            .iter()
            .any(|part| crate::paths::is_dot_git(&part.to_string_lossy()))
        {
            true => Err(Error::InsideGitDir(root.to_path_buf())),
            false => Ok(()),
        }
    }

    /// The branch a new repository starts on when none is asked for:
    /// `init.defaultBranch`, else `master` with git's advice to configure
    /// one (unless `advice.defaultBranchName` is off).
    pub fn initial_branch(here: &Here<'_>) -> (String, Option<&'static str>) {
        let setting = |key: &str| {
            here.overrides
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        if let Some(branch) = setting("init.defaultbranch").filter(|b| !b.is_empty()) {
            return (branch.to_string(), None);
        }
        let advised = !matches!(
            setting("advice.defaultbranchname")
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("false" | "no" | "off" | "0")
        );
        (
            "master".to_string(),
            advised.then_some(DEFAULT_BRANCH_ADVICE),
        )
    }

    pub async fn init(here: &Here<'_>, root: &Path) -> Res<(Repo, bool)> {
        Self::outside_git_dirs(root)?;
        let fs = &here.fs;
        let git = root.join(".git");
        let existed = fs.exists(&git.join("HEAD")).await.unwrap_or(false);
        for dir in [
            "objects/info",
            "objects/pack",
            "refs/heads",
            "refs/tags",
            "info",
            "hooks",
        ] {
            fs.mkdir(&git.join(dir), true).await.map_err(Error::from)?;
        }
        let repo = Repo::open(here, root, git);
        if !existed {
            repo.write(&repo.git.join("HEAD"), b"ref: refs/heads/master\n")
                .await?;
            repo.write(
                &repo.git.join("config"),
                b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n",
            )
            .await?;
            repo.write(
                &repo.git.join("description"),
                b"Unnamed repository; edit this file 'description' to name the repository.\n",
            )
            .await?;
            repo.write(
                &repo.git.join("info/exclude"),
                b"# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with '#' are comments.\n# For a project mostly in C, the following would be a good set of\n# exclude patterns (uncomment them if you want to use them):\n# *.[oa]\n# *~\n",
            )
            .await?;
        }
        Ok((repo, existed))
    }

    pub(super) async fn write(&self, path: &Path, bytes: &[u8]) -> Res<()> {
        self.io.write_file(path, bytes).await
    }

    pub(crate) async fn read_text(&self, path: &Path) -> Option<String> {
        let bytes = self.io.read_file(path).await.ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub async fn bare(&self) -> bool {
        self.config_value("core.bare")
            .await
            .is_some_and(|v| v == "true")
    }

    // ---- objects -----------------------------------------------------------

    pub async fn write_object(&self, kind: &str, body: &[u8]) -> Res<Oid> {
        self.odb.write(kind, body).await
    }

    pub async fn read_object(&self, oid: &str) -> Res<(String, Vec<u8>)> {
        let (kind, body) = self.odb.read(oid).await?;
        Ok((kind, Arc::unwrap_or_clone(body)))
    }

    /// A pack a server is about to send, written to storage as it
    /// arrives (`IncomingPack::keep` indexes and names it).
    #[cfg(feature = "network")]
    pub async fn incoming_pack(&self) -> Res<super::odb::IncomingPack<'_>> {
        self.odb.incoming_pack().await
    }

    /// How this repository abbreviates object names (`core.abbrev`, or
    /// git's default for its size), read once.
    pub async fn abbrev(&self) -> Arc<Abbrev> {
        let init = || async {
            let configured = match self.config_value("core.abbrev").await.as_deref() {
                None | Some("auto") => None,
                Some("no" | "false" | "off") => Some(40),
                Some(n) => n.parse::<usize>().ok().map(|n| n.clamp(4, 40)),
            };
            Arc::new(self.odb.abbrev(configured).await)
        };
        self.abbrev.get_or_init(init).await.clone()
    }

    /// `oid` abbreviated as git abbreviates it by default.
    pub async fn short(&self, oid: &str) -> String {
        self.abbrev().await.of(oid, None)
    }

    /// What `count-objects` reports of the object database.
    pub async fn census(&self) -> super::odb::Census {
        self.odb.census().await
    }

    pub async fn has_object(&self, oid: &str) -> bool {
        self.odb.contains(oid).await
    }

    pub async fn blob(&self, oid: &str) -> Res<Vec<u8>> {
        Ok(self.read_object(oid).await?.1)
    }

    /// An object with tags peeled: what an annotated tag points at.
    pub async fn peel(&self, oid: &str) -> Res<Oid> {
        let mut oid = oid.to_string();
        for _ in 0..16 {
            let (kind, body) = self.odb.read(&oid).await?;
            if kind != "tag" {
                return Ok(oid);
            }
            let text = String::from_utf8_lossy(&body);
            oid = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("object "))
                .ok_or_else(|| Error::CorruptObject(format!("tag {oid}")))?
                .to_string();
        }
        Err(Error::CorruptObject(format!(
            "tag chain (too long) at {oid}"
        )))
    }

    /// The commits history is cut at (`.git/shallow`, a shallow clone's):
    /// git reads them as having no parents.
    pub async fn shallow(&self) -> Arc<HashSet<Oid>> {
        if let Some(known) = &*self.shallow.lock().unwrap() {
            return known.clone();
        }
        let text = self
            .read_text(&self.git.join("shallow"))
            .await
            .unwrap_or_default();
        let set: HashSet<Oid> = text
            .lines()
            .filter(|l| super::odb::from_hex(l).is_some())
            .map(str::to_string)
            .collect();
        let set = Arc::new(set);
        *self.shallow.lock().unwrap() = Some(set.clone());
        set
    }

    /// Cuts history at `shallow` and no longer at `unshallow`, as a server
    /// answered a fetch; `.git/shallow` goes when nothing is cut.
    #[cfg(feature = "network")]
    pub async fn update_shallow(&self, shallow: &[Oid], unshallow: &[Oid]) -> Res<()> {
        if shallow.is_empty() && unshallow.is_empty() {
            return Ok(());
        }
        let mut set: HashSet<Oid> = (*self.shallow().await).clone();
        for oid in shallow {
            if super::odb::from_hex(oid).is_none() {
                return Err(Error::BadShallow(oid.clone()));
            }
            set.insert(oid.clone());
        }
        for oid in unshallow {
            set.remove(oid);
        }
        let path = self.git.join("shallow");
        if set.is_empty() {
            if self.io.exists(&path).await {
                self.io.remove(&path, false).await?;
            }
        } else {
            let mut sorted: Vec<&Oid> = set.iter().collect();
            sorted.sort();
            let text: String = sorted.iter().map(|oid| format!("{oid}\n")).collect();
            self.write(&path, text.as_bytes()).await?;
        }
        *self.shallow.lock().unwrap() = Some(Arc::new(set));
        Ok(())
    }

    /// The commit `oid` names; a tag is followed to its commit. A commit
    /// history is cut at (`shallow/0`) has no parents.
    pub async fn commit(&self, oid: &str) -> Res<Commit> {
        let (mut kind, mut body) = self.odb.read(oid).await?;
        let mut named = std::borrow::Cow::Borrowed(oid);
        if kind == "tag" {
            named = std::borrow::Cow::Owned(self.peel(oid).await?);
            (kind, body) = self.odb.read(&named).await?;
        }
        if kind != "commit" {
            return Err(Error::WrongKind {
                oid: oid.to_string(),
                kind: kind.to_string(),
                wanted: "commit",
            });
        }
        let text = String::from_utf8_lossy(&body);
        let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut commit = Commit {
            tree: String::new(),
            parents: Vec::new(),
            author: Signature::default(),
            committer: Signature::default(),
            message: message.to_string(),
            date: 0,
        };
        for line in headers.lines() {
            if let Some(tree) = line.strip_prefix("tree ") {
                commit.tree = tree.to_string();
            } else if let Some(parent) = line.strip_prefix("parent ") {
                commit.parents.push(parent.to_string());
            } else if let Some(author) = line.strip_prefix("author ") {
                commit.author = Signature::parse(author);
            } else if let Some(committer) = line.strip_prefix("committer ") {
                commit.committer = Signature::parse(committer);
            }
        }
        if !commit.parents.is_empty() {
            let shallow = self.shallow().await;
            if !shallow.is_empty() && shallow.contains(named.as_ref()) {
                commit.parents.clear();
            }
        }
        commit.date = match self.commit_graph().await {
            Some(graph) => graph.date(&named).unwrap_or(commit.committer.time),
            None => commit.committer.time,
        };
        Ok(commit)
    }

    /// A commit's committer time and parents only, for walks that need
    /// no more (its message and idents are not read out).
    pub async fn commit_links(&self, oid: &str) -> Res<(i64, Vec<Oid>)> {
        let Shape { date, parents, .. } = self.commit_shape(oid).await?;
        Ok((date, parents))
    }

    /// What a walk over history needs of a commit: its tree, parents and
    /// date, from the commit-graph where git would read it, else from the
    /// object's headers (its message left unread).
    pub async fn commit_shape(&self, oid: &str) -> Res<Shape> {
        let shape = match self.commit_graph().await.and_then(|g| g.shape(oid)) {
            Some(shape) => shape,
            None => {
                // The headers up to the committer's line: a signature and
                // the message after it are left compressed.
                let (kind, body) = self.odb.read_prefix(oid, &through_committer).await?;
                if kind != "commit" {
                    let commit = self.commit(oid).await?;
                    return Ok(Shape {
                        tree: commit.tree,
                        parents: commit.parents,
                        date: commit.committer.time,
                    });
                }
                let mut shape = Shape::default();
                for line in body.split(|&b| b == b'\n') {
                    if line.is_empty() {
                        break;
                    }
                    if let Some(parent) = line.strip_prefix(b"parent ") {
                        shape
                            .parents
                            .push(String::from_utf8_lossy(parent).into_owned());
                    } else if let Some(tree) = line.strip_prefix(b"tree ") {
                        shape.tree = String::from_utf8_lossy(tree).into_owned();
                    } else if let Some(committer) = line.strip_prefix(b"committer ") {
                        shape.date = Signature::parse(&String::from_utf8_lossy(committer)).time;
                    }
                }
                shape
            }
        };
        // (A fetch may cut history after the graph was read.)
        let mut shape = shape;
        if !shape.parents.is_empty() && self.shallow().await.contains(oid) {
            shape.parents.clear();
        }
        Ok(shape)
    }

    /// The commit-graph, where git would read one: `core.commitGraph` not
    /// off, no history cut (`.git/shallow`) or grafted, no replace refs.
    async fn commit_graph(&self) -> Option<&CommitGraph> {
        let load = || async {
            if !self.config_bool("core.commitgraph", true).await
                || !self.shallow().await.is_empty()
                || self.io.exists(&self.git.join("info/grafts")).await
                || !self.refs("replace").await.is_empty()
            {
                return None;
            }
            CommitGraph::load(&self.io, &self.git.join("objects")).await
        };
        self.commit_graph.get_or_init(load).await.as_ref()
    }

    /// A tree's bytes; anything else is refused as git does.
    async fn tree_body(&self, tree: &str) -> Res<Arc<Vec<u8>>> {
        let (kind, body) = self.odb.read(tree).await?;
        match kind.as_str() {
            "tree" => Ok(body),
            _ => Err(Error::WrongKind {
                oid: tree.to_string(),
                kind,
                wanted: "tree",
            }),
        }
    }

    /// The entry `name` of `tree`, found in the tree's bytes without
    /// reading the rest out (a path-limited walk asks this of every
    /// commit).
    pub async fn tree_entry(&self, tree: &str, name: &str) -> Res<Option<(u32, Oid)>> {
        let body = self.tree_body(tree).await?;
        for entry in RawEntries(&body) {
            let (mode, entry_name, raw) = entry?;
            if entry_name == name.as_bytes() {
                let mode = std::str::from_utf8(mode)
                    .ok()
                    .and_then(|m| u32::from_str_radix(m, 8).ok())
                    .ok_or_else(|| Error::CorruptObject("tree".into()))?;
                return Ok(Some((mode, to_hex(raw))));
            }
        }
        Ok(None)
    }

    /// A tree's entries: (name, mode, object).
    pub async fn tree_entries(&self, tree: &str) -> Res<Vec<(String, u32, Oid)>> {
        let body = self.tree_body(tree).await?;
        let mut entries = Vec::new();
        for entry in RawEntries(&body) {
            let (mode, name, raw) = entry?;
            let mode = u32::from_str_radix(&String::from_utf8_lossy(mode), 8)
                .map_err(|_| Error::CorruptObject("tree".into()))?;
            let name = String::from_utf8_lossy(name).into_owned();
            entries.push((name, mode, to_hex(raw)));
        }
        Ok(entries)
    }

    /// Every file of a tree, nested trees flattened.
    pub async fn tree_files(&self, tree: &str) -> Res<Files> {
        let mut files = Files::new();
        let mut pending = vec![(String::new(), tree.to_string())];
        while let Some((prefix, oid)) = pending.pop() {
            for (name, mode, child) in self.tree_entries(&oid).await? {
                let path = format!("{prefix}{name}");
                // git's own rule before anything of a tree reaches the
                // work tree or the index (checkout refuses the tree whole).
                if !crate::paths::verify_path(&path, mode) {
                    return Err(Error::InvalidPath(path.to_string()));
                }
                if mode == 0o40000 {
                    pending.push((format!("{path}/"), child));
                } else {
                    files.insert(path, Blob { mode, oid: child });
                }
            }
        }
        Ok(files)
    }

    /// The files that differ between two trees (`None`: the empty tree),
    /// each side's: subtrees with the same object are never read, as
    /// git's tree diff skips them.
    pub async fn changed_files(&self, old: Option<&str>, new: &str) -> Res<(Files, Files)> {
        let (mut before, mut after) = (Files::new(), Files::new());
        let mut pending = vec![(
            String::new(),
            old.map(str::to_string),
            Some(new.to_string()),
        )];
        while let Some((prefix, old, new)) = pending.pop() {
            let mut entries: BTreeMap<String, [Option<(u32, Oid)>; 2]> = BTreeMap::new();
            for (side, tree) in [old, new].into_iter().enumerate() {
                let Some(tree) = tree else { continue };
                for (name, mode, oid) in self.tree_entries(&tree).await? {
                    entries.entry(name).or_default()[side] = Some((mode, oid));
                }
            }
            for (name, [was, is]) in entries {
                if was == is {
                    continue;
                }
                let path = format!("{prefix}{name}");
                let tree = |e: &Option<(u32, Oid)>| {
                    e.as_ref()
                        .filter(|(m, _)| *m == 0o40000)
                        .map(|(_, o)| o.clone())
                };
                if tree(&was).is_some() || tree(&is).is_some() {
                    pending.push((format!("{path}/"), tree(&was), tree(&is)));
                }
                for (files, side) in [(&mut before, was), (&mut after, is)] {
                    if let Some((mode, oid)) = side.filter(|(m, _)| *m != 0o40000) {
                        if !crate::paths::verify_path(&path, mode) {
                            return Err(Error::InvalidPath(path.to_string()));
                        }
                        files.insert(path.clone(), Blob { mode, oid });
                    }
                }
            }
        }
        Ok((before, after))
    }

    pub async fn commit_files(&self, commit: Option<&str>) -> Res<Files> {
        match commit {
            Some(oid) => self.tree_files(&self.commit(oid).await?.tree).await,
            None => Ok(Files::new()),
        }
    }

    /// Writes the trees of `files` and answers the root's.
    pub async fn write_tree(&self, files: &Files) -> Res<Oid> {
        let (root, bodies) = trees(files);
        for (_, body) in bodies {
            self.write_object("tree", &body).await?;
        }
        Ok(to_hex(&root.oid.expect("a computed tree")))
    }

    /// A cache-tree node and those below it: `None` where the repository
    /// lacks the tree, or the directory holds a path in `unsure`.
    fn vouch<'a>(
        &'a self,
        node: &'a mut CacheNode,
        path: &'a str,
        unsure: &'a [String],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let prefix = if path.is_empty() {
                String::new()
            } else {
                format!("{path}/")
            };
            for child in &mut node.children {
                let below = format!("{prefix}{}", child.name);
                self.vouch(child, &below, unsure).await;
            }
            let doubtful = unsure.iter().any(|p| p.starts_with(&prefix));
            let known = match node.oid {
                Some(oid) => self.has_object(&to_hex(&oid)).await,
                None => false,
            };
            if doubtful || !known {
                node.oid = None;
            }
        })
    }

    /// `HEAD`'s files, taking each directory the index's cache tree
    /// vouches for from the index instead of reading its trees (git's own
    /// shortcut: a clean `status` reads no tree at all).
    pub async fn head_files(&self, head: Option<&str>, index: &Index) -> Res<Files> {
        let Some(head) = head else {
            return Ok(Files::new());
        };
        let tree = self.commit(head).await?.tree;
        let cache = self.rest.lock().unwrap().cache.clone();
        let mut files = Files::new();
        let mut pending = vec![(String::new(), tree)];
        while let Some((dir, oid)) = pending.pop() {
            if cache.get(&dir).is_some_and(|c| to_hex(c) == oid) {
                let prefix = if dir.is_empty() {
                    String::new()
                } else {
                    format!("{dir}/")
                };
                for (path, entry) in index.range(prefix.clone()..) {
                    if !path.starts_with(&prefix) {
                        break;
                    }
                    files.insert(path.clone(), entry.blob.clone());
                }
                continue;
            }
            for (name, mode, child) in self.tree_entries(&oid).await? {
                let path = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                if mode == 0o40000 {
                    pending.push((path, child));
                } else {
                    files.insert(path, Blob { mode, oid: child });
                }
            }
        }
        Ok(files)
    }

    /// The object a single revision names (`HEAD~2`, `v1.0^{tree}`,
    /// `main@{1}`, `:/fix`, `HEAD:README.md`; see `revspec.rs`), paths in
    /// it read from the work tree's top; `None` for a range or for a
    /// revision that names nothing.
    pub async fn resolve(&self, revision: &str) -> Option<Oid> {
        match self.revspec(revision, "").await.ok()?? {
            RevSpec::Include(oid) => Some(oid),
            _ => None,
        }
    }

    /// `NAME@{N}` / `NAME@{-N}`: the name and the number, if `name` is
    /// of that form.
    fn reflog_index(name: &str) -> Option<(&str, i64)> {
        let (name, n) = name.strip_suffix('}')?.rsplit_once("@{")?;
        let digits = n.strip_prefix('-').unwrap_or(n);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((name, n.parse().ok()?))
    }

    /// Why a revision of the form `NAME@{N}` names nothing, in git's
    /// words (`log for 'main' only has 2 entries`).
    pub async fn reflog_shortfall(&self, revision: &str) -> Option<String> {
        let base = &revision[..revision.find(['~', '^', ':']).unwrap_or(revision.len())];
        let (name, n) = Self::reflog_index(base)?;
        if n < 0 {
            return None;
        }
        let (shown, file) = match name {
            "HEAD" => ("HEAD".to_string(), "HEAD".to_string()),
            "" => match self.head().await {
                Head::Branch(branch) => (branch.clone(), format!("refs/heads/{branch}")),
                Head::Detached(_) => ("HEAD".to_string(), "HEAD".to_string()),
            },
            name => (name.to_string(), self.ref_named(name).await?.0),
        };
        let log = self.read_text(&self.git.join("logs").join(file)).await?;
        Some(format!(
            "log for '{shown}' only has {} entries",
            log.lines().count()
        ))
    }

    /// `NAME@{upstream}` / `NAME@{u}` (`NAME` empty or `HEAD`: the current
    /// branch): `None` when `name` is not of that form; an error when it
    /// is but names no upstream; else the upstream's short name and
    /// where it points.
    pub async fn upstream_named(&self, name: &str) -> Option<Result<(String, Option<Oid>), ()>> {
        let (branch, mark) = name.strip_suffix('}')?.rsplit_once("@{")?;
        if !matches!(mark.to_ascii_lowercase().as_str(), "u" | "upstream") {
            return Some(Err(()));
        }
        let branch = match branch {
            "" | "HEAD" => match self.head().await {
                Head::Branch(branch) => branch,
                Head::Detached(_) => return Some(Err(())),
            },
            branch => branch
                .strip_prefix("refs/heads/")
                .unwrap_or(branch)
                .to_string(),
        };
        Some(self.upstream(&branch).await.ok_or(()))
    }

    /// The entry at `path` in the tree of `oid` (a commit, a tag of one,
    /// or a tree); the tree itself for an empty path.
    pub async fn tree_path(&self, oid: &str, path: &str) -> Option<Oid> {
        let mut current = self.peel(oid).await.ok()?;
        if self.read_object(&current).await.ok()?.0 == "commit" {
            current = self.commit(&current).await.ok()?.tree;
        }
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            current = self.tree_entry(&current, part).await.ok()??.1;
        }
        Some(current)
    }

    /// `oid` with tags peeled until an object of `kind` (`^{tag}`
    /// stops at the first tag; `^{blob}` needs a blob at the end).
    pub(crate) async fn peeled_to(&self, oid: &str, kind: &str) -> Option<Oid> {
        let mut oid = oid.to_string();
        for _ in 0..16 {
            let (found, body) = self.read_object(&oid).await.ok()?;
            if found == kind {
                return Some(oid);
            }
            if found != "tag" {
                return None;
            }
            oid = String::from_utf8_lossy(&body)
                .lines()
                .next()?
                .strip_prefix("object ")?
                .to_string();
        }
        None
    }

    /// A revision as the commit it names, tags peeled.
    pub async fn resolve_commit(&self, revision: &str) -> Option<Oid> {
        let oid = self.resolve(revision).await?;
        self.peel(&oid).await.ok()
    }

    /// The ref `name` names, in the order git tries (itself, under
    /// `refs/`, tags, heads, remotes, a remote's `HEAD`), and where it is.
    pub async fn ref_named(&self, name: &str) -> Option<(String, Oid)> {
        let candidates = [
            name.to_string(),
            format!("refs/{name}"),
            format!("refs/tags/{name}"),
            format!("refs/heads/{name}"),
            format!("refs/remotes/{name}"),
            format!("refs/remotes/{name}/HEAD"),
        ];
        // `HEAD`, `FETCH_HEAD`, `ORIG_HEAD`, `MERGE_HEAD`, `AUTO_MERGE`:
        // git's pseudo-refs.
        let pseudo = |name: &str| {
            (name.ends_with("HEAD") || name == "AUTO_MERGE")
                && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        };
        for candidate in candidates {
            if candidate.starts_with("refs/") || pseudo(&candidate) {
                if let Some(oid) = self.read_ref(&candidate).await {
                    return Some((candidate, oid));
                }
            }
        }
        None
    }

    /// A full hash from a prefix of at least four digits.
    pub(crate) async fn expand(&self, prefix: &str) -> Option<Oid> {
        match self.object_names_with(prefix).await.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        }
    }

    /// Every object whose name begins with `prefix`.
    pub(crate) async fn object_names_with(&self, prefix: &str) -> Vec<Oid> {
        self.odb.names_with(prefix).await
    }

    /// Every ancestor of `oid`, itself included.
    pub async fn ancestors(&self, oid: &str) -> HashSet<Oid> {
        let mut seen = HashSet::new();
        let mut pending = vec![oid.to_string()];
        while let Some(next) = pending.pop() {
            if seen.insert(next.clone()) {
                if let Ok((_, parents)) = self.commit_links(&next).await {
                    pending.extend(parents);
                }
            }
        }
        seen
    }

    // ---- identity ----------------------------------------------------------

    /// `Name <email>` and `time zone` for `kind` (`AUTHOR` or
    /// `COMMITTER`), from `GIT_<kind>_NAME`/`_EMAIL`/`_DATE`, then
    /// `<kind>.name`/`user.name` (and emails) in the config, then the
    /// session's user: the order git takes them in.
    pub async fn identity(&self, kind: &str) -> (String, String) {
        let lower = kind.to_lowercase();
        let config = self.config().await;
        let get = |key: &str| {
            config
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let env = |key: &str| self.env.get(key).cloned();
        let name = env(&format!("GIT_{kind}_NAME"))
            .or_else(|| get(&format!("{lower}.name")))
            .or_else(|| get("user.name"))
            .unwrap_or_else(|| self.default_name.clone());
        let email = env(&format!("GIT_{kind}_EMAIL"))
            .or_else(|| get(&format!("{lower}.email")))
            .or_else(|| get("user.email"))
            .or_else(|| env("EMAIL"))
            .unwrap_or_else(|| self.default_email.clone());
        let when = env(&format!("GIT_{kind}_DATE"))
            .and_then(|date| dates::parse_date(&date))
            .unwrap_or_else(|| (now(), "+0000".to_string()));
        (
            format!("{name} <{email}>"),
            format!("{} {}", when.0, when.1),
        )
    }

    // ---- index -------------------------------------------------------------

    fn index_path(&self) -> PathBuf {
        self.git.join("index")
    }

    /// The index's merged entries. A damaged or unreadable index is an
    /// error, never an empty index: an empty one would be committed as
    /// the deletion of every file.
    pub async fn index(&self) -> Res<Index> {
        let path = self.index_path();
        let bytes = match self.io.read_file(&path).await {
            Ok(bytes) => bytes,
            Err(_) if !self.io.exists(&path).await => {
                return Ok(self.legacy_index().await);
            }
            Err(e) => return Err(Error::IndexOpen(Box::new(e))),
        };
        let file = IndexFile::parse(&bytes)?;
        let written = self.io.mtime(&path).await.unwrap_or((u32::MAX, 0));
        let mut rest = IndexRest {
            version: file.version,
            written,
            ..IndexRest::default()
        };
        for (signature, data) in file.extensions {
            if signature[0].is_ascii_lowercase() && !matches!(&signature, b"link" | b"sdir") {
                return Err(Error::IndexExtension(
                    String::from_utf8_lossy(&signature).into_owned(),
                ));
            }
            match &signature {
                b"TREE" => rest.cache = index_file::parse_cache_tree(&data),
                // Where the entries end and how they are split for
                // threads: they describe the old file, git drops and
                // rewrites them as its settings say.
                b"EOIE" | b"IEOT" => {}
                b"REUC" => rest.kept.push((signature, data)),
                other => {
                    rest.unwritable = Some(extension_refusal(other).unwrap_or_else(|| {
                        format!(
                            "this repository's index has a {} extension the sandbox's git does not know; it refuses to write the index",
                            String::from_utf8_lossy(other)
                        )
                    }));
                }
            }
        }
        let mut index = Index::new();
        for entry in file.entries {
            let path = String::from_utf8(entry.path.clone())
                .map_err(|_| Error::CorruptIndex("a path that is not UTF-8".into()))?;
            if entry.stage != 0 {
                rest.unmerged.push(entry);
                continue;
            }
            index.insert(
                path,
                IndexEntry {
                    blob: Blob {
                        mode: entry.mode,
                        oid: to_hex(&entry.oid),
                    },
                    stat: entry.stat,
                    assume_valid: entry.assume_valid,
                    extended: entry.extended,
                },
            );
        }
        *self.rest.lock().unwrap() = rest;
        Ok(index)
    }

    /// The text index of earlier ex_bashkit releases (`.git/sandbox-index`),
    /// read once so their snapshots go on; the next write replaces it.
    async fn legacy_index(&self) -> Index {
        let text = self
            .read_text(&self.git.join("sandbox-index"))
            .await
            .unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(5, ' ');
                let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
                let oid = fields.next()?.to_string();
                let _size: u64 = fields.next()?.parse().ok()?;
                let _mtime: u128 = fields.next()?.parse().ok()?;
                let path = fields.next()?.replace("\\n", "\n").replace("\\\\", "\\");
                // No stat: each file is compared by content once.
                Some((path, IndexEntry::new(Blob { mode, oid }, Stat::default())))
            })
            .collect()
    }

    /// Why this repository's index must not be written, checked before a
    /// command changes anything.
    pub async fn check_writable(&self) -> Res<()> {
        self.index().await?;
        if let Some(why) = &self.rest.lock().unwrap().unwritable {
            return Err(Error::IndexUnwritable(why.clone()));
        }
        if self.bare().await {
            return Err(Error::NoWorkTree);
        }
        Ok(())
    }

    /// Unmerged paths (a conflicted merge's), sorted, as the index was last
    /// read (a writing command reads it first).
    pub fn unmerged(&self) -> Vec<String> {
        let rest = self.rest.lock().unwrap();
        let mut paths: Vec<String> = rest
            .unmerged
            .iter()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        paths.dedup();
        paths
    }

    /// Each unmerged path with the stages it has (1 base, 2 ours, 3
    /// theirs).
    pub fn unmerged_stages(&self) -> BTreeMap<String, Vec<u8>> {
        let rest = self.rest.lock().unwrap();
        let mut paths: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for entry in &rest.unmerged {
            paths
                .entry(String::from_utf8_lossy(&entry.path).into_owned())
                .or_default()
                .push(entry.stage);
        }
        paths
    }

    /// An unmerged path's stages and their blobs.
    pub fn unmerged_blobs(&self, path: &str) -> Vec<(u8, Blob)> {
        let rest = self.rest.lock().unwrap();
        rest.unmerged
            .iter()
            .filter(|e| e.path == path.as_bytes())
            .map(|e| {
                let blob = Blob {
                    mode: e.mode,
                    oid: to_hex(&e.oid),
                };
                (e.stage, blob)
            })
            .collect()
    }

    /// Conflicts to write with the next `save_index`: path, stage, blob.
    pub fn set_unmerged(&self, conflicts: Vec<(String, u8, Blob)>) {
        let mut rest = self.rest.lock().unwrap();
        rest.unmerged = conflicts
            .into_iter()
            .map(|(path, stage, blob)| index_file::Entry {
                path: path.into_bytes(),
                stat: Stat::default(),
                mode: blob.mode,
                oid: from_hex(&blob.oid).unwrap_or([0; 20]),
                stage,
                assume_valid: false,
                extended: 0,
            })
            .collect();
    }

    /// Forgets the conflicts of the paths `drop` picks (their stages
    /// leave the index with the next `save_index`).
    pub fn drop_unmerged(&self, drop: impl Fn(&str) -> bool) {
        let mut rest = self.rest.lock().unwrap();
        rest.unmerged
            .retain(|entry| !drop(&String::from_utf8_lossy(&entry.path)));
    }

    /// A file of `.git` (`MERGE_HEAD`, `MERGE_MSG`), if there.
    pub async fn state_file(&self, name: &str) -> Option<String> {
        self.read_text(&self.git.join(name)).await
    }

    pub async fn write_state_file(&self, name: &str, text: &str) -> Res<()> {
        let path = self.git.join(name);
        if let Some(parent) = path.parent() {
            self.io.mkdir_all(parent).await?;
        }
        self.write(&path, text.as_bytes()).await
    }

    pub async fn remove_state_files(&self, names: &[&str]) {
        for name in names {
            let _ = self.io.remove(&self.git.join(name), false).await;
        }
    }

    /// Ends whatever merge, cherry-pick or revert was waiting, as git's
    /// `remove_branch_state` does after a commit or a reset.
    pub async fn clear_operation_state(&self) {
        self.remove_state_files(&[
            "MERGE_HEAD",
            "MERGE_RR",
            "MERGE_MSG",
            "MERGE_MODE",
            "AUTO_MERGE",
            "SQUASH_MSG",
            "CHERRY_PICK_HEAD",
            "REVERT_HEAD",
        ])
        .await;
    }

    /// Writes `index` as `.git/index`, through `index.lock` as git does,
    /// with a cache tree that vouches for each directory whose tree object
    /// the repository has (the rest marked invalid, as git marks them).
    pub async fn save_index(&self, index: &Index) -> Res<()> {
        // git's own rule: no path it would refuse to check out is staged.
        if let Some((path, _)) = index
            .iter()
            .find(|(path, entry)| !crate::paths::verify_path(path, entry.blob.mode))
        {
            return Err(Error::InvalidPath(path.to_string()));
        }
        let (mut cache, _) = trees(&committed_files(index));
        let mut unsure: Vec<String> = index
            .iter()
            .filter(|(_, e)| e.intent_to_add())
            .map(|(p, _)| p.clone())
            .collect();
        unsure.extend(self.unmerged());
        self.vouch(&mut cache, "", &unsure).await;
        let bytes = {
            let rest = self.rest.lock().unwrap();
            if let Some(why) = &rest.unwritable {
                return Err(Error::IndexUnwritable(why.clone()));
            }
            let mut entries: Vec<index_file::Entry> = index
                .iter()
                .map(|(path, e)| index_file::Entry {
                    path: path.as_bytes().to_vec(),
                    stat: e.stat,
                    mode: e.blob.mode,
                    oid: from_hex(&e.blob.oid).unwrap_or([0; 20]),
                    stage: 0,
                    assume_valid: e.assume_valid,
                    extended: e.extended,
                })
                .collect();
            // A conflict stays until its path is staged.
            entries.extend(
                rest.unmerged
                    .iter()
                    .filter(|e| !index.contains_key(String::from_utf8_lossy(&e.path).as_ref()))
                    .cloned(),
            );
            entries.sort_by(|a, b| a.path.cmp(&b.path).then(a.stage.cmp(&b.stage)));
            let mut extensions = vec![(*b"TREE", index_file::render_cache_tree(&cache))];
            extensions.extend(rest.kept.iter().cloned());
            IndexFile {
                version: if rest.version == 0 { 2 } else { rest.version },
                entries,
                extensions,
            }
            .render()
        };
        let lock = self.git.join("index.lock");
        if self.io.exists(&lock).await {
            return Err(Error::Locked(lock.to_path_buf()));
        }
        self.write(&lock, &bytes).await?;
        if let Err(e) = self.io.rename(&lock, &self.index_path()).await {
            let _ = self.io.remove(&lock, false).await;
            return Err(e);
        }
        if let Ok(written) = self.io.mtime(&self.index_path()).await {
            self.rest.lock().unwrap().written = written;
        }
        let legacy = self.git.join("sandbox-index");
        if self.io.exists(&legacy).await {
            let _ = self.io.remove(&legacy, false).await;
        }
        Ok(())
    }

    /// An index of `files`, with each one's stat where the work tree has
    /// the same content (else a stat that never matches, so the file is
    /// read when next compared). `current`'s entries save a read where
    /// their stat still holds.
    pub async fn index_of(&self, files: &Files, current: &Index) -> Index {
        let mut index = Index::new();
        for (path, blob) in files {
            let stat = match self.lstat(path).await {
                Ok((mode, stat)) => {
                    let work = WorkFile {
                        mode,
                        stat,
                        ignored: false,
                    };
                    let known = current
                        .get(path)
                        .is_some_and(|e| e.blob == *blob && self.unchanged(e, &work));
                    let same = known
                        || self
                            .content(path, work.mode)
                            .await
                            .is_ok_and(|content| hash("blob", &content) == blob.oid);
                    if same {
                        work.stat
                    } else {
                        Stat::default()
                    }
                }
                Err(_) => Stat::default(),
            };
            index.insert(path.clone(), IndexEntry::new(blob.clone(), stat));
        }
        index
    }

    /// Whether a work-tree file is, by its stat, what its entry recorded.
    pub fn unchanged(&self, entry: &IndexEntry, file: &WorkFile) -> bool {
        let written = self.rest.lock().unwrap().written;
        let s = &entry.stat;
        s.mtime != (0, 0)
            && s.mtime == file.stat.mtime
            && s.size == file.stat.size
            && entry.blob.mode == file.mode
            && s.mtime < written
    }

    // ---- work tree ---------------------------------------------------------

    /// The ignore rules of the work tree's top: `core.excludesFile` (or
    /// git's default, `$XDG_CONFIG_HOME/git/ignore`), `info/exclude`.
    async fn global_ignores(&self) -> Ignores {
        let mut ignores = Ignores::default();
        let home = self.env.get("HOME").cloned().unwrap_or_default();
        let excludes = match self.config_value("core.excludesfile").await {
            Some(path) => match path.strip_prefix("~/") {
                Some(rest) => Path::new(&home).join(rest),
                None => super::resolve(&self.root, &path),
            },
            None => match self.env.get("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
                Some(dir) => Path::new(dir).join("git/ignore"),
                None => Path::new(&home).join(".config/git/ignore"),
            },
        };
        for source in [excludes, self.git.join("info/exclude")] {
            if let Ok(bytes) = self.io.read_file(&source).await {
                ignores.add_global(&bytes, &source);
            }
        }
        ignores
    }

    /// The attributes files that apply to `paths` (relative to the
    /// root): `.gitattributes` of the root and of every directory above
    /// them in the work tree, outer first, then `.git/info/attributes`.
    pub async fn attributes<'p>(
        &self,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> super::userdiff::Attributes {
        let mut dirs = std::collections::BTreeSet::from([String::new()]);
        for path in paths {
            let mut dir = path;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                dirs.insert(parent.to_string());
                dir = parent;
            }
        }
        let mut attributes = super::userdiff::Attributes::default();
        for dir in dirs {
            let file = match dir.is_empty() {
                true => ".gitattributes".to_string(),
                false => format!("{dir}/.gitattributes"),
            };
            if let Some(text) = self.attribute_file(&file, false).await {
                attributes.add(&text, &dir);
            }
        }
        if let Some(text) = self.attribute_file("info/attributes", true).await {
            attributes.add(&text, "");
        }
        attributes
    }

    /// An attributes file's text (`in_git`: under `.git`), read once.
    async fn attribute_file(&self, file: &str, in_git: bool) -> Option<Arc<str>> {
        let key = if in_git {
            format!(".git/{file}")
        } else {
            file.to_string()
        };
        if let Some(known) = self.attribute_files.lock().unwrap().get(&key) {
            return known.clone();
        }
        let bytes = match in_git {
            true => self.io.read_file(&self.git.join(file)).await,
            false => self.read_work(file).await,
        };
        let text: Option<Arc<str>> = bytes.ok().map(|b| String::from_utf8_lossy(&b).into());
        self.attribute_files
            .lock()
            .unwrap()
            .insert(key, text.clone());
        text
    }

    /// Forgets what was read of `path` if it is an attributes file (this
    /// git is about to write or remove it).
    fn forget_attributes(&self, path: &str) {
        if path == ".gitattributes" || path.ends_with("/.gitattributes") {
            self.attribute_files.lock().unwrap().remove(path);
        }
    }

    /// The pattern that decides whether `path` (relative to the root) is
    /// ignored, as `check-ignore` answers: the first of its directories'
    /// (or its own) that ignores it, else the negation that keeps the
    /// path itself.
    pub async fn ignoring(&self, path: &str, is_dir: bool) -> Option<super::ignore::Matched> {
        let mut ignores = self.global_ignores().await;
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for depth in 0..parts.len() {
            let dir = parts[..depth].join("/");
            let file = match dir.is_empty() {
                true => ".gitignore".to_string(),
                false => format!("{dir}/.gitignore"),
            };
            if let Ok(bytes) = self.read_work(&file).await {
                ignores.add_gitignore(&bytes, &dir);
            }
            let here = parts[..=depth].join("/");
            let last = depth + 1 == parts.len();
            match ignores.matching(&here, !last || is_dir) {
                Some(found) if !found.negative || last => return Some(found),
                _ => {}
            }
        }
        None
    }

    /// Every file under the root but `.git`, by relative path, each
    /// marked ignored or not. An ignored directory is entered only where
    /// the index tracks something in it.
    pub async fn work_files(&self, index: &Index) -> Res<BTreeMap<String, WorkFile>> {
        Ok(self.work_tree(index).await?.0)
    }

    /// [`Repo::work_files`], and the directories (`dir/`) that hold
    /// nothing at all and are not ignored (what `clean -d` removes too).
    pub async fn work_tree(&self, index: &Index) -> Res<(BTreeMap<String, WorkFile>, Vec<String>)> {
        let mut ignores = self.global_ignores().await;
        let mut files = BTreeMap::new();
        let mut empty = Vec::new();
        // (its relative path with a trailing `/`, ignored)
        let mut pending = vec![(String::new(), false)];
        while let Some((prefix, dir_ignored)) = pending.pop() {
            let entries = self.list(&prefix).await?;
            if entries.is_empty() && !prefix.is_empty() && !dir_ignored {
                empty.push(prefix.clone());
            }
            if !dir_ignored {
                let gitignore = entries
                    .iter()
                    .any(|(name, kind, _, _)| name == ".gitignore" && *kind == host::Kind::File);
                if gitignore {
                    if let Ok(bytes) = self.read_work(&format!("{prefix}.gitignore")).await {
                        ignores.add_gitignore(&bytes, prefix.trim_end_matches('/'));
                    }
                }
            }
            for (name, kind, mode, stat) in entries {
                if name == ".git" {
                    continue;
                }
                let relative = format!("{prefix}{name}");
                match kind {
                    host::Kind::Dir => {
                        let ignored = dir_ignored || ignores.ignored(&relative, true);
                        let inner = format!("{relative}/");
                        let tracked_inside = index
                            .range(inner.clone()..)
                            .next()
                            .is_some_and(|(p, _)| p.starts_with(&inner));
                        // A nested repository is its own, as git leaves it.
                        let nested =
                            !tracked_inside && self.exists_in_work(&format!("{inner}.git")).await;
                        if (!ignored || tracked_inside) && !nested {
                            pending.push((inner, ignored));
                        }
                    }
                    host::Kind::File | host::Kind::Symlink => {
                        let ignored = dir_ignored || ignores.ignored(&relative, false);
                        files.insert(
                            relative,
                            WorkFile {
                                mode,
                                stat,
                                ignored,
                            },
                        );
                    }
                    host::Kind::Other => {}
                }
            }
        }
        Ok((files, empty))
    }

    /// The work tree's tracked files only: each directory of the index
    /// listed once, nothing else walked (a plain `git diff`).
    pub async fn tracked_work(&self, index: &Index) -> Res<BTreeMap<String, WorkFile>> {
        let mut dirs: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        for path in index.keys() {
            dirs.insert(path.rsplit_once('/').map_or("", |(dir, _)| dir));
        }
        let mut files = BTreeMap::new();
        for dir in dirs {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let Ok(entries) = self.list(&prefix).await else {
                continue;
            };
            for (name, kind, mode, stat) in entries {
                let path = format!("{prefix}{name}");
                if matches!(kind, host::Kind::File | host::Kind::Symlink)
                    && index.contains_key(&path)
                {
                    files.insert(
                        path,
                        WorkFile {
                            mode,
                            stat,
                            ignored: false,
                        },
                    );
                }
            }
        }
        Ok(files)
    }

    /// A work-tree directory's entries: name, kind, git mode, stat.
    async fn list(&self, prefix: &str) -> Res<Vec<(String, host::Kind, u32, Stat)>> {
        if let Some(host) = self.io.host() {
            let entries = host.list(Path::new(prefix)).map_err(Error::from)?;
            return Ok(entries
                .into_iter()
                .map(|e| {
                    let mode = host_mode(&e);
                    (e.name, e.kind, mode, e.stat)
                })
                .collect());
        }
        let entries = self
            .fs
            .read_dir(&self.root.join(prefix))
            .await
            .map_err(Error::from)?;
        Ok(entries
            .into_iter()
            .map(|e| {
                let meta = &e.metadata;
                let kind = if meta.file_type.is_dir() {
                    host::Kind::Dir
                } else if meta.file_type.is_symlink() {
                    host::Kind::Symlink
                } else if meta.file_type.is_file() {
                    host::Kind::File
                } else {
                    host::Kind::Other
                };
                (e.name, kind, file_mode(meta), stat_of(meta))
            })
            .collect())
    }

    async fn read_work(&self, relative: &str) -> Res<Vec<u8>> {
        match self.io.host() {
            Some(host) => host.read(Path::new(relative)).map_err(Error::from),
            None => self
                .fs
                .read_file(&self.root.join(relative))
                .await
                .map_err(Error::from),
        }
    }

    async fn exists_in_work(&self, relative: &str) -> bool {
        match self.io.host() {
            Some(host) => host.lstat(Path::new(relative)).is_ok(),
            None => self
                .fs
                .exists(&self.root.join(relative))
                .await
                .unwrap_or(false),
        }
    }

    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// What git hashes for a work-tree file: its bytes, or a symlink's
    /// target.
    pub async fn content(&self, path: &str, mode: u32) -> Res<Vec<u8>> {
        if let Some(host) = self.io.host() {
            return match mode {
                0o120000 => host.read_link(Path::new(path)),
                _ => host.read(Path::new(path)),
            }
            .map_err(Error::from);
        }
        let full = self.root.join(path);
        if mode == 0o120000 {
            let target = self.fs.read_link(&full).await.map_err(Error::from)?;
            return Ok(target.to_string_lossy().into_owned().into_bytes());
        }
        self.fs.read_file(&full).await.map_err(Error::from)
    }

    /// The blob a work-tree file would be: the index's when its stat says
    /// it is unchanged, else hashed from its content.
    pub async fn work_blob(&self, path: &str, file: &WorkFile, index: &Index) -> Res<Blob> {
        if let Some(entry) = index.get(path) {
            if self.unchanged(entry, file) {
                return Ok(Blob {
                    mode: file.mode,
                    oid: entry.blob.oid.clone(),
                });
            }
        }
        let content = self.content(path, file.mode).await?;
        Ok(Blob {
            mode: file.mode,
            oid: hash("blob", &content),
        })
    }

    /// Stores a work-tree file as a blob and answers its index entry.
    pub async fn stage(&self, path: &str) -> Res<IndexEntry> {
        let (mode, stat) = self.lstat(path).await?;
        let content = self.content(path, mode).await?;
        let oid = self.write_object("blob", &content).await?;
        Ok(IndexEntry::new(Blob { mode, oid }, stat))
    }

    /// The repository's mailmap, read where git reads it: `.mailmap` at
    /// the top of the work tree (not followed if a link), or `HEAD`'s in
    /// a bare repository. `mailmap.file` and `mailmap.blob` are refused.
    pub async fn mailmap(&self) -> Res<super::mailmap::Mailmap> {
        for key in ["mailmap.file", "mailmap.blob"] {
            if self.config_value(key).await.is_some() {
                return Err(Error::Unsupported(key.to_string()));
            }
        }
        let mut map = super::mailmap::Mailmap::default();
        let text = if self.bare().await {
            match self.resolve("HEAD:.mailmap").await {
                Some(oid) => self.blob(&oid).await.ok(),
                None => None,
            }
        } else {
            match self.lstat(".mailmap").await {
                Ok((0o100644 | 0o100755, _)) => self.content(".mailmap", 0o100644).await.ok(),
                _ => None,
            }
        };
        if let Some(text) = text {
            map.add(&String::from_utf8_lossy(&text));
        }
        Ok(map)
    }

    /// A work-tree file's git mode and stat (all of `lstat`'s where the
    /// tree is the host's).
    async fn lstat(&self, path: &str) -> Res<(u32, Stat)> {
        if let Some(host) = self.io.host() {
            let entry = host.lstat(Path::new(path)).map_err(Error::from)?;
            return Ok((host_mode(&entry), entry.stat));
        }
        let meta = self
            .fs
            .lstat(&self.root.join(path))
            .await
            .map_err(Error::from)?;
        Ok((file_mode(&meta), stat_of(&meta)))
    }

    /// Writes `blob` at `path` in the work tree; answers its index entry.
    pub async fn checkout_file(&self, path: &str, blob: &Blob) -> Res<IndexEntry> {
        self.forget_attributes(path);
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            self.io.mkdir_all(parent).await?;
        }
        let content = self.blob(&blob.oid).await?;
        if blob.mode == 0o120000 {
            let _ = self.io.remove(&full, false).await;
            let target = String::from_utf8_lossy(&content).into_owned();
            self.fs
                .symlink(Path::new(&target), &full)
                .await
                .map_err(Error::from)?;
        } else {
            self.write(&full, &content).await?;
            let mode = if blob.mode == 0o100755 { 0o755 } else { 0o644 };
            let _ = self.io.chmod(&full, mode).await;
        }
        let (_, stat) = self.lstat(path).await?;
        Ok(IndexEntry::new(blob.clone(), stat))
    }

    /// Removes a work-tree file and the directories it leaves empty.
    pub async fn remove_file(&self, path: &str) -> Res<()> {
        self.forget_attributes(path);
        let full = self.root.join(path);
        let _ = self.io.remove(&full, false).await;
        let mut dir = full.parent();
        while let Some(d) = dir {
            if d == self.root
                || !self
                    .io
                    .read_dir(d)
                    .await
                    .map(|e| e.is_empty())
                    .unwrap_or(false)
            {
                break;
            }
            let _ = self.io.remove(d, true).await;
            dir = d.parent();
        }
        Ok(())
    }

    /// Removes the directories below `dir` (and `dir`) that are empty
    /// once their empty directories are gone; files stay.
    pub async fn remove_empty_dirs(&self, dir: &str) -> Res<()> {
        let full = self.root.join(dir.trim_end_matches('/'));
        let mut pending = vec![(full, false)];
        // Depth first: a directory is looked at again after its children.
        while let Some((path, children_done)) = pending.pop() {
            let entries = match self.io.read_dir(&path).await {
                Ok(entries) => entries,
                Err(_) => continue,
            };
            if children_done {
                if entries.is_empty() {
                    self.io.remove(&path, true).await?;
                }
                continue;
            }
            pending.push((path.clone(), true));
            for (name, is_dir) in entries {
                if is_dir {
                    pending.push((path.join(name), false));
                }
            }
        }
        Ok(())
    }

    // ---- config ------------------------------------------------------------

    pub async fn config_text(&self) -> String {
        self.read_text(&self.git.join("config"))
            .await
            .unwrap_or_default()
    }

    /// Every setting of the config file, then those of `git -c`.
    pub async fn config(&self) -> Vec<(String, String)> {
        let mut settings = config::parse(&self.config_text().await);
        settings.extend(self.overrides.iter().cloned());
        settings
    }

    /// The last value of `key` (`remote.origin.tagOpt`: compared as git
    /// compares keys, section and name in any case).
    pub async fn config_value(&self, key: &str) -> Option<String> {
        let key = config::canonical(key);
        self.config()
            .await
            .into_iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// Every value of `key`, in order (a multi-valued key).
    pub async fn config_values(&self, key: &str) -> Vec<String> {
        let key = config::canonical(key);
        self.config()
            .await
            .into_iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .collect()
    }

    /// A boolean setting as git reads one (`true`/`yes`/`on`/`1`, or
    /// the key alone, is true); `default` when unset or not a boolean.
    pub async fn config_bool(&self, key: &str, default: bool) -> bool {
        match self.config_value(key).await.map(|v| v.to_ascii_lowercase()) {
            Some(v) if matches!(v.as_str(), "true" | "yes" | "on" | "1") => true,
            Some(v) if matches!(v.as_str(), "false" | "no" | "off" | "0" | "") => false,
            _ => default,
        }
    }

    /// Writes the config, refusing any key that would make git run a
    /// program (`executing_keys.rs`) that was not there already.
    pub async fn save_config_text(&self, text: &str) -> Res<()> {
        super::executing_keys::check_edit(&self.config_text().await, text)?;
        self.write(&self.git.join("config"), text.as_bytes()).await
    }
}

/// Every tree of `files`: the cache-tree node of the root (each
/// directory's tree computed, its entries counted) and each tree's body.
fn trees(files: &Files) -> (CacheNode, Vec<(Oid, Vec<u8>)>) {
    let mut bodies = Vec::new();
    let entries: Vec<(&str, &Blob)> = files.iter().map(|(p, b)| (p.as_str(), b)).collect();
    let root = tree_of(&entries, String::new(), &mut bodies);
    (root, bodies)
}

/// The tree of `entries` (paths relative to it, sorted), named `name`.
fn tree_of(entries: &[(&str, &Blob)], name: String, bodies: &mut Vec<(Oid, Vec<u8>)>) -> CacheNode {
    // Git orders a tree's entries by name, a directory's as if it ended
    // in `/`.
    let mut items: BTreeMap<String, (String, u32, [u8; 20])> = BTreeMap::new();
    let mut children = Vec::new();
    let mut at = 0;
    while at < entries.len() {
        let (path, blob) = entries[at];
        match path.split_once('/') {
            None => {
                let oid = from_hex(&blob.oid).unwrap_or([0; 20]);
                items.insert(path.to_string(), (path.to_string(), blob.mode, oid));
                at += 1;
            }
            Some((dir, _)) => {
                let prefix = format!("{dir}/");
                let end = entries[at..]
                    .iter()
                    .position(|(p, _)| !p.starts_with(&prefix))
                    .map_or(entries.len(), |n| at + n);
                let inner: Vec<(&str, &Blob)> = entries[at..end]
                    .iter()
                    .map(|(p, b)| (&p[prefix.len()..], *b))
                    .collect();
                let child = tree_of(&inner, dir.to_string(), bodies);
                items.insert(
                    prefix,
                    (dir.to_string(), 0o40000, child.oid.expect("computed")),
                );
                children.push(child);
                at = end;
            }
        }
    }
    let mut body = Vec::new();
    for (name, mode, oid) in items.values() {
        body.extend_from_slice(format!("{mode:o} {name}\0").as_bytes());
        body.extend_from_slice(oid);
    }
    let oid = hash("tree", &body);
    let raw = from_hex(&oid).expect("a hash");
    bodies.push((oid, body));
    CacheNode {
        name,
        entries: entries.len(),
        oid: Some(raw),
        children,
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Whether a commit's start holds its headers through the committer's
/// line (or all of them: the blank line before the message).
fn through_committer(start: &[u8]) -> bool {
    let Some(at) = memchr::memmem::find(start, b"\ncommitter ") else {
        return memchr::memmem::find(start, b"\n\n").is_some();
    };
    memchr::memchr(b'\n', &start[at + 1..]).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_hash_as_git_hashes_them() {
        // `echo hello | git hash-object --stdin`
        assert_eq!(
            hash("blob", b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn signatures_keep_their_zone() {
        let s = Signature::parse("A U Thor <a@x.org> 1112911993 -0700");
        assert_eq!((s.name.as_str(), s.email.as_str()), ("A U Thor", "a@x.org"));
        assert_eq!((s.time, s.zone.as_str()), (1_112_911_993, "-0700"));
        assert_eq!(s.date(), "Thu Apr 7 15:13:13 2005 -0700");
    }
}
