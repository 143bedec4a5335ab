//! A repository on the session's filesystem: git's own object format
//! (zlib-compressed loose objects named by SHA-1), refs and `HEAD` as git
//! lays them out, `config` in git's syntax; the index is a text file of
//! ours (`.git/sandbox-index`), with each entry's size and mtime so an
//! unchanged file is not read again.

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use bashkit::FileSystem;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use sha1::{Digest, Sha1};

pub type Oid = String;

/// A file as a tree or the index holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    pub mode: u32,
    pub oid: Oid,
}

/// Path (relative to the work tree, `/`-separated) → blob.
pub type Files = BTreeMap<String, Blob>;

#[derive(Clone, Debug)]
pub struct IndexEntry {
    pub blob: Blob,
    pub size: u64,
    pub mtime: u128,
}

pub type Index = BTreeMap<String, IndexEntry>;

/// A file of the work tree, as `stat` sees it.
#[derive(Clone, Debug)]
pub struct WorkFile {
    pub mode: u32,
    pub size: u64,
    pub mtime: u128,
}

pub struct Commit {
    pub tree: Oid,
    pub parents: Vec<Oid>,
    pub author: String,
    pub author_email: String,
    pub time: i64,
    pub message: String,
}

impl Commit {
    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

pub enum Head {
    Branch(String),
    Detached(Oid),
}

pub type Failure = String;
pub type Res<T> = Result<T, Failure>;

fn io<E: std::fmt::Display>(error: E) -> Failure {
    error.to_string()
}

pub struct Repo {
    pub fs: Arc<dyn FileSystem>,
    pub root: PathBuf,
    pub git: PathBuf,
}

pub const NULL_OID: &str = "0000000000000000000000000000000000000000";

pub fn hash(kind: &str, body: &[u8]) -> Oid {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", body.len()).as_bytes());
    hasher.update(body);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn short(oid: &str) -> &str {
    &oid[..7.min(oid.len())]
}

pub fn mtime_of(meta: &bashkit::Metadata) -> u128 {
    meta.modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Git's two file modes.
pub fn file_mode(mode: u32) -> u32 {
    if mode & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    }
}

impl Repo {
    /// The repository `cwd` is in: the nearest directory up with a `.git`.
    pub async fn discover(fs: &Arc<dyn FileSystem>, cwd: &Path) -> Option<Repo> {
        let mut dir = Some(cwd);
        while let Some(candidate) = dir {
            let git = candidate.join(".git");
            if fs.stat(&git).await.is_ok_and(|m| m.file_type.is_dir()) {
                return Some(Repo {
                    fs: fs.clone(),
                    root: candidate.to_path_buf(),
                    git,
                });
            }
            dir = candidate.parent();
        }
        None
    }

    pub async fn init(fs: &Arc<dyn FileSystem>, root: &Path) -> Res<(Repo, bool)> {
        let git = root.join(".git");
        let existed = fs.exists(&git.join("HEAD")).await.unwrap_or(false);
        for dir in ["objects", "refs/heads", "refs/tags"] {
            fs.mkdir(&git.join(dir), true).await.map_err(io)?;
        }
        let repo = Repo {
            fs: fs.clone(),
            root: root.to_path_buf(),
            git,
        };
        if !existed {
            repo.write(&repo.git.join("HEAD"), b"ref: refs/heads/master\n")
                .await?;
            repo.write(
                &repo.git.join("config"),
                b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
            )
            .await?;
        }
        Ok((repo, existed))
    }

    async fn write(&self, path: &Path, bytes: &[u8]) -> Res<()> {
        self.fs.write_file(path, bytes).await.map_err(io)
    }

    async fn read_text(&self, path: &Path) -> Option<String> {
        let bytes = self.fs.read_file(path).await.ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    // ---- objects -----------------------------------------------------------

    fn object_path(&self, oid: &str) -> PathBuf {
        self.git.join("objects").join(&oid[..2]).join(&oid[2..])
    }

    pub async fn write_object(&self, kind: &str, body: &[u8]) -> Res<Oid> {
        let oid = hash(kind, body);
        let path = self.object_path(&oid);
        if !self.fs.exists(&path).await.unwrap_or(false) {
            let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder
                .write_all(format!("{kind} {}\0", body.len()).as_bytes())
                .and_then(|()| encoder.write_all(body))
                .map_err(io)?;
            let compressed = encoder.finish().map_err(io)?;
            self.fs
                .mkdir(path.parent().expect("objects/xx"), true)
                .await
                .map_err(io)?;
            self.write(&path, &compressed).await?;
        }
        Ok(oid)
    }

    pub async fn read_object(&self, oid: &str) -> Res<(String, Vec<u8>)> {
        if oid.len() != 40 {
            return Err(format!("bad object {oid}"));
        }
        let compressed = self
            .fs
            .read_file(&self.object_path(oid))
            .await
            .map_err(|_| format!("bad object {oid}"))?;
        let mut raw = Vec::new();
        ZlibDecoder::new(&compressed[..])
            .read_to_end(&mut raw)
            .map_err(|_| format!("corrupt object {oid}"))?;
        let nul = raw
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| format!("corrupt object {oid}"))?;
        let header = String::from_utf8_lossy(&raw[..nul]).into_owned();
        let kind = header.split(' ').next().unwrap_or("").to_string();
        Ok((kind, raw[nul + 1..].to_vec()))
    }

    pub async fn blob(&self, oid: &str) -> Res<Vec<u8>> {
        Ok(self.read_object(oid).await?.1)
    }

    pub async fn commit(&self, oid: &str) -> Res<Commit> {
        let (kind, body) = self.read_object(oid).await?;
        if kind != "commit" {
            return Err(format!("{oid} is a {kind}, not a commit"));
        }
        let text = String::from_utf8_lossy(&body);
        let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut commit = Commit {
            tree: String::new(),
            parents: Vec::new(),
            author: String::new(),
            author_email: String::new(),
            time: 0,
            message: message.to_string(),
        };
        for line in headers.lines() {
            if let Some(tree) = line.strip_prefix("tree ") {
                commit.tree = tree.to_string();
            } else if let Some(parent) = line.strip_prefix("parent ") {
                commit.parents.push(parent.to_string());
            } else if let Some(author) = line.strip_prefix("author ") {
                // name <email> time zone
                if let Some((name, rest)) = author.split_once(" <") {
                    commit.author = name.to_string();
                    if let Some((email, when)) = rest.split_once("> ") {
                        commit.author_email = email.to_string();
                        commit.time = when
                            .split(' ')
                            .next()
                            .and_then(|t| t.parse().ok())
                            .unwrap_or(0);
                    }
                }
            }
        }
        Ok(commit)
    }

    /// Every file of a tree, nested trees flattened.
    pub async fn tree_files(&self, tree: &str) -> Res<Files> {
        let mut files = Files::new();
        let mut pending = vec![(String::new(), tree.to_string())];
        while let Some((prefix, oid)) = pending.pop() {
            let (_, body) = self.read_object(&oid).await?;
            let mut rest = &body[..];
            while !rest.is_empty() {
                let space = rest.iter().position(|&b| b == b' ').ok_or("corrupt tree")?;
                let nul = rest.iter().position(|&b| b == 0).ok_or("corrupt tree")?;
                let mode =
                    u32::from_str_radix(&String::from_utf8_lossy(&rest[..space]), 8).map_err(io)?;
                let name = String::from_utf8_lossy(&rest[space + 1..nul]).into_owned();
                let raw = rest.get(nul + 1..nul + 21).ok_or("corrupt tree")?;
                let child: Oid = raw.iter().map(|b| format!("{b:02x}")).collect();
                let path = format!("{prefix}{name}");
                if mode == 0o40000 {
                    pending.push((format!("{path}/"), child));
                } else {
                    files.insert(path, Blob { mode, oid: child });
                }
                rest = &rest[nul + 21..];
            }
        }
        Ok(files)
    }

    pub async fn commit_files(&self, commit: Option<&str>) -> Res<Files> {
        match commit {
            Some(oid) => self.tree_files(&self.commit(oid).await?.tree).await,
            None => Ok(Files::new()),
        }
    }

    /// Writes the trees of `files` and answers the root's.
    pub async fn write_tree(&self, files: &Files) -> Res<Oid> {
        self.write_dir(files, String::new()).await
    }

    fn write_dir<'a>(
        &'a self,
        files: &'a Files,
        prefix: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Res<Oid>> + Send + 'a>> {
        Box::pin(async move {
            // Git orders a tree's entries by name, a directory's as if it
            // ended in `/`.
            let mut entries: BTreeMap<String, (String, u32, Oid)> = BTreeMap::new();
            let mut dirs: Vec<String> = Vec::new();
            for (path, blob) in files.range(prefix.clone()..) {
                let Some(rest) = path.strip_prefix(&prefix) else {
                    break;
                };
                match rest.split_once('/') {
                    Some((dir, _)) => {
                        if dirs.last().map(String::as_str) != Some(dir) {
                            dirs.push(dir.to_string());
                        }
                    }
                    None => {
                        entries.insert(
                            rest.to_string(),
                            (rest.to_string(), blob.mode, blob.oid.clone()),
                        );
                    }
                }
            }
            for dir in dirs {
                let oid = self.write_dir(files, format!("{prefix}{dir}/")).await?;
                entries.insert(format!("{dir}/"), (dir, 0o40000, oid));
            }
            let mut body = Vec::new();
            for (name, mode, oid) in entries.values() {
                body.extend_from_slice(format!("{mode:o} {name}\0").as_bytes());
                body.extend(hex_bytes(oid));
            }
            self.write_object("tree", &body).await
        })
    }

    // ---- refs --------------------------------------------------------------

    pub async fn head(&self) -> Head {
        let text = self
            .read_text(&self.git.join("HEAD"))
            .await
            .unwrap_or_default();
        match text.trim().strip_prefix("ref: refs/heads/") {
            Some(branch) => Head::Branch(branch.to_string()),
            None => Head::Detached(text.trim().to_string()),
        }
    }

    pub async fn set_head_branch(&self, branch: &str) -> Res<()> {
        self.write(
            &self.git.join("HEAD"),
            format!("ref: refs/heads/{branch}\n").as_bytes(),
        )
        .await
    }

    pub async fn set_head_detached(&self, oid: &str) -> Res<()> {
        self.write(&self.git.join("HEAD"), format!("{oid}\n").as_bytes())
            .await
    }

    pub async fn branch(&self, name: &str) -> Option<Oid> {
        let text = self
            .read_text(&self.git.join("refs/heads").join(name))
            .await?;
        Some(text.trim().to_string()).filter(|t| t.len() == 40)
    }

    pub async fn tag(&self, name: &str) -> Option<Oid> {
        let text = self
            .read_text(&self.git.join("refs/tags").join(name))
            .await?;
        Some(text.trim().to_string()).filter(|t| t.len() == 40)
    }

    pub async fn set_ref(&self, kind: &str, name: &str, oid: &str) -> Res<()> {
        let path = self.git.join("refs").join(kind).join(name);
        if let Some(parent) = path.parent() {
            self.fs.mkdir(parent, true).await.map_err(io)?;
        }
        self.write(&path, format!("{oid}\n").as_bytes()).await
    }

    pub async fn delete_ref(&self, kind: &str, name: &str) -> Res<()> {
        self.fs
            .remove(&self.git.join("refs").join(kind).join(name), false)
            .await
            .map_err(io)
    }

    pub async fn refs(&self, kind: &str) -> Vec<String> {
        let mut names = Vec::new();
        let base = self.git.join("refs").join(kind);
        let mut pending = vec![base.clone()];
        while let Some(dir) = pending.pop() {
            for entry in self.fs.read_dir(&dir).await.unwrap_or_default() {
                let path = dir.join(&entry.name);
                if entry.metadata.file_type.is_dir() {
                    pending.push(path);
                } else if let Ok(name) = path.strip_prefix(&base) {
                    names.push(name.to_string_lossy().into_owned());
                }
            }
        }
        names.sort();
        names
    }

    /// The commit `HEAD` names; `None` before the first commit.
    pub async fn head_commit(&self) -> Option<Oid> {
        match self.head().await {
            Head::Branch(branch) => self.branch(&branch).await,
            Head::Detached(oid) => Some(oid),
        }
    }

    /// Moves what `HEAD` names (its branch, or `HEAD` itself) to `oid`.
    pub async fn advance_head(&self, oid: &str) -> Res<()> {
        match self.head().await {
            Head::Branch(branch) => self.set_ref("heads", &branch, oid).await,
            Head::Detached(_) => self.set_head_detached(oid).await,
        }
    }

    /// A revision as git reads one: `HEAD`, a branch, a tag, a hash or its
    /// prefix, each followed by any number of `~N` and `^`.
    pub async fn resolve(&self, revision: &str) -> Option<Oid> {
        let split = revision.find(['~', '^']).unwrap_or(revision.len());
        let (base, mut suffix) = revision.split_at(split);
        let mut oid = match base {
            "HEAD" | "@" => self.head_commit().await?,
            name => match self.branch(name).await {
                Some(oid) => oid,
                None => match self.tag(name).await {
                    Some(oid) => oid,
                    None => self.expand(name).await?,
                },
            },
        };
        while !suffix.is_empty() {
            let (steps, rest) = if let Some(rest) = suffix.strip_prefix('~') {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                (rest[..digits].parse().unwrap_or(1), &rest[digits..])
            } else {
                let rest = &suffix[1..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                if rest[..digits].parse::<usize>().unwrap_or(1) != 1 {
                    return None;
                }
                (1, &rest[digits..])
            };
            for _ in 0..steps {
                oid = self.commit(&oid).await.ok()?.parents.first()?.clone();
            }
            suffix = rest;
        }
        Some(oid)
    }

    /// A full hash from a prefix of at least four digits.
    async fn expand(&self, prefix: &str) -> Option<Oid> {
        if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let prefix = prefix.to_ascii_lowercase();
        let dir = self.git.join("objects").join(&prefix[..2]);
        let matches: Vec<Oid> = self
            .fs
            .read_dir(&dir)
            .await
            .ok()?
            .into_iter()
            .map(|e| format!("{}{}", &prefix[..2], e.name))
            .filter(|oid| oid.starts_with(&prefix))
            .collect();
        match matches.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        }
    }

    /// Every ancestor of `oid`, itself included.
    pub async fn ancestors(&self, oid: &str) -> HashSet<Oid> {
        let mut seen = HashSet::new();
        let mut pending = vec![oid.to_string()];
        while let Some(next) = pending.pop() {
            if seen.insert(next.clone()) {
                if let Ok(commit) = self.commit(&next).await {
                    pending.extend(commit.parents);
                }
            }
        }
        seen
    }

    // ---- index -------------------------------------------------------------

    fn index_path(&self) -> PathBuf {
        self.git.join("sandbox-index")
    }

    pub async fn index(&self) -> Index {
        let text = self.read_text(&self.index_path()).await.unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(5, ' ');
                let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
                let oid = fields.next()?.to_string();
                let size = fields.next()?.parse().ok()?;
                let mtime = fields.next()?.parse().ok()?;
                let path = unescape_path(fields.next()?);
                Some((
                    path,
                    IndexEntry {
                        blob: Blob { mode, oid },
                        size,
                        mtime,
                    },
                ))
            })
            .collect()
    }

    pub async fn save_index(&self, index: &Index) -> Res<()> {
        let mut text = String::new();
        for (path, entry) in index {
            text.push_str(&format!(
                "{:o} {} {} {} {}\n",
                entry.blob.mode,
                entry.blob.oid,
                entry.size,
                entry.mtime,
                escape_path(path)
            ));
        }
        self.write(&self.index_path(), text.as_bytes()).await
    }

    /// An index of `files`, with each one's stat where the work tree has
    /// the same content (else a stat that never matches, so the file is
    /// read when next compared). `current`'s entries save a read where
    /// their stat still holds.
    pub async fn index_of(&self, files: &Files, current: &Index) -> Index {
        let mut index = Index::new();
        for (path, blob) in files {
            let full = self.root.join(path);
            let (size, mtime) = match self.fs.stat(&full).await {
                Ok(meta) => {
                    let mtime = mtime_of(&meta);
                    let known = current.get(path).is_some_and(|e| {
                        e.blob == *blob && e.size == meta.size && e.mtime == mtime
                    });
                    let same = known
                        || self
                            .fs
                            .read_file(&full)
                            .await
                            .is_ok_and(|content| hash("blob", &content) == blob.oid);
                    if same {
                        (meta.size, mtime)
                    } else {
                        (u64::MAX, 0)
                    }
                }
                Err(_) => (u64::MAX, 0),
            };
            index.insert(
                path.clone(),
                IndexEntry {
                    blob: blob.clone(),
                    size,
                    mtime,
                },
            );
        }
        index
    }

    // ---- work tree ---------------------------------------------------------

    /// Every file under the root but `.git`, by relative path.
    pub async fn work_files(&self) -> Res<BTreeMap<String, WorkFile>> {
        let mut files = BTreeMap::new();
        let mut pending = vec![self.root.clone()];
        while let Some(dir) = pending.pop() {
            for entry in self.fs.read_dir(&dir).await.map_err(io)? {
                if entry.name == ".git" {
                    continue;
                }
                let path = dir.join(&entry.name);
                let meta = &entry.metadata;
                if meta.file_type.is_dir() {
                    pending.push(path);
                } else if meta.file_type.is_file() {
                    files.insert(
                        self.relative(&path),
                        WorkFile {
                            mode: file_mode(meta.mode),
                            size: meta.size,
                            mtime: mtime_of(meta),
                        },
                    );
                }
            }
        }
        Ok(files)
    }

    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The blob a work-tree file would be: the index's when its stat says
    /// it is unchanged, else hashed from its content.
    pub async fn work_blob(&self, path: &str, file: &WorkFile, index: &Index) -> Res<Blob> {
        if let Some(entry) = index.get(path) {
            if entry.size == file.size && entry.mtime == file.mtime {
                return Ok(Blob {
                    mode: file.mode,
                    oid: entry.blob.oid.clone(),
                });
            }
        }
        let content = self.fs.read_file(&self.root.join(path)).await.map_err(io)?;
        Ok(Blob {
            mode: file.mode,
            oid: hash("blob", &content),
        })
    }

    /// Stores a work-tree file as a blob and answers its index entry.
    pub async fn stage(&self, path: &str) -> Res<IndexEntry> {
        let full = self.root.join(path);
        let meta = self.fs.stat(&full).await.map_err(io)?;
        let content = self.fs.read_file(&full).await.map_err(io)?;
        let oid = self.write_object("blob", &content).await?;
        Ok(IndexEntry {
            blob: Blob {
                mode: file_mode(meta.mode),
                oid,
            },
            size: meta.size,
            mtime: mtime_of(&meta),
        })
    }

    /// Writes `blob` at `path` in the work tree; answers its index entry.
    pub async fn checkout_file(&self, path: &str, blob: &Blob) -> Res<IndexEntry> {
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            self.fs.mkdir(parent, true).await.map_err(io)?;
        }
        let content = self.blob(&blob.oid).await?;
        self.write(&full, &content).await?;
        let mode = if blob.mode == 0o100755 { 0o755 } else { 0o644 };
        let _ = self.fs.chmod(&full, mode).await;
        let meta = self.fs.stat(&full).await.map_err(io)?;
        Ok(IndexEntry {
            blob: blob.clone(),
            size: meta.size,
            mtime: mtime_of(&meta),
        })
    }

    /// Removes a work-tree file and the directories it leaves empty.
    pub async fn remove_file(&self, path: &str) -> Res<()> {
        let full = self.root.join(path);
        let _ = self.fs.remove(&full, false).await;
        let mut dir = full.parent();
        while let Some(d) = dir {
            if d == self.root
                || !self
                    .fs
                    .read_dir(d)
                    .await
                    .map(|e| e.is_empty())
                    .unwrap_or(false)
            {
                break;
            }
            let _ = self.fs.remove(d, false).await;
            dir = d.parent();
        }
        Ok(())
    }

    // ---- config ------------------------------------------------------------

    pub async fn config(&self) -> Vec<(String, String)> {
        parse_config(
            &self
                .read_text(&self.git.join("config"))
                .await
                .unwrap_or_default(),
        )
    }

    pub async fn save_config(&self, entries: &[(String, String)]) -> Res<()> {
        self.write(&self.git.join("config"), render_config(entries).as_bytes())
            .await
    }
}

