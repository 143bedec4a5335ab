//! Commands that read history as a whole: `describe`, `shortlog` and
//! `blame`, with git's output.

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::fmt::Write as _;

use super::commands::{failed, Args, Ctx, Spec};
use super::odb::Oid;
use super::repo::Signature;
use super::walk::Trees;
use super::{dates, text, Out, Run};

/// `log --graph`: each entry's lines behind the lanes git draws (`*` the
/// commit, `|` a line of history, `|\` a merge opening a lane, `|/` two
/// lanes meeting). Entries in topological order; `separated` puts a
/// lane-prefixed blank line between them, as the medium format has.
pub fn graph(entries: &[String], parents: &[(Oid, Vec<Oid>)], separated: bool) -> String {
    let mut lanes: Vec<Oid> = Vec::new();
    let mut out = String::new();
    let bars = |n: usize| "| ".repeat(n);
    for (i, (entry, (oid, commit_parents))) in entries.iter().zip(parents).enumerate() {
        if separated && i > 0 {
            let _ = writeln!(out, "{}", bars(lanes.len()));
        }
        let col = match lanes.iter().position(|l| l == oid) {
            Some(col) => col,
            None => {
                lanes.push(oid.clone());
                lanes.len() - 1
            }
        };
        let mut next = lanes.clone();
        next.remove(col);
        let mut at = col;
        for parent in commit_parents {
            if at == col || !next.contains(parent) {
                next.insert(at, parent.clone());
                at += 1;
            }
        }
        let width = lanes.len().max(next.len());
        let mut head: String = (0..lanes.len())
            .map(|j| if j == col { "* " } else { "| " })
            .collect();
        while head.len() < 2 * width {
            head.push(' ');
        }
        let mut lines = entry.trim_end_matches('\n').split('\n');
        let _ = writeln!(out, "{head}{}", lines.next().unwrap_or(""));
        let merge = commit_parents.len() > 1 && next.len() > lanes.len();
        let opening = || {
            let mut line: Vec<char> = bars(next.len()).chars().collect();
            line[2 * col + 1] = '\\';
            line[2 * col + 2] = ' ';
            line.into_iter().collect::<String>()
        };
        let mut rest = lines.peekable();
        if merge {
            let _ = writeln!(out, "{}{}", opening(), rest.next().unwrap_or(""));
        }
        for line in rest {
            let _ = writeln!(out, "{}{line}", bars(next.len()));
        }
        // Two lanes waiting for the same commit meet.
        if let Some(dup) = (1..next.len()).find(|&j| next[..j].contains(&next[j])) {
            let mut line: Vec<char> = bars(next.len()).chars().collect();
            for j in dup..next.len() {
                line[2 * j] = ' ';
                line[2 * j - 1] = '/';
            }
            let _ = writeln!(out, "{}", line.into_iter().collect::<String>());
            next.remove(dup);
        }
        lanes = next;
    }
    out
}

/// A file's lines still to place in `blame`: (our line, its line there).
type Lines = Vec<(usize, usize)>;

