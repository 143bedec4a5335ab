//! `git stash` (push, list, show, apply, pop, drop, clear) in git's own
//! form: a stash is a commit on `refs/stash` whose parents are `HEAD` and
//! a commit of the index, and the list is that ref's reflog, so real git
//! reads our stashes and we read its.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::commands::{failed, overwritten_by_merge, Args, Ctx, Spec};
use super::repo::{index_files, Blob, Files, Head, NULL_OID};
use super::{diff, Out, Run};

/// `stash@{n}` → n.
fn position(name: Option<&str>) -> Result<usize, Out> {
    let Some(name) = name else {
        return Ok(0);
    };
    name.strip_prefix("stash@{")
        .and_then(|r| r.strip_suffix('}'))
        .or(Some(name).filter(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Out::error(format!("error: {name} is not a valid reference\n"), 1))
}

const QUIET: &[&str] = &["-q", "--quiet"];

/// `stash list` and `clear`: no options.
const NOTHING: Spec = Spec {
    command: "stash list",
    flags: &[],
    valued: &[],
};

impl Ctx<'_> {
    pub(super) async fn stash(&self, args: &[String]) -> Run {
        let (verb, rest) = match args.split_first() {
            Some((verb, rest)) if !verb.starts_with('-') => (verb.as_str(), rest),
            _ => ("push", args),
        };
        match verb {
            "push" => self.stash_push(rest).await,
            "list" => {
                Args::parse(rest, &NOTHING)?;
                match rest.first() {
                    Some(revision) => Err(Out::fatal(format!(
                        "not supported by the sandbox's git: stash list {revision}"
                    ))),
                    None => self.stash_list().await,
                }
            }
            "show" => self.stash_show(rest).await,
            "apply" => self.stash_apply(rest, false).await,
            "pop" => self.stash_apply(rest, true).await,
            "drop" => {
                let args = Args::parse(
                    rest,
                    &Spec {
                        command: "stash drop",
                        flags: QUIET,
                        valued: &[],
                    },
                )?;
                let n = position(args.operands.first().copied())?;
                self.stash_drop(n, args.has(&["-q", "--quiet"])).await
            }
            "clear" if !rest.is_empty() => Err(Out::fatal(
                "git stash clear with arguments is unimplemented",
            )),
            "clear" => {
                self.repo.delete_full_ref("refs/stash").await.map_err(failed)?;
                Ok(Out::ok(""))
            }
            "save" | "branch" | "create" | "store" => Err(Out::fatal(format!(
                "not supported by the sandbox's git: stash {verb}"
            ))),
            other => Err(Out::error(
                format!("error: unknown subcommand: `{other}'\nusage: git stash list | show | drop | pop | apply | push | clear\n"),
                129,
            )),
        }
    }

    /// The stash list: newest first, each `(stash commit, message)`.
    async fn stashes(&self) -> Vec<(String, String)> {
        let log = self
            .repo
            .state_file("logs/refs/stash")
            .await
            .unwrap_or_default();
        let mut entries: Vec<(String, String)> = log
            .lines()
            .filter_map(|line| {
                let (head, message) = line.split_once('\t')?;
                let new = head.split(' ').nth(1)?;
                Some((new.to_string(), message.to_string()))
            })
            .collect();
        entries.reverse();
        entries
    }

    async fn stash_push(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "stash push",
                flags: QUIET,
                valued: &[&["-m", "--message"]],
            },
        )?;
        if let Some(spec) = args.operands.iter().chain(&args.paths).next() {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: stash push with a pathspec ({spec})"
            )));
        }
        let repo = &self.repo;
        let state = self.state().await?;
        if !state.unmerged.is_empty() {
            return Err(Out::error(
                "error: could not write index\nfatal: Cannot save the current index state\n",
                128,
            ));
        }
        let Some(head) = state.head.clone() else {
            return Err(Out::error("You do not have the initial commit yet\n", 1));
        };
        if state.staged().is_empty() && state.unstaged().is_empty() {
            return Ok(Out::ok("No local changes to save\n"));
        }
        let branch = match repo.head().await {
            Head::Branch(branch) => branch,
            Head::Detached(_) => "(no branch)".to_string(),
        };
        let subject = repo
            .commit(&head)
            .await
            .map_err(failed)?
            .subject()
            .to_string();
        let base = format!("{branch}: {} {subject}", self.repo.short(&head).await);
        let index_files = index_files(&state.index);
        let index_tree = repo.write_tree(&index_files).await.map_err(failed)?;
        let index_commit = self
            .write_commit(
                &index_tree,
                std::slice::from_ref(&head),
                &format!("index on {base}\n"),
                None,
            )
            .await?;
        // The work tree's tracked files as they are, stored as blobs.
        let mut work_files = Files::new();
        for (path, entry) in &state.index {
            if entry.not_checked() {
                work_files.insert(path.clone(), entry.blob.clone());
                continue;
            }
            match state.work_blobs.get(path) {
                Some(blob) if *blob == entry.blob => {
                    work_files.insert(path.clone(), blob.clone());
                }
                Some(_) => {
                    let staged = repo.stage(path).await.map_err(failed)?;
                    work_files.insert(path.clone(), staged.blob);
                }
                None => {}
            }
        }
        let work_tree = repo.write_tree(&work_files).await.map_err(failed)?;
        let message = match args.value("-m") {
            Some(message) => format!("On {branch}: {message}"),
            None => format!("WIP on {base}"),
        };
        // git writes this one message without a final newline.
        let stash = self
            .write_commit(&work_tree, &[head.clone(), index_commit], &message, None)
            .await?;
        let previous = repo.read_ref("refs/stash").await;
        repo.write_state_file("refs/stash", &format!("{stash}\n"))
            .await
            .map_err(failed)?;
        repo.log_update("refs/stash", previous.as_deref(), &stash, &message)
            .await
            .map_err(failed)?;
        // Back to HEAD, tracked files only.
        let target = state.head_files.clone();
        self.reset_tracked(&state, &target).await?;
        if args.has(&["-q", "--quiet"]) {
            return Ok(Out::ok(""));
        }
        Ok(Out::ok(format!(
            "Saved working directory and index state {message}\n"
        )))
    }

    /// Work tree and index to `target`, for the paths the index or
    /// `target` track; untracked files stay.
    async fn reset_tracked(
        &self,
        state: &super::commands::State,
        target: &Files,
    ) -> Result<(), Out> {
        let repo = &self.repo;
        let mut index = super::repo::Index::new();
        for path in state.index.keys() {
            if !target.contains_key(path) && state.work.contains_key(path) {
                repo.remove_file(path).await.map_err(failed)?;
            }
        }
        for (path, blob) in target {
            let entry = match state.index.get(path) {
                Some(entry) if entry.blob == *blob && state.work_blobs.get(path) == Some(blob) => {
                    entry.clone()
                }
                _ => repo.checkout_file(path, blob).await.map_err(failed)?,
            };
            index.insert(path.clone(), entry);
        }
        repo.save_index(&index).await.map_err(failed)
    }

    async fn stash_list(&self) -> Run {
        let mut out = String::new();
        for (i, (_, message)) in self.stashes().await.iter().enumerate() {
            let _ = writeln!(out, "stash@{{{i}}}: {message}");
        }
        Ok(Out::ok(out))
    }

    async fn stash_entry(&self, n: usize) -> Result<String, Out> {
        self.stashes()
            .await
            .get(n)
            .map(|(oid, _)| oid.clone())
            .ok_or_else(|| match n {
                0 => Out::error("error: No stash entries found.\n", 1),
                n => Out::error(
                    format!("error: stash@{{{n}}} is not a valid reference\n"),
                    1,
                ),
            })
    }

    async fn stash_show(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "stash show",
                flags: &["-p", "--patch", "--stat"],
                valued: &[],
            },
        )?;
        let stash = self
            .stash_entry(position(args.operands.first().copied())?)
            .await?;
        let commit = self.repo.commit(&stash).await.map_err(failed)?;
        let changes = self.commit_changes(&commit, &[]).await?;
        if args.has(&["-p", "--patch"]) {
            let abbrev = self.repo.abbrev().await;
            let context = self.context(&args).await?;
            return Ok(Out::ok(
                changes
                    .iter()
                    .map(|c| c.patch(&abbrev, context))
                    .collect::<String>(),
            ));
        }
        Ok(Out::ok(diff::stat(&changes)))
    }

    async fn stash_apply(&self, args: &[String], pop: bool) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: if pop { "stash pop" } else { "stash apply" },
                flags: QUIET,
                valued: &[],
            },
        )?;
        let n = position(args.operands.first().copied())?;
        let stash = self.stash_entry(n).await?;
        let repo = &self.repo;
        let commit = repo.commit(&stash).await.map_err(failed)?;
        let base = repo
            .commit_files(commit.parents.first().map(String::as_str))
            .await
            .map_err(failed)?;
        let stashed = repo.tree_files(&commit.tree).await.map_err(failed)?;
        let state = self.state().await?;
        let ours = index_files(&state.index);
        let mut paths: BTreeSet<&String> = base.keys().collect();
        paths.extend(stashed.keys());
        let changed: Vec<&String> = paths
            .into_iter()
            .filter(|p| base.get(*p) != stashed.get(*p))
            .collect();
        // Local changes to a path the stash changes stop it first.
        let dirty: Vec<&String> = changed
            .iter()
            .copied()
            .filter(|p| state.changed_in_work(p))
            .collect();
        if !dirty.is_empty() {
            return Err(overwritten_by_merge(&dirty, 1));
        }
        let mut index = state.index.clone();
        let mut conflicts = Vec::new();
        let mut notes = String::new();
        for path in &changed {
            let (b, o, t) = (base.get(*path), ours.get(*path), stashed.get(*path));
            let merged: Option<Blob> = if b == o || o == t {
                t.cloned()
            } else if let (Some(o), Some(t)) = (o, t) {
                let texts = (
                    self.text_of(b).await?,
                    self.text_of(Some(o)).await?,
                    self.text_of(Some(t)).await?,
                );
                let _ = writeln!(notes, "Auto-merging {path}");
                match texts {
                    (Some(bt), Some(ot), Some(tt)) => {
                        let (text, conflicted) = super::merge::text(
                            &bt,
                            &ot,
                            &tt,
                            "Updated upstream",
                            "Stashed changes",
                        );
                        let oid = repo
                            .write_object("blob", text.as_bytes())
                            .await
                            .map_err(failed)?;
                        if conflicted {
                            let _ = writeln!(notes, "CONFLICT (content): Merge conflict in {path}");
                            conflicts.push(path.to_string());
                        }
                        Some(Blob { mode: t.mode, oid })
                    }
                    _ => {
                        let _ = writeln!(notes, "CONFLICT (content): Merge conflict in {path}");
                        conflicts.push(path.to_string());
                        Some(o.clone())
                    }
                }
            } else {
                // Deleted on one side, changed on the other: keep the change.
                o.or(t).cloned()
            };
            match merged {
                Some(blob) => {
                    let entry = repo.checkout_file(path, &blob).await.map_err(failed)?;
                    // New files are staged again; changes to tracked ones
                    // come back unstaged, as git applies a stash.
                    if !ours.contains_key(*path) || conflicts.iter().any(|c| c == *path) {
                        index.insert(path.to_string(), entry);
                    } else if let Some(existing) = index.get_mut(*path) {
                        if existing.blob == blob {
                            *existing = entry;
                        }
                    }
                }
                None => {
                    repo.remove_file(path).await.map_err(failed)?;
                    index.remove(*path);
                }
            }
        }
        repo.save_index(&index).await.map_err(failed)?;
        if !conflicts.is_empty() {
            if pop {
                notes.push_str("The stash entry is kept in case you need it again.\n");
            }
            return Err(Out {
                stdout: notes,
                stderr: String::new(),
                code: 1,
            });
        }
        let quiet = args.has(&["-q", "--quiet"]);
        let mut out = notes;
        if !quiet {
            out.push_str(&self.long_status(&self.state().await?).await?);
        }
        if pop {
            let dropped = self.stash_drop(n, quiet).await?;
            out.push_str(&dropped.stdout);
        }
        Ok(Out::ok(out))
    }

    /// A blob's text (`""` for none), `None` when it is not UTF-8.
    async fn text_of(&self, blob: Option<&Blob>) -> Result<Option<String>, Out> {
        match blob {
            Some(blob) => {
                let bytes = self.repo.blob(&blob.oid).await.map_err(failed)?;
                Ok(String::from_utf8(bytes).ok().filter(|t| !t.contains('\0')))
            }
            None => Ok(Some(String::new())),
        }
    }

    async fn stash_drop(&self, n: usize, quiet: bool) -> Run {
        let stash = self.stash_entry(n).await?;
        let repo = &self.repo;
        let log = repo.state_file("logs/refs/stash").await.unwrap_or_default();
        let mut lines: Vec<&str> = log.lines().collect();
        let at = lines.len() - 1 - n;
        lines.remove(at);
        // The entry after a dropped one now follows the one before it.
        let mut text = String::new();
        let mut previous = NULL_OID.to_string();
        for line in &lines {
            let mut fields = line.splitn(3, ' ');
            let (_, new, rest) = (
                fields.next(),
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
            );
            let _ = writeln!(text, "{previous} {new} {rest}");
            previous = new.to_string();
        }
        if lines.is_empty() {
            repo.delete_full_ref("refs/stash").await.map_err(failed)?;
        } else {
            repo.write_state_file("logs/refs/stash", &text)
                .await
                .map_err(failed)?;
            repo.write_state_file("refs/stash", &format!("{previous}\n"))
                .await
                .map_err(failed)?;
        }
        if quiet {
            return Ok(Out::ok(""));
        }
        Ok(Out::ok(format!("Dropped refs/stash@{{{n}}} ({stash})\n")))
    }
}
