//! `merge` (three-way, `--abort`), the commit that concludes it, and `pull`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn merge(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "merge",
                // No editor is ever opened here: `--no-edit` is the default.
                flags: &[
                    "--abort",
                    "--ff",
                    "--no-ff",
                    "--ff-only",
                    "--no-edit",
                    "-q",
                    "--quiet",
                ],
                valued: &[&["-m", "--message"]],
            },
        )?;
        let merged = self.merge_with(&args).await;
        // `-q`: the report goes, what went wrong stays, and so does
        // merge-ort's `Auto-merging PATH` (git prints it whatever the
        // verbosity).
        match (merged, args.has(&["-q", "--quiet"])) {
            (Ok(out), true) => {
                let kept: String = out
                    .stdout
                    .split_inclusive('\n')
                    .filter(|line| line.starts_with("Auto-merging "))
                    .collect();
                Ok(Out::ok(kept).with_stderr(out.stderr))
            }
            (merged, _) => merged,
        }
    }

    async fn merge_with(&self, args: &Args<'_>) -> Run {
        if let Some(more) = args.operands.get(1) {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: merging more than one branch ({more})"
            )));
        }
        let repo = &self.repo;
        if args.has(&["--abort"]) {
            return self.merge_abort().await;
        }
        // git's order: conflicts first, then an operation still open.
        if !repo.unmerged().is_empty() {
            return Err(Out::error(
                "error: Merging is not possible because you have unmerged files.\n\
                 hint: Fix them up in the work tree, and then use 'git add/rm <file>'\n\
                 hint: as appropriate to mark resolution and make a commit.\n\
                 fatal: Exiting because of an unresolved conflict.\n",
                128,
            ));
        }
        for (file, what) in [("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick")] {
            if repo.state_file(file).await.is_some() {
                return Err(Out::fatal(format!(
                    "You have not concluded your {what} ({file} exists).\n\
                     Please, commit your changes before you merge."
                )));
            }
        }
        let Some(target) = args.operands.first() else {
            return Err(Out::fatal("No remote for the current branch."));
        };
        if self.revision(target).await.is_err() {
            let mut message = format!("merge: {target} - not something we can merge\n");
            let similar: Vec<String> = repo
                .refs("remotes")
                .await
                .into_iter()
                .filter(|r| r.rsplit_once('/').is_some_and(|(_, name)| name == *target))
                .collect();
            if !similar.is_empty() {
                message.push_str(if similar.len() == 1 {
                    "\nDid you mean this?\n"
                } else {
                    "\nDid you mean one of these?\n"
                });
                for name in similar {
                    let _ = writeln!(message, "\t{name}");
                }
            }
            return Err(Out::error(message, 1));
        }
        let theirs = self.revision(target).await?;
        let Some(ours) = repo.head_commit().await else {
            return Err(Out::fatal(
                "the sandbox's git cannot merge into a branch with no commits",
            ));
        };
        if repo.ancestors(&ours).await.contains(&theirs) {
            return Ok(Out::ok("Already up to date.\n"));
        }
        let before = repo.commit_files(Some(&ours)).await.map_err(failed)?;
        let fast_forward = repo.ancestors(&theirs).await.contains(&ours);
        if fast_forward && !args.has(&["--no-ff"]) {
            let after = repo.commit_files(Some(&theirs)).await.map_err(failed)?;
            self.move_to(&after).await?;
            repo.advance_head(&theirs, &format!("merge {target}: Fast-forward"))
                .await
                .map_err(failed)?;
            let changes = self.changes(&before, &after, None, &[]).await?;
            return Ok(Out::ok(format!(
                "Updating {}..{}\nFast-forward\n{}{}",
                self.repo.short(&ours).await,
                self.repo.short(&theirs).await,
                diff::stat(&changes),
                Self::mode_summary(&changes)
            )));
        }
        if args.has(&["--ff-only"]) {
            return Err(Out::fatal("Not possible to fast-forward, aborting."));
        }
        let Some(base) = crate::merge::base(repo, &ours, &theirs).await else {
            return Err(Out::fatal("refusing to merge unrelated histories"));
        };
        let base_files = repo.commit_files(Some(&base)).await.map_err(failed)?;
        let their_files = repo.commit_files(Some(&theirs)).await.map_err(failed)?;
        let state = self.state().await?;
        // merge-ort merges only onto an index that matches HEAD.
        let staged: Vec<&String> = before
            .keys()
            .chain(state.index.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|p| state.index.get(*p).map(|e| &e.blob) != before.get(*p))
            .collect();
        if !staged.is_empty() {
            let names: Vec<&str> = staged.iter().map(|p| p.as_str()).collect();
            return Err(Out::error(
                format!(
                    "error: Your local changes to the following files would be overwritten by merge:\n  {}\n\
                     Merge with strategy ort failed.\n",
                    names.join(" ")
                ),
                2,
            ));
        }
        let merged = self
            .three_way(&base_files, &before, &their_files, target)
            .await?;
        let Merged {
            result,
            worktree,
            conflicted,
            ..
        } = &merged;
        let mut notes = merged.notes.clone();
        // Local changes in the way stop the merge before it touches anything.
        let touched: Vec<&String> = before
            .keys()
            .chain(result.keys())
            .chain(worktree.keys())
            .filter(|p| before.get(*p) != result.get(*p) || worktree.contains_key(*p))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|p| {
                state.index.get(*p).map(|e| &e.blob) != before.get(*p) || state.changed_in_work(p)
            })
            .collect();
        if !touched.is_empty() {
            return Err(overwritten_by_merge(&touched, 2));
        }
        let mut index = state.index.clone();
        self.apply_merged(&mut index, &before, &merged).await?;
        let current = self.branch_name().await;
        let message = match args.value("-m") {
            Some(message) => text::clean_message(message),
            None => {
                let what = if repo.branch(target).await.is_some() {
                    format!("branch '{target}'")
                } else if repo
                    .read_ref(&format!("refs/remotes/{target}"))
                    .await
                    .is_some()
                {
                    format!("remote-tracking branch '{target}'")
                } else {
                    format!("commit '{target}'")
                };
                match current.as_deref() {
                    Some("main" | "master") | None => format!("Merge {what}\n"),
                    Some(branch) => format!("Merge {what} into {branch}\n"),
                }
            }
        };
        if !conflicted.is_empty() {
            self.stop_on_conflicts(index, &merged).await?;
            repo.write_state_file("MERGE_HEAD", &format!("{theirs}\n"))
                .await
                .map_err(failed)?;
            repo.write_state_file("MERGE_MSG", &with_conflicts(&message, conflicted))
                .await
                .map_err(failed)?;
            repo.write_state_file("MERGE_MODE", "")
                .await
                .map_err(failed)?;
            repo.write_state_file("ORIG_HEAD", &format!("{ours}\n"))
                .await
                .map_err(failed)?;
            notes.push_str("Automatic merge failed; fix conflicts and then commit the result.\n");
            return Err(Out {
                stdout: notes,
                stderr: String::new(),
                code: 1,
            });
        }
        repo.save_index(&index).await.map_err(failed)?;
        let tree = repo.write_tree(result).await.map_err(failed)?;
        let oid = self
            .write_commit(&tree, &[ours.clone(), theirs.clone()], &message, None)
            .await?;
        repo.write_state_file("ORIG_HEAD", &format!("{ours}\n"))
            .await
            .map_err(failed)?;
        repo.advance_head(
            &oid,
            &format!("merge {target}: Merge made by the 'ort' strategy."),
        )
        .await
        .map_err(failed)?;
        let changes = self.changes(&before, result, None, &[]).await?;
        Ok(Out::ok(format!(
            "{notes}Merge made by the 'ort' strategy.\n{}{}",
            diff::stat(&changes),
            Self::mode_summary(&changes)
        )))
    }

    /// A three-way merge of whole trees' files, as `merge` makes it: each
    /// path changed on one side only takes that side; changed on both,
    /// its lines merged (a conflict leaves markers for the work tree and
    /// the three stages); changed on one side and deleted on the other, a
    /// conflict. `target` names their side in messages and markers.
    pub(super) async fn three_way(
        &self,
        base: &Files,
        ours: &Files,
        theirs: &Files,
        target: &str,
    ) -> Result<Merged, Out> {
        let repo = &self.repo;
        let (base, ours, theirs, renamed) = self.follow_renames(base, ours, theirs).await?;
        let (base, ours, theirs) = (&base, &ours, &theirs);
        let mut paths: BTreeSet<&String> = base.keys().collect();
        paths.extend(ours.keys());
        paths.extend(theirs.keys());
        // Every path's outcome: merged blob (None: deleted), or a conflict.
        let mut result: Files = ours.clone();
        let mut conflicts: Vec<(String, u8, Blob)> = Vec::new();
        let mut worktree: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut notes = String::new();
        let mut conflicted = Vec::new();
        for path in paths {
            let (b, o, t) = (base.get(path), ours.get(path), theirs.get(path));
            if o == t || b == t {
                continue;
            }
            if b == o {
                match t {
                    Some(blob) => result.insert(path.clone(), blob.clone()),
                    None => result.remove(path),
                };
                continue;
            }
            match (o, t) {
                (Some(o), Some(t)) => {
                    let _ = writeln!(notes, "Auto-merging {path}");
                    let base_text = match b {
                        Some(b) => repo.blob(&b.oid).await.map_err(failed)?,
                        None => Vec::new(),
                    };
                    let mine = repo.blob(&o.oid).await.map_err(failed)?;
                    let other = repo.blob(&t.oid).await.map_err(failed)?;
                    let texts = (
                        String::from_utf8(base_text),
                        String::from_utf8(mine.clone()),
                        String::from_utf8(other),
                    );
                    // A file renamed on one side is named with its path on
                    // each, as merge-ort names it.
                    let (mine_label, other_label) = match renamed.get(path) {
                        Some((o, t)) => (format!("HEAD:{o}"), format!("{target}:{t}")),
                        None => ("HEAD".to_string(), target.to_string()),
                    };
                    let merged = match texts {
                        (Ok(bt), Ok(mt), Ok(tt)) if !mt.contains('\0') && !tt.contains('\0') => {
                            Some(crate::merge::text(&bt, &mt, &tt, &mine_label, &other_label))
                        }
                        _ => None,
                    };
                    let mode = match b {
                        Some(b) if b.mode == o.mode => t.mode,
                        _ => o.mode,
                    };
                    match merged {
                        Some((text, false)) => {
                            let oid = repo
                                .write_object("blob", text.as_bytes())
                                .await
                                .map_err(failed)?;
                            result.insert(path.clone(), Blob { mode, oid });
                        }
                        other => {
                            let kind = if b.is_none() { "add/add" } else { "content" };
                            if other.is_none() {
                                let _ = writeln!(
                                    notes,
                                    "warning: Cannot merge binary files: {path} (HEAD vs. {target})"
                                );
                            }
                            let _ = writeln!(notes, "CONFLICT ({kind}): Merge conflict in {path}");
                            let text = other.map_or(mine, |(text, _)| text.into_bytes());
                            worktree.insert(path.clone(), text);
                            if let Some(b) = b {
                                conflicts.push((path.clone(), 1, b.clone()));
                            }
                            conflicts.push((path.clone(), 2, o.clone()));
                            conflicts.push((path.clone(), 3, t.clone()));
                            result.remove(path);
                            conflicted.push(path.clone());
                        }
                    }
                }
                (kept, _) => {
                    // Changed on one side, deleted on the other.
                    let (deleted_in, changed_in, version) = match kept {
                        Some(_) => (target.to_string(), "HEAD".to_string(), "HEAD"),
                        None => ("HEAD".to_string(), target.to_string(), target),
                    };
                    let _ = writeln!(
                        notes,
                        "CONFLICT (modify/delete): {path} deleted in {deleted_in} and modified in {changed_in}.  Version {version} of {path} left in tree."
                    );
                    if let Some(b) = b {
                        conflicts.push((path.clone(), 1, b.clone()));
                    }
                    if let Some(o) = o {
                        conflicts.push((path.clone(), 2, o.clone()));
                    }
                    if let Some(t) = t {
                        conflicts.push((path.clone(), 3, t.clone()));
                    }
                    let kept = o.or(t).expect("one side kept it");
                    worktree.insert(path.clone(), repo.blob(&kept.oid).await.map_err(failed)?);
                    result.remove(path);
                    conflicted.push(path.clone());
                }
            }
        }
        Ok(Merged {
            result,
            conflicts,
            worktree,
            notes,
            conflicted,
        })
    }

    /// Takes a merge's cleanly merged paths (those that differ from
    /// `before`) into the work tree and `index`; conflicted ones are left
    /// to `stop_on_conflicts`.
    pub(super) async fn apply_merged(
        &self,
        index: &mut Index,
        before: &Files,
        merged: &Merged,
    ) -> Result<(), Out> {
        let result = &merged.result;
        for path in before.keys().chain(result.keys()).collect::<BTreeSet<_>>() {
            if merged.worktree.contains_key(path) || before.get(path) == result.get(path) {
                continue;
            }
            self.put(index, path, result.get(path)).await?;
        }
        Ok(())
    }

    /// `path` as `blob` in the work tree and `index`, or gone from both.
    pub(super) async fn put(
        &self,
        index: &mut Index,
        path: &String,
        blob: Option<&Blob>,
    ) -> Result<(), Out> {
        let repo = &self.repo;
        match blob {
            Some(blob) => {
                let entry = repo.checkout_file(path, blob).await.map_err(failed)?;
                index.insert(path.clone(), entry);
            }
            None => {
                repo.remove_file(path).await.map_err(failed)?;
                index.remove(path);
            }
        }
        Ok(())
    }

    /// Leaves a merge stopped on its conflicts as git leaves it: each
    /// conflicted path's markers in the work tree and its stages in the
    /// index, and `AUTO_MERGE` naming the tree of what the work tree now
    /// holds (what `git diff AUTO_MERGE` compares with).
    pub(super) async fn stop_on_conflicts(
        &self,
        mut index: Index,
        merged: &Merged,
    ) -> Result<(), Out> {
        let repo = &self.repo;
        let mut shown = merged.result.clone();
        for (path, text) in &merged.worktree {
            let full = repo.root.join(path);
            if let Some(parent) = full.parent() {
                repo.fs
                    .mkdir(parent, true)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
            }
            repo.fs
                .write_file(&full, text)
                .await
                .map_err(|e| failed(e.to_string()))?;
            index.remove(path);
            let mode = merged
                .conflicts
                .iter()
                .filter(|(p, stage, _)| p == path && *stage > 1)
                .map(|(_, _, blob)| blob.mode)
                .next()
                .unwrap_or(0o100644);
            let oid = repo.write_object("blob", text).await.map_err(failed)?;
            shown.insert(path.clone(), Blob { mode, oid });
        }
        repo.set_unmerged(merged.conflicts.clone());
        repo.save_index(&index).await.map_err(failed)?;
        self.write_auto_merge(&shown).await
    }

    /// `AUTO_MERGE`: the tree of a merge's result as the work tree has it.
    pub(super) async fn write_auto_merge(&self, files: &Files) -> Result<(), Out> {
        let tree = self.repo.write_tree(files).await.map_err(failed)?;
        self.repo
            .write_state_file("AUTO_MERGE", &format!("{tree}\n"))
            .await
            .map_err(failed)
    }

    /// Writes a commit object: the author given (who, when) or the
    /// environment's, the committer always the environment's.
    pub(crate) async fn write_commit(
        &self,
        tree: &str,
        parents: &[Oid],
        message: &str,
        author: Option<(String, String)>,
    ) -> Result<Oid, Out> {
        let repo = &self.repo;
        let (author, authored) = match author {
            Some(given) => given,
            None => repo.identity("AUTHOR").await,
        };
        let (committer, committed) = repo.identity("COMMITTER").await;
        let mut body = format!("tree {tree}\n");
        for parent in parents {
            let _ = writeln!(body, "parent {parent}");
        }
        let _ = write!(
            body,
            "author {author} {authored}\ncommitter {committer} {committed}\n\n{message}"
        );
        repo.write_object("commit", body.as_bytes())
            .await
            .map_err(failed)
    }

    /// `git merge --abort`: back to `HEAD`, the merge's files gone.
    pub(super) async fn merge_abort(&self) -> Run {
        if self.repo.state_file("MERGE_HEAD").await.is_none() {
            return Err(Out::fatal(
                "There is no merge to abort (MERGE_HEAD missing).",
            ));
        }
        self.reset_merge_to_head().await?;
        Ok(Out::ok(""))
    }

    /// Back to `HEAD` as `git reset --merge HEAD` goes (how git aborts a
    /// merge, cherry-pick or revert): conflicted paths and staged changes
    /// return to `HEAD`'s, while a file changed only in the work tree keeps
    /// its changes; a staged file changed again since is refused before
    /// anything is written. The waiting operation's files go too.
    pub(super) async fn reset_merge_to_head(&self) -> Result<(), Out> {
        let repo = &self.repo;
        let state = self.state().await?;
        let target = &state.head_files;
        let paths: BTreeSet<&String> = state
            .index
            .keys()
            .chain(state.unmerged.keys())
            .chain(target.keys())
            .collect();
        let mut back = Vec::new();
        for path in paths {
            let indexed = state.index.get(path).map(|e| &e.blob);
            let conflicted = state.unmerged.contains_key(path);
            if !conflicted && indexed == target.get(path) {
                continue;
            }
            if !conflicted && indexed.is_some() && state.work_blobs.get(path) != indexed {
                return Err(Out::error(
                    format!(
                        "error: Entry '{path}' not uptodate. Cannot merge.\n\
                         fatal: Could not reset index file to revision 'HEAD'.\n"
                    ),
                    128,
                ));
            }
            back.push(path);
        }
        let mut index = state.index.clone();
        for path in back {
            self.put(&mut index, path, target.get(path)).await?;
        }
        repo.set_unmerged(Vec::new());
        repo.save_index(&index).await.map_err(failed)?;
        repo.clear_operation_state().await;
        Ok(())
    }

    /// git's merge follows renames: a file one side renamed takes the
    /// other side's edits of it. Here the base's and the other side's
    /// copies of such a file are named by its new path before the paths
    /// are merged (the returned map gives each such path's name on ours
    /// and theirs, for conflict markers). What a rename makes harder —
    /// both sides renaming one file differently, a file renamed on one
    /// side and deleted or re-added on the other, files the other side
    /// added to a directory one side moved away (git's directory
    /// renames) — is refused before anything is written.
    async fn follow_renames(
        &self,
        base: &Files,
        ours: &Files,
        theirs: &Files,
    ) -> Result<(Files, Files, Files, Renamed), Out> {
        let renames = |side: &Files| {
            let side = side.clone();
            async move {
                let changes = self.changes(base, &side, None, &[]).await?;
                Ok::<_, Out>(
                    changes
                        .into_iter()
                        .filter_map(|c| Some((c.from?, c.path)))
                        .collect::<Vec<_>>(),
                )
            }
        };
        let (ours_renames, theirs_renames) = (renames(ours).await?, renames(theirs).await?);
        let (mut base2, mut ours2, mut theirs2) = (base.clone(), ours.clone(), theirs.clone());
        let mut renamed = Renamed::new();
        let parent = |path: &str| path.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
        for (by_ours, done, side, other, other_done) in [
            (true, &ours_renames, ours, theirs, &theirs_renames),
            (false, &theirs_renames, theirs, ours, &ours_renames),
        ] {
            for (from, to) in done {
                let refused = || {
                    Out::fatal(format!(
                        "not supported by the sandbox's git: a merge across renames ({from} => {to})"
                    ))
                };
                let dir = parent(from);
                // A directory this side emptied by moving it elsewhere.
                let moved_away = dir != parent(to) && !side.keys().any(|path| parent(path) == dir);
                if moved_away
                    && other
                        .keys()
                        .any(|path| !base.contains_key(path) && parent(path) == dir)
                {
                    return Err(refused());
                }
                if other.get(from) == base.get(from) {
                    // Left alone there: the paths' merge renames it.
                    continue;
                }
                if let Some((_, other_to)) = other_done.iter().find(|(f, _)| f == from) {
                    if other_to == to && side.get(to) == other.get(to) {
                        continue;
                    }
                    return Err(refused());
                }
                let (Some(edited), Some(original)) = (other.get(from), base.get(from)) else {
                    return Err(refused());
                };
                if other.contains_key(to) {
                    return Err(refused());
                }
                base2.remove(from);
                base2.insert(to.clone(), original.clone());
                let other2 = if by_ours { &mut theirs2 } else { &mut ours2 };
                other2.remove(from);
                other2.insert(to.clone(), edited.clone());
                let names = if by_ours {
                    (to.clone(), from.clone())
                } else {
                    (from.clone(), to.clone())
                };
                renamed.insert(to.clone(), names);
            }
        }
        Ok((base2, ours2, theirs2, renamed))
    }

    /// `create mode`/`delete mode`/`mode change` lines, as `commit` and
    /// `merge` print them after the stat.
    pub(crate) fn mode_summary(changes: &[Change]) -> String {
        let mut out = String::new();
        for change in changes {
            match (&change.old, &change.new) {
                _ if change.from.is_some() => {
                    let _ = writeln!(out, " rename {} ({}%)", change.name(), change.similarity);
                }
                (None, Some((blob, _))) => {
                    let _ = writeln!(out, " create mode {:o} {}", blob.mode, change.shown_path());
                }
                (Some((blob, _)), None) => {
                    let _ = writeln!(out, " delete mode {:o} {}", blob.mode, change.shown_path());
                }
                (Some((old, _)), Some((new, _))) if old.mode != new.mode => {
                    let _ = writeln!(
                        out,
                        " mode change {:o} => {:o} {}",
                        old.mode,
                        new.mode,
                        change.shown_path()
                    );
                }
                _ => {}
            }
        }
        out
    }

    /// `fetch`, then `merge` of the upstream branch, as git pulls.
    #[cfg(feature = "network")]
    pub(super) async fn pull(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "pull",
                flags: &[
                    "-q",
                    "--quiet",
                    "--no-rebase",
                    "--ff",
                    "--no-ff",
                    "--ff-only",
                ],
                valued: &[],
            },
        )?;
        let repo = &self.repo;
        // This git merges; a rebase asked for in the config is refused too.
        if repo
            .config_value("pull.rebase")
            .await
            .is_some_and(|v| v != "false")
            && !args.has(&["--no-rebase"])
        {
            return Err(Out::fatal(
                "not supported by the sandbox's git: pull.rebase (this git merges; give --no-rebase)",
            ));
        }
        let quiet = args.has(&["-q", "--quiet"]);
        let Head::Branch(branch) = repo.head().await else {
            return Err(Out::fatal(
                "You are not currently on a branch.\nPlease specify which branch you want to merge with.",
            ));
        };
        let given = &args.operands;
        let remote = match given.first() {
            Some(remote) => remote.to_string(),
            None => repo
                .config_value(&format!("branch.{branch}.remote"))
                .await
                .unwrap_or_else(|| "origin".to_string()),
        };
        let fetched = crate::transfer::fetch_into(
            self.here,
            repo,
            &remote,
            crate::transfer::Fetching::default(),
        )
        .await?;
        let mut err = String::new();
        if !fetched.lines.is_empty() && !quiet {
            let _ = writeln!(err, "From {}", fetched.url);
            err.push_str(&crate::transfer::report(&fetched.lines));
        }
        let merge = match given.get(1) {
            Some(name) => Some(format!("refs/heads/{name}")),
            None => repo.config_value(&format!("branch.{branch}.merge")).await,
        };
        let Some(merge) = merge else {
            return Err(Out::error(
                format!(
                    "{err}There is no tracking information for the current branch.\n\
                     Please specify which branch you want to merge with.\n\
                     See git-pull(1) for details.\n\n    git pull <remote> <branch>\n\n\
                     If you wish to set tracking information for this branch you can do so with:\n\n    \
                     git branch --set-upstream-to={remote}/<branch> {branch}\n\n"
                ),
                1,
            ));
        };
        let upstream = format!(
            "{remote}/{}",
            merge.strip_prefix("refs/heads/").unwrap_or(&merge)
        );
        let theirs = self.revision(&upstream).await?;
        if let Some(ours) = repo.head_commit().await {
            let diverged = !repo.ancestors(&ours).await.contains(&theirs)
                && !repo.ancestors(&theirs).await.contains(&ours);
            let configured = repo.config_value("pull.rebase").await.is_some()
                || repo.config_value("pull.ff").await.is_some();
            let asked = args.has(&["--no-rebase", "--ff", "--no-ff", "--ff-only"]);
            if diverged && !configured && !asked {
                return Err(Out::error(
                    format!(
                        "{err}hint: You have divergent branches and need to specify how to reconcile them.\n\
                         hint: You can do so by running one of the following commands sometime before\n\
                         hint: your next pull:\n\
                         hint:\n\
                         hint:   git config pull.rebase false  # merge\n\
                         hint:   git config pull.rebase true   # rebase\n\
                         hint:   git config pull.ff only       # fast-forward only\n\
                         hint:\n\
                         hint: You can replace \"git config\" with \"git config --global\" to set a default\n\
                         hint: preference for all repositories. You can also pass --rebase, --no-rebase,\n\
                         hint: or --ff-only on the command line to override the configured default per\n\
                         hint: invocation.\n\
                         fatal: Need to specify how to reconcile divergent branches.\n"
                    ),
                    128,
                ));
            }
        }
        let message = format!(
            "Merge branch '{}' of {}",
            merge.strip_prefix("refs/heads/").unwrap_or(&merge),
            fetched.url
        );
        let mut merge_args = vec![upstream, "-m".to_string(), message];
        let pull_ff = repo.config_value("pull.ff").await;
        if args.has(&["--ff-only"])
            || (pull_ff.as_deref() == Some("only") && !args.has(&["--ff", "--no-ff"]))
        {
            merge_args.push("--ff-only".to_string());
        } else if args.has(&["--no-ff"])
            || (pull_ff.as_deref() == Some("false") && !args.has(&["--ff"]))
        {
            merge_args.push("--no-ff".to_string());
        }
        let merged = self.merge(&merge_args).await;
        match merged {
            Ok(out) => Ok(Out {
                stderr: format!("{err}{}", out.stderr),
                ..out
            }),
            Err(out) => Err(Out {
                stderr: format!("{err}{}", out.stderr),
                ..out
            }),
        }
    }
}

/// A merge's message with the conflicts listed after it, as git leaves
/// it in `MERGE_MSG` for the commit that concludes the merge.
pub(super) fn with_conflicts(message: &str, conflicted: &[String]) -> String {
    let mut text = format!("{message}\n# Conflicts:\n");
    for path in conflicted {
        let _ = writeln!(text, "#\t{path}");
    }
    text
}

/// Paths a merge took to a file's new name: its name on ours and on
/// theirs.
type Renamed = BTreeMap<String, (String, String)>;

/// What a three-way merge of trees comes to.
pub(super) struct Merged {
    /// Every path's merged blob; a conflicted path is not there.
    pub(super) result: Files,
    /// The stages (1 base, 2 ours, 3 theirs) of each conflicted path.
    pub(super) conflicts: Vec<(String, u8, Blob)>,
    /// What each conflicted path's work-tree file holds.
    pub(super) worktree: BTreeMap<String, Vec<u8>>,
    /// `Auto-merging …` and `CONFLICT …` lines.
    pub(super) notes: String,
    pub(super) conflicted: Vec<String>,
}