impl Ctx<'_> {
    /// `git describe`: the nearest tag, `TAG-N-gHASH` when `HEAD` is N
    /// commits past it.
    pub(super) async fn describe(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "describe",
                flags: &["--tags", "--long", "--always", "--dirty", "--dirty="],
                valued: &[&["--abbrev"], &["--match"]],
            },
        )?;
        let repo = &self.repo;
        let target = args.operands.first().copied().unwrap_or("HEAD");
        let oid = self.revision(target).await?;
        let all_tags = args.has(&["--tags"]);
        let abbrev: Option<usize> = match args.value("--abbrev") {
            Some(given) => Some(given.parse().map_err(|_| {
                Out::error(
                    "error: option `abbrev' expects a numerical value\n".to_string(),
                    129,
                )
            })?),
            None => None,
        };
        let names = repo.abbrev().await;
        let (best, unannotated, any_names) = self
            .nearest_tag(&oid, all_tags, args.value("--match"))
            .await?;
        let dirty = match args.flags_like("--dirty") {
            Some(flag) => {
                let state = self.state().await?;
                let changed = !state.staged().is_empty() || !state.unstaged().is_empty();
                changed.then(|| {
                    flag.strip_prefix("--dirty=")
                        .unwrap_or("-dirty")
                        .to_string()
                })
            }
            None => None,
        };
        let dirty = dirty.unwrap_or_default();
        let described = match best {
            Some((0, name)) if !args.has(&["--long"]) => name,
            // `--abbrev=0`: the closest tag alone.
            Some((_, name)) if abbrev == Some(0) => name,
            Some((depth, name)) => format!("{name}-{depth}-g{}", names.of(&oid, abbrev)),
            None if args.has(&["--always"]) => names.of(&oid, abbrev),
            None if !any_names => {
                return Err(Out::fatal("No names found, cannot describe anything."))
            }
            None if unannotated => {
                return Err(Out::fatal(format!(
                    "No annotated tags can describe '{oid}'.\nHowever, there were unannotated tags: try --tags."
                )))
            }
            None => {
                return Err(Out::fatal(format!(
                    "No tags can describe '{oid}'.\nTry --always, or create some tags."
                )))
            }
        };
        Ok(Out::ok(format!("{described}{dirty}\n")))
    }

    /// The tag `describe` names `target` after, and how many commits
    /// `target` has that it has not, found as git's describe finds it: a
    /// walk from `target`, newest commit first, taking up to ten tagged
    /// commits as candidates, each counting the commits it does not reach;
    /// the fewest wins (the first found on a tie). Also whether tags were
    /// left out for being lightweight, and whether there were any.
    async fn nearest_tag(
        &self,
        target: &str,
        all_tags: bool,
        pattern: Option<&str>,
    ) -> Result<(Option<(usize, String)>, bool, bool), Out> {
        const CANDIDATES: usize = 10;
        const SEEN: u32 = 1;
        let repo = &self.repo;
        // Each tagged commit's best name: annotated over lightweight, the
        // newer of two annotated tags, else the first by name.
        let mut named: HashMap<Oid, (u8, i64, String)> = HashMap::new();
        for name in repo.refs("tags").await {
            if pattern.is_some_and(|p| !text::glob(p, &name)) {
                continue;
            }
            let Some(tag) = repo.tag(&name).await else {
                continue;
            };
            let Ok((kind, body)) = repo.read_object(&tag).await else {
                continue;
            };
            let (prio, date) = match kind.as_str() {
                "tag" => {
                    let text = String::from_utf8_lossy(&body);
                    let tagger = text
                        .lines()
                        .take_while(|l| !l.is_empty())
                        .find_map(|l| l.strip_prefix("tagger "))
                        .map_or(0, |t| Signature::parse(t).time);
                    (2, tagger)
                }
                _ => (1, 0),
            };
            let Ok(commit) = repo.peel(&tag).await else {
                continue;
            };
            if repo.commit(&commit).await.is_err() {
                continue;
            }
            let replace = match named.get(&commit) {
                None => true,
                Some((p, d, _)) => *p < prio || (*p == 2 && prio == 2 && *d < date),
            };
            if replace {
                named.insert(commit, (prio, date, name));
            }
        }
        let usable = |prio: u8| all_tags || prio == 2;
        if let Some((prio, _, name)) = named.get(target) {
            if usable(*prio) {
                return Ok((Some((0, name.clone())), false, true));
            }
        }
        if named.is_empty() {
            return Ok((None, false, false));
        }
        let mut flags: HashMap<Oid, u32> = HashMap::new();
        // Newest first; equal dates in the order they came.
        let mut list: VecDeque<(i64, Oid)> = VecDeque::new();
        let insert = |list: &mut VecDeque<(i64, Oid)>, date: i64, oid: Oid| {
            let at = list
                .iter()
                .position(|(d, _)| *d < date)
                .unwrap_or(list.len());
            list.insert(at, (date, oid));
        };
        let date_of = |oid: Oid| async move {
            repo.commit(&oid)
                .await
                .map(|c| c.committer.time)
                .unwrap_or(0)
        };
        flags.insert(target.to_string(), SEEN);
        insert(
            &mut list,
            date_of(target.to_string()).await,
            target.to_string(),
        );
        // (name, depth, flag, found order)
        let mut matches: Vec<(String, usize, u32, usize)> = Vec::new();
        let (mut annotated, mut unannotated) = (0, false);
        let mut seen_commits = 0usize;
        let mut gave_up_on = None;
        while let Some((date, oid)) = list.pop_front() {
            seen_commits += 1;
            if let Some((prio, _, name)) = named.get(&oid) {
                if !usable(*prio) {
                    unannotated = true;
                } else if matches.len() < CANDIDATES {
                    let flag = 1 << (matches.len() + 1);
                    matches.push((name.clone(), seen_commits - 1, flag, matches.len()));
                    *flags.entry(oid.clone()).or_default() |= flag;
                    if *prio == 2 {
                        annotated += 1;
                    }
                } else {
                    gave_up_on = Some((date, oid));
                    break;
                }
            }
            let here = flags.get(&oid).copied().unwrap_or(0);
            for (_, depth, flag, _) in &mut matches {
                if here & *flag == 0 {
                    *depth += 1;
                }
            }
            if annotated > 0 && list.is_empty() {
                break;
            }
            let commit = repo.commit(&oid).await.map_err(failed)?;
            for parent in commit.parents {
                let mark = flags.entry(parent.clone()).or_default();
                let fresh = *mark & SEEN == 0;
                *mark |= here | SEEN;
                if fresh {
                    let date = date_of(parent.clone()).await;
                    insert(&mut list, date, parent);
                }
            }
        }
        if matches.is_empty() {
            return Ok((None, unannotated, true));
        }
        matches.sort_by_key(|(_, depth, _, order)| (*depth, *order));
        let (name, mut depth, flag, _) = matches.swap_remove(0);
        if let Some((date, oid)) = gave_up_on {
            insert(&mut list, date, oid);
        }
        // The rest of the count: commits still queued that the best
        // candidate does not reach.
        while let Some((_, oid)) = list.pop_front() {
            let here = flags.get(&oid).copied().unwrap_or(0);
            if here & flag != 0 {
                if list
                    .iter()
                    .all(|(_, o)| flags.get(o).copied().unwrap_or(0) & flag != 0)
                {
                    break;
                }
            } else {
                depth += 1;
            }
            let commit = repo.commit(&oid).await.map_err(failed)?;
            for parent in commit.parents {
                let mark = flags.entry(parent.clone()).or_default();
                let fresh = *mark & SEEN == 0;
                *mark |= here | SEEN;
                if fresh {
                    let date = date_of(parent.clone()).await;
                    insert(&mut list, date, parent);
                }
            }
        }
        Ok((Some((depth, name)), unannotated, true))
    }

    /// `git shortlog`: commits grouped by author, or counted (`-s`).
    pub(super) async fn shortlog(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "shortlog",
                flags: &[
                    "-e",
                    "--email",
                    "-n",
                    "--numbered",
                    "-s",
                    "--summary",
                    "--all",
                    "--branches",
                    "--tags",
                    "--remotes",
                    "--first-parent",
                ],
                valued: &[&["--since", "--after"]],
            },
        )?;
        let walk = self.walk_of(&args).await?;
        let steps = walk.run(&self.repo, |_| true).await.map_err(failed)?;
        let email = args.has(&["-e", "--email"]);
        let mut by_author: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for step in steps.iter().rev() {
            let commit = &step.commit;
            let who = if email {
                format!("{} <{}>", commit.author.name, commit.author.email)
            } else {
                commit.author.name.clone()
            };
            by_author
                .entry(who)
                .or_default()
                .push(commit.subject().to_string());
        }
        let mut groups: Vec<(String, Vec<String>)> = by_author.into_iter().collect();
        if args.has(&["-n", "--numbered"]) {
            groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        }
        let mut out = String::new();
        for (who, subjects) in groups {
            if args.has(&["-s", "--summary"]) {
                let _ = writeln!(out, "{:>6}\t{who}", subjects.len());
            } else {
                let _ = writeln!(out, "{who} ({}):", subjects.len());
                for subject in subjects {
                    let _ = writeln!(out, "      {subject}");
                }
                out.push('\n');
            }
        }
        Ok(Out::ok(out))
    }

    /// `git blame FILE`: each line with the commit that last changed it,
    /// followed back through exact renames as git follows them.
    pub(super) async fn blame(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "blame",
                flags: &[],
                valued: &[],
            },
        )?;
        let (revision, path) = match (args.operands.as_slice(), args.paths.first()) {
            ([rev], Some(path)) => (*rev, *path),
            ([], Some(path)) | ([path], None) => ("HEAD", *path),
            ([rev, path], None) => (*rev, *path),
            _ => return Err(Out::error("usage: git blame [<rev>] [--] <file>\n", 129)),
        };
        let repo = &self.repo;
        let path = self.pathspec(path);
        let start = self.revision(revision).await?;
        let mut trees = Trees::default();
        let start_commit = repo.commit(&start).await.map_err(failed)?;
        let Some((_, blob)) = trees
            .entry_at(repo, &start_commit.tree, &path)
            .await
            .map_err(failed)?
        else {
            return Err(Out::fatal(format!("no such path {path} in {revision}")));
        };
        let content =
            String::from_utf8_lossy(&repo.blob(&blob).await.map_err(failed)?).into_owned();
        let lines: Vec<&str> = content.split_inclusive('\n').collect();
        // Each line: (commit, path there, line number there), settled once
        // no parent has it unchanged.
        let mut owner: Vec<Option<(Oid, String, usize)>> = vec![None; lines.len()];
        // Lines still to place, by (commit, path): the blob there, its
        // text, and [(our line, their line)]; taken newest commit first,
        // so a commit reached along two paths is looked at once.
        let mut pending: HashMap<(Oid, String), (Oid, String, Lines)> = HashMap::new();
        let mut queue: BinaryHeap<(i64, Oid, String)> = BinaryHeap::new();
        pending.insert(
            (start.clone(), path.clone()),
            (
                blob,
                content.clone(),
                (0..lines.len()).map(|i| (i, i)).collect(),
            ),
        );
        queue.push((start_commit.committer.time, start.clone(), path.clone()));
        let mut commits: HashMap<Oid, super::repo::Commit> = HashMap::new();
        while let Some((_, oid, at_path)) = queue.pop() {
            let Some((blob_here, text_here, mapping)) =
                pending.remove(&(oid.clone(), at_path.clone()))
            else {
                continue;
            };
            let commit = match commits.remove(&oid) {
                Some(commit) => commit,
                None => repo.commit(&oid).await.map_err(failed)?,
            };
            let mut left = mapping;
            for parent in &commit.parents {
                if left.is_empty() {
                    break;
                }
                let parent_commit = repo.commit(parent).await.map_err(failed)?;
                let found = trees
                    .entry_at(repo, &parent_commit.tree, &at_path)
                    .await
                    .map_err(failed)?;
                let (parent_path, parent_blob) = match found {
                    Some((_, blob)) => (at_path.clone(), blob),
                    None => {
                        // A rename: the same content under another name,
                        // else the most alike of the files this commit
                        // deleted, as git's rename detection pairs them.
                        let here = repo.commit_files(Some(&oid)).await.map_err(failed)?;
                        let there = repo.commit_files(Some(parent)).await.map_err(failed)?;
                        let gone: Vec<(&String, &super::repo::Blob)> = there
                            .iter()
                            .filter(|(p, b)| {
                                !here.contains_key(*p) && matches!(b.mode, 0o100644 | 0o100755)
                            })
                            .collect();
                        let exact = gone.iter().find(|(_, b)| b.oid == blob_here);
                        match exact {
                            Some((p, b)) => ((*p).clone(), b.oid.clone()),
                            None => {
                                let mut sources = Vec::with_capacity(gone.len());
                                for (p, b) in &gone {
                                    let bytes = repo.blob(&b.oid).await.map_err(failed)?;
                                    sources.push(((*p).clone(), bytes));
                                }
                                let Some(from) =
                                    crate::git::diff::rename_source(text_here.as_bytes(), &sources)
                                else {
                                    continue;
                                };
                                let oid = there[&from].oid.clone();
                                (from, oid)
                            }
                        }
                    }
                };
                let key = (parent.clone(), parent_path.clone());
                if parent_blob == blob_here {
                    // Unchanged: every line still to place goes back as it is.
                    let entry = pending
                        .entry(key)
                        .or_insert_with(|| (parent_blob.clone(), text_here.clone(), Vec::new()));
                    entry.2.append(&mut left);
                    queue.push((parent_commit.committer.time, parent.clone(), parent_path));
                    break;
                }
                let parent_text =
                    String::from_utf8_lossy(&repo.blob(&parent_blob).await.map_err(failed)?)
                        .into_owned();
                let same: HashMap<usize, usize> =
                    crate::git::diff::kept_lines(&parent_text, &text_here)
                        .into_iter()
                        .collect();
                let (passed, kept): (Lines, Lines) = left
                    .into_iter()
                    .partition(|(_, here)| same.contains_key(here));
                if !passed.is_empty() {
                    let entry = pending
                        .entry(key)
                        .or_insert_with(|| (parent_blob.clone(), parent_text.clone(), Vec::new()));
                    entry
                        .2
                        .extend(passed.into_iter().map(|(line, here)| (line, same[&here])));
                    queue.push((parent_commit.committer.time, parent.clone(), parent_path));
                }
                left = kept;
            }
            for (line, here) in left {
                owner[line] = Some((oid.clone(), at_path.clone(), here));
            }
            commits.insert(oid, commit);
        }
        let show_names = owner.iter().flatten().any(|(_, p, _)| *p != path);
        let roots: Vec<&Oid> = commits
            .iter()
            .filter(|(_, c)| c.parents.is_empty())
            .map(|(o, _)| o)
            .collect();
        let author_width = owner
            .iter()
            .flatten()
            .map(|(o, _, _)| commits[o].author.name.chars().count())
            .max()
            .unwrap_or(0);
        let path_width = owner
            .iter()
            .flatten()
            .map(|(_, p, _)| p.len())
            .max()
            .unwrap_or(0);
        let number_width = lines.len().to_string().len();
        let hash_len = (repo.abbrev().await.default_len() + 1).min(40);
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            let (oid, origin, _) = owner[i].as_ref().expect("every line has an owner");
            let author: &Signature = &commits[oid].author;
            // git's default length and one more, `^` in its place for a
            // commit the history starts at.
            let hash = if roots.contains(&oid) {
                format!("^{}", &oid[..hash_len - 1])
            } else {
                oid[..hash_len].to_string()
            };
            let name = if show_names {
                format!(" {origin:<path_width$}")
            } else {
                String::new()
            };
            let _ = write!(
                out,
                "{hash}{name} ({:<author_width$} {} {:>number_width$}) {line}",
                author.name,
                dates::iso_date(author.time, &author.zone),
                i + 1
            );
            if !line.ends_with('\n') {
                out.push('\n');
            }
        }
        Ok(Out::ok(out))
    }
}
