//! Walking history as git's revision walk does for `log`, `rev-list` and
//! `shortlog`: from the commits asked for, newest commit date first (ties
//! in the order reached), never into what the excluded commits reach,
//! optionally along first parents only, cut off below `--since`, and with
//! paths, git's default history simplification: a commit that leaves the
//! paths as one of its parents had them is not shown, and of a merge only
//! that parent's side is followed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;

use super::odb::Oid;
use super::repo::{Commit, Repo, Res};

/// What to walk and how.
#[derive(Default)]
pub struct Walk {
    /// Where the walk starts (`log A B`).
    pub include: Vec<Oid>,
    /// What it never enters (`^A`, `A..B`'s `A`).
    pub exclude: Vec<Oid>,
    pub first_parent: bool,
    /// `--since`: older commits are neither shown nor walked through.
    pub since: Option<i64>,
    /// Paths (from the repository's root; a directory stands for all it
    /// holds) the history is simplified to.
    pub paths: Vec<String>,
    /// Whether only the commits' names are wanted (`rev-list` unfiltered):
    /// each is read for its parents and date alone (from the commit-graph,
    /// where there is one), its tree, people and message left unread.
    pub names_only: bool,
}

/// A commit the walk shows, read once.
pub struct Step {
    pub oid: Oid,
    pub commit: Commit,
}

const EXCLUDED: u8 = 1;
const SEEN: u8 = 2;

impl Walk {
    async fn read(&self, repo: &Repo, oid: &str) -> Res<Commit> {
        match self.names_only && self.paths.is_empty() {
            true => repo.commit_links(oid).await.map(|(date, parents)| Commit {
                parents,
                date,
                ..Commit::default()
            }),
            false => repo.commit(oid).await,
        }
    }

    /// The commits shown, in git's default order; `keep` stops the walk
    /// once it says no (`-n` without filters).
    pub async fn run(&self, repo: &Repo, mut keep: impl FnMut(&Step) -> bool) -> Res<Vec<Step>> {
        let mut flags: HashMap<Oid, u8> = HashMap::default();
        let mut queue: BinaryHeap<(i64, Reverse<u64>, Oid)> = BinaryHeap::new();
        let mut reached = 0u64;
        let mut commits: HashMap<Oid, Commit> = HashMap::default();
        let mut trees = Trees::default();
        // The parents each walked commit went on to.
        let mut walked: HashMap<Oid, Vec<Oid>> = HashMap::default();
        for (oids, mark) in [(&self.exclude, EXCLUDED), (&self.include, 0)] {
            for oid in oids {
                let oid = repo.peel(oid).await?;
                let entry = flags.entry(oid.clone()).or_default();
                if *entry & SEEN != 0 {
                    *entry |= mark;
                    continue;
                }
                *entry |= SEEN | mark;
                let commit = self.read(repo, &oid).await?;
                reached += 1;
                queue.push((commit.date, Reverse(reached), oid.clone()));
                commits.insert(oid, commit);
            }
        }
        let mut shown = Vec::new();
        // The walk ends when nothing still queued can be shown.
        let mut live = queue
            .iter()
            .filter(|(_, _, o)| flags[o] & EXCLUDED == 0)
            .count();
        while live > 0 {
            let Some((_, _, oid)) = queue.pop() else {
                break;
            };
            let excluded = flags[&oid] & EXCLUDED != 0;
            if !excluded {
                live -= 1;
            }
            let commit = commits.remove(&oid).expect("queued commits are read");
            let too_old = self.since.is_some_and(|since| commit.date < since);
            let mut parents = commit.parents.clone();
            if self.first_parent {
                parents.truncate(1);
            }
            let mut show = !excluded && !too_old;
            if !self.paths.is_empty() && !excluded {
                let here = trees.entries_at(repo, &commit.tree, &self.paths).await?;
                let mut same = None;
                for parent in &parents {
                    let tree = match commits.get(parent) {
                        Some(c) => c.tree.clone(),
                        None => repo.commit(parent).await?.tree,
                    };
                    if trees.entries_at(repo, &tree, &self.paths).await? == here {
                        same = Some(parent.clone());
                        break;
                    }
                }
                match same {
                    // The paths came from this parent unchanged: only its
                    // side of the history is theirs.
                    Some(parent) => {
                        show = false;
                        parents = vec![parent];
                    }
                    None if parents.is_empty() => show &= here.iter().any(Option::is_some),
                    None => {}
                }
            }
            if !too_old {
                walked.insert(oid.clone(), parents.clone());
                for parent in parents {
                    let entry = flags.entry(parent.clone()).or_default();
                    let was_excluded = *entry & EXCLUDED != 0;
                    if *entry & SEEN != 0 {
                        // Reached again from an excluded commit: excluded,
                        // and so is all it was walked to.
                        if excluded && !was_excluded {
                            let mut pending = vec![parent];
                            while let Some(next) = pending.pop() {
                                let mark = flags.entry(next.clone()).or_default();
                                if *mark & EXCLUDED != 0 {
                                    continue;
                                }
                                *mark |= EXCLUDED;
                                if queue.iter().any(|(_, _, o)| *o == next) {
                                    live -= 1;
                                }
                                pending.extend(walked.get(&next).into_iter().flatten().cloned());
                            }
                        }
                        continue;
                    }
                    *entry |= SEEN | if excluded { EXCLUDED } else { 0 };
                    let parent_commit = self.read(repo, &parent).await?;
                    reached += 1;
                    queue.push((parent_commit.date, Reverse(reached), parent.clone()));
                    commits.insert(parent, parent_commit);
                    if !excluded {
                        live += 1;
                    }
                }
            }
            if show {
                let step = Step { oid, commit };
                if !keep(&step) {
                    shown.push(step);
                    break;
                }
                shown.push(step);
            }
        }
        // A commit shown before the walk found an excluded commit reaching
        // it (clock skew) is not shown after all.
        shown.retain(|s| flags[&s.oid] & EXCLUDED == 0);
        Ok(shown)
    }
}

/// Paths looked up in trees during a walk, each (tree, name) once.
#[derive(Default)]
pub struct Trees {
    found: HashMap<(Oid, String), Option<(u32, Oid)>>,
}

impl Trees {
    /// What each of `paths` is in `tree`: its mode and object, or nothing.
    async fn entries_at(
        &mut self,
        repo: &Repo,
        tree: &str,
        paths: &[String],
    ) -> Res<Vec<Option<(u32, Oid)>>> {
        let mut found = Vec::with_capacity(paths.len());
        for path in paths {
            found.push(self.entry_at(repo, tree, path).await?);
        }
        Ok(found)
    }

    /// What `path` is in `tree`: its mode and object, or nothing.
    pub async fn entry_at(
        &mut self,
        repo: &Repo,
        tree: &str,
        path: &str,
    ) -> Res<Option<(u32, Oid)>> {
        let mut current = (0o40000, tree.to_string());
        for name in path.split('/').filter(|n| !n.is_empty()) {
            if current.0 != 0o40000 {
                return Ok(None);
            }
            let key = (current.1, name.to_string());
            let entry = match self.found.get(&key) {
                Some(entry) => entry.clone(),
                None => {
                    let entry = repo.tree_entry(&key.0, name).await?;
                    self.found.insert(key, entry.clone());
                    entry
                }
            };
            match entry {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        Ok(Some(current))
    }
}