fn hex_bytes(oid: &str) -> Vec<u8> {
    (0..oid.len() / 2)
        .filter_map(|i| u8::from_str_radix(&oid[2 * i..2 * i + 2], 16).ok())
        .collect()
}

fn escape_path(path: &str) -> String {
    path.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape_path(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// `section.key` (`section.sub.key` for `[section "sub"]`) → value.
pub fn parse_config(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = match header.split_once(' ') {
                Some((name, sub)) => format!("{}.{}", name.to_lowercase(), sub.trim_matches('"')),
                None => header.to_lowercase(),
            };
        } else if let Some((key, value)) = line.split_once('=') {
            entries.push((
                format!("{section}.{}", key.trim().to_lowercase()),
                value.trim().trim_matches('"').to_string(),
            ));
        }
    }
    entries
}

fn render_config(entries: &[(String, String)]) -> String {
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (key, value) in entries {
        let (section, name) = key.rsplit_once('.').unwrap_or(("core", key));
        match sections.iter_mut().find(|(s, _)| s == section) {
            Some((_, items)) => items.push((name.to_string(), value.clone())),
            None => sections.push((section.to_string(), vec![(name.to_string(), value.clone())])),
        }
    }
    let mut text = String::new();
    for (section, items) in sections {
        match section.split_once('.') {
            Some((name, sub)) => text.push_str(&format!("[{name} \"{sub}\"]\n")),
            None => text.push_str(&format!("[{section}]\n")),
        }
        for (name, value) in items {
            text.push_str(&format!("\t{name} = {value}\n"));
        }
    }
    text
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
    fn config_round_trips() {
        let entries = parse_config("[user]\n\tname = Ann\n[remote \"origin\"]\n\turl = x\n");
        assert_eq!(
            entries,
            vec![
                ("user.name".to_string(), "Ann".to_string()),
                ("remote.origin.url".to_string(), "x".to_string())
            ]
        );
        assert_eq!(parse_config(&render_config(&entries)), entries);
    }

    #[test]
    fn index_paths_escape_newlines() {
        assert_eq!(unescape_path(&escape_path("a\\b\nc")), "a\\b\nc");
    }
}
