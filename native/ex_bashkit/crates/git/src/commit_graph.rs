//! git's commit-graph (`objects/info/commit-graph`, or the split chain in
//! `objects/info/commit-graphs/`), read with gitoxide's `gix-commitgraph`:
//! a commit's parents and date without inflating the commit, as real git
//! reads them. Walks over a long history (`rev-list --count`, `describe`,
//! `--contains`, merge bases) are most of their time in that inflating.
//!
//! git's rules for when it reads the file are kept: not with
//! `core.commitGraph=false`, in a shallow repository, with grafts, or
//! with replace refs. A commit the file does not have (one made since it
//! was written) is read from the object database, so a stale graph is
//! only a slower one.
//!
//! The file's bytes are copied into memory of our own before they are
//! read: a map of the file itself would let a script that truncates it
//! stop the VM (`SIGBUS`).

use std::path::{Path, PathBuf};

use gix_commitgraph::{File, Graph};

use super::io::Io;
use super::odb::{from_hex, to_hex};
use super::repo::Shape;

pub struct CommitGraph(Graph);

impl CommitGraph {
    /// The graph of the object database at `objects`, where there is one
    /// and it reads as git's format.
    pub async fn load(io: &Io, objects: &Path) -> Option<Self> {
        let info = objects.join("info");
        let single = info.join("commit-graph");
        let paths: Vec<PathBuf> = if io.exists(&single).await {
            vec![single]
        } else {
            let dir = info.join("commit-graphs");
            let chain = io.read_file(&dir.join("commit-graph-chain")).await.ok()?;
            let chain = String::from_utf8(chain).ok()?;
            chain
                .lines()
                .map(|hash| from_hex(hash).map(|_| dir.join(format!("graph-{hash}.graph"))))
                .collect::<Option<_>>()?
        };
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let bytes = io.read_file(&path).await.ok()?;
            files.push(File::new(in_memory(&bytes)?, path).ok()?);
        }
        Graph::new(files).ok().map(Self)
    }

    fn commit(&self, oid: &str) -> Option<gix_commitgraph::file::Commit<'_>> {
        let bytes = from_hex(oid)?;
        self.0
            .commit_by_id(gix_hash::oid::try_from_bytes(&bytes).ok()?)
    }

    /// A commit's committer date, if the graph has the commit.
    pub fn date(&self, oid: &str) -> Option<i64> {
        i64::try_from(self.commit(oid)?.committer_timestamp()).ok()
    }

    /// A commit's tree, parents and committer date, if the graph has it.
    pub fn shape(&self, oid: &str) -> Option<Shape> {
        let commit = self.commit(oid)?;
        let date = i64::try_from(commit.committer_timestamp()).ok()?;
        let parents = commit
            .iter_parents()
            .map(|parent| parent.ok().map(|at| to_hex(self.0.id_at(at).as_bytes())))
            .collect::<Option<Vec<_>>>()?;
        let tree = to_hex(commit.root_tree_id().as_bytes());
        Some(Shape {
            tree,
            parents,
            date,
        })
    }
}

/// `bytes` in an anonymous read-only mapping, the form the reader takes.
fn in_memory(bytes: &[u8]) -> Option<memmap2::Mmap> {
    let mut map = memmap2::MmapMut::map_anon(bytes.len().max(1)).ok()?;
    map[..bytes.len()].copy_from_slice(bytes);
    map.make_read_only().ok()
}
