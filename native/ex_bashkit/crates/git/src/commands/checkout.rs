//! Commands that move the work tree: `checkout`, `switch`, `reset`, `restore`, `clean`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn checkout(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "checkout",
                flags: &["-q", "--quiet", "--detach"],
                valued: &[&["-b"], &["-B"]],
            },
        )?;
        let quiet = args.has(&["-q", "--quiet"]);
        if let Some(name) = args.value("-b").or(args.value("-B")) {
            let start = args.operands.first().copied();
            return self
                .switch_to(name, start, true, args.value("-B").is_some(), quiet)
                .await;
        }
        let files: Vec<String> = self.inside_all(&args.paths)?;
        let operands = self.previous_named(&args.operands).await?;
        let operands: Vec<&str> = operands.iter().map(String::as_str).collect();
        if args.has(&["--detach"]) {
            return match (operands.as_slice(), files.is_empty()) {
                ([], true) => self.detach("HEAD", quiet).await,
                ([target], true) => self.detach(target, quiet).await,
                _ => Err(Out::fatal(
                    "git checkout: --detach does not take a path argument",
                )),
            };
        }
        match (operands.as_slice(), files.is_empty()) {
            ([target], true) if self.repo.branch(target).await.is_some() => {
                self.switch_to(target, None, false, false, quiet).await
            }
            ([target], true) if self.repo.resolve(target).await.is_some() => {
                self.detach(target, quiet).await
            }
            ([revision], false) => self.restore_paths(Some(revision), &files, true, true).await,
            ([], false) => self.restore_paths(None, &files, false, true).await,
            (paths, true) if !paths.is_empty() => {
                let specs: Vec<String> = self.inside_all(paths)?;
                self.restore_paths(None, &specs, false, true).await
            }
            _ => Err(Out::error(
                "usage: git checkout [-b <branch>] <branch> | -- <file>...\n",
                129,
            )),
        }
    }

    pub(super) async fn switch(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "switch",
                flags: &["-q", "--quiet", "-d", "--detach"],
                valued: &[&["-c", "--create"], &["-C", "--force-create"]],
            },
        )?;
        let quiet = args.has(&["-q", "--quiet"]);
        if let Some(name) = args.value("-c").or(args.value("-C")) {
            let start = args.operands.first().copied();
            return self
                .switch_to(name, start, true, args.value("-C").is_some(), quiet)
                .await;
        }
        let operands = self.previous_named(&args.operands).await?;
        let operands: Vec<&str> = operands.iter().map(String::as_str).collect();
        match operands.as_slice() {
            [] if args.has(&["--detach", "-d"]) => self.detach("HEAD", quiet).await,
            [target] if args.has(&["--detach", "-d"]) => self.detach(target, quiet).await,
            [target] => {
                if self.repo.branch(target).await.is_none() {
                    return Err(Out::fatal(format!("invalid reference: {target}")));
                }
                self.switch_to(target, None, false, false, quiet).await
            }
            _ => Err(Out::fatal("missing branch or commit argument")),
        }
    }

    /// The operands with `-` and `@{-N}` replaced by the branch (or
    /// commit) checked out N switches ago, as `checkout` and `switch` read
    /// them.
    async fn previous_named(&self, operands: &[&str]) -> Result<Vec<String>, Out> {
        let mut named = Vec::with_capacity(operands.len());
        for operand in operands {
            let back = match *operand {
                "-" => Some(1),
                other => other
                    .strip_prefix("@{-")
                    .and_then(|rest| rest.strip_suffix('}'))
                    .and_then(|n| n.parse::<usize>().ok()),
            };
            named.push(match back {
                None => operand.to_string(),
                Some(n) => self
                    .repo
                    .previous_checkout(n)
                    .await
                    .ok_or_else(|| match n {
                        1 => Out::error("error: no previous branch\n", 1),
                        n => Out::fatal(format!("invalid reference: @{{-{n}}}")),
                    })?,
            });
        }
        Ok(named)
    }

    /// Moves the index and work tree from `HEAD`'s files to `target`'s,
    /// refusing where a local change would be lost.
    pub(crate) async fn move_to(&self, target: &Files) -> Result<(), Out> {
        let state = self.state().await?;
        let mut paths: BTreeSet<&String> = state.head_files.keys().collect();
        paths.extend(target.keys());
        let differing: Vec<&String> = paths
            .into_iter()
            .filter(|p| state.head_files.get(*p) != target.get(*p))
            .collect();
        let conflicts: Vec<&String> = differing
            .iter()
            .copied()
            .filter(|p| {
                let indexed = state.index.get(*p).map(|e| &e.blob);
                let head = state.head_files.get(*p);
                // git's two-way merge: a path staged as the target has it
                // already; one changed otherwise is in the way.
                indexed != target.get(*p)
                    && (indexed != head
                        || state.work_blobs.get(*p) != indexed
                        || (indexed.is_none() && state.work.contains_key(*p)))
            })
            .collect();
        if !conflicts.is_empty() {
            let list: String = conflicts.iter().map(|p| format!("\t{p}\n")).collect();
            return Err(Out::error(
                format!(
                    "error: Your local changes to the following files would be overwritten by checkout:\n{list}\
                     Please commit your changes or stash them before you switch branches.\nAborting\n"
                ),
                1,
            ));
        }
        let mut index = state.index.clone();
        for path in differing {
            if state.index.get(path).map(|e| &e.blob) == target.get(path) {
                continue;
            }
            self.put(&mut index, path, target.get(path)).await?;
        }
        self.repo.save_index(&index).await.map_err(failed)
    }

    pub(super) async fn switch_to(
        &self,
        name: &str,
        start: Option<&str>,
        create: bool,
        force: bool,
        quiet: bool,
    ) -> Run {
        let repo = &self.repo;
        let current = self.branch_name().await;
        if create {
            check_branch_name(name)?;
            if repo.branch(name).await.is_some() && !force {
                return Err(Out::fatal(format!(
                    "a branch named '{name}' already exists"
                )));
            }
            let start_oid = match start {
                Some(start) => Some(self.revision(start).await?),
                None => repo.head_commit().await,
            };
            if let Some(oid) = &start_oid {
                if start.is_some() {
                    let files = repo.commit_files(Some(oid)).await.map_err(failed)?;
                    self.move_to(&files).await?;
                }
                repo.set_ref("heads", name, oid).await.map_err(failed)?;
                repo.log_update(
                    &format!("refs/heads/{name}"),
                    None,
                    oid,
                    &format!("branch: Created from {}", start.unwrap_or("HEAD")),
                )
                .await
                .map_err(failed)?;
            }
            let before = repo.head_commit().await;
            repo.set_head_branch(name).await.map_err(failed)?;
            if let Some(oid) = &start_oid {
                let from = self.checkout_name(current.as_deref(), before.as_deref());
                repo.log_checkout(before.as_deref(), oid, &from, name)
                    .await
                    .map_err(failed)?;
            }
            let message = format!("Switched to a new branch '{name}'\n");
            return Ok(Out::ok("").with_stderr(if quiet { String::new() } else { message }));
        }
        if current.as_deref() == Some(name) {
            let message = format!("Already on '{name}'\n");
            return Ok(Out::ok("").with_stderr(if quiet { String::new() } else { message }));
        }
        let oid = repo.branch(name).await;
        let files = repo.commit_files(oid.as_deref()).await.map_err(failed)?;
        self.move_to(&files).await?;
        let before = repo.head_commit().await;
        repo.set_head_branch(name).await.map_err(failed)?;
        if let Some(oid) = &oid {
            let from = self.checkout_name(current.as_deref(), before.as_deref());
            repo.log_checkout(before.as_deref(), oid, &from, name)
                .await
                .map_err(failed)?;
        }
        let message = format!("Switched to branch '{name}'\n");
        Ok(Out::ok("").with_stderr(if quiet { String::new() } else { message }))
    }

    pub(super) async fn detach(&self, target: &str, quiet: bool) -> Run {
        let oid = self.revision(target).await?;
        let files = self.repo.commit_files(Some(&oid)).await.map_err(failed)?;
        self.move_to(&files).await?;
        let before = self.repo.head_commit().await;
        let current = self.branch_name().await;
        self.repo.set_head_detached(&oid).await.map_err(failed)?;
        let from = self.checkout_name(current.as_deref(), before.as_deref());
        self.repo
            .log_checkout(before.as_deref(), &oid, &from, target)
            .await
            .map_err(failed)?;
        let subject = self
            .repo
            .commit(&oid)
            .await
            .map_err(failed)?
            .subject()
            .to_string();
        let message = format!("HEAD is now at {} {subject}\n", self.repo.short(&oid).await);
        Ok(Out::ok("").with_stderr(if quiet { String::new() } else { message }))
    }

    // ---- reset, restore ----------------------------------------------------

    /// What a checkout's reflog line says it moved from: the branch, or
    /// the commit a detached `HEAD` was at.
    pub(super) fn checkout_name(&self, branch: Option<&str>, head: Option<&str>) -> String {
        match (branch, head) {
            (Some(branch), _) => branch.to_string(),
            (None, Some(oid)) => oid.to_string(),
            (None, None) => "HEAD".to_string(),
        }
    }

    pub(super) async fn reset(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "reset",
                flags: &["-q", "--quiet", "--hard", "--soft", "--mixed"],
                valued: &[],
            },
        )?;
        let quiet = args.has(&["-q", "--quiet"]);
        let repo = &self.repo;
        let (revision, mut specs): (&str, Vec<String>) = match args.operands.split_first() {
            Some((first, rest)) if repo.resolve(first).await.is_some() => {
                (*first, self.inside_all(rest)?)
            }
            _ => ("HEAD", self.inside_all(&args.operands)?),
        };
        specs.extend(self.inside_all(&args.paths)?);
        let target_oid = repo.resolve_commit(revision).await;
        if target_oid.is_none() && revision != "HEAD" {
            return Err(self
                .revision(revision)
                .await
                .err()
                .unwrap_or_else(|| Out::fatal("bad revision")));
        }
        let target = repo
            .commit_files(target_oid.as_deref())
            .await
            .map_err(failed)?;
        if !specs.is_empty() {
            // Unstage the paths: their index entries from the revision.
            let mut index = repo.index().await.map_err(failed)?;
            let paths: BTreeSet<String> = index
                .keys()
                .chain(target.keys())
                .filter(|p| Self::any_match(&specs, p))
                .cloned()
                .collect();
            for path in paths {
                match target.get(&path) {
                    Some(blob) => {
                        let single: Files = [(path.clone(), blob.clone())].into_iter().collect();
                        if let Some(entry) = repo.index_of(&single, &index).await.remove(&path) {
                            index.insert(path, entry);
                        }
                    }
                    None => {
                        index.remove(&path);
                    }
                }
            }
            repo.drop_unmerged(|path| Self::any_match(&specs, path));
            repo.save_index(&index).await.map_err(failed)?;
            return Ok(Out::ok(""));
        }
        let hard = args.has(&["--hard"]);
        let soft = args.has(&["--soft"]);
        if soft && (!repo.unmerged().is_empty() || repo.state_file("MERGE_HEAD").await.is_some()) {
            return Err(Out::fatal(
                "Cannot do a soft reset in the middle of a merge.",
            ));
        }
        let conflicted = repo.unmerged();
        if !soft {
            // The index is rebuilt whole: no conflict is left in it.
            repo.set_unmerged(Vec::new());
        }
        if hard {
            let state = self.state().await?;
            let tracked: BTreeSet<&String> = state
                .index
                .keys()
                .chain(state.head_files.keys())
                .chain(&conflicted)
                .collect();
            let mut index = Index::new();
            for path in tracked {
                if !target.contains_key(path) && state.work.contains_key(path) {
                    repo.remove_file(path).await.map_err(failed)?;
                }
            }
            for (path, blob) in &target {
                let unchanged = state.work_blobs.get(path) == Some(blob);
                let entry = if unchanged {
                    let single: Files = [(path.clone(), blob.clone())].into_iter().collect();
                    repo.index_of(&single, &state.index).await.remove(path)
                } else {
                    Some(repo.checkout_file(path, blob).await.map_err(failed)?)
                };
                if let Some(entry) = entry {
                    index.insert(path.clone(), entry);
                }
            }
            repo.save_index(&index).await.map_err(failed)?;
        } else if !soft {
            let index = repo
                .index_of(&target, &repo.index().await.map_err(failed)?)
                .await;
            repo.save_index(&index).await.map_err(failed)?;
        }
        if let Some(oid) = &target_oid {
            repo.advance_head(oid, &format!("reset: moving to {revision}"))
                .await
                .map_err(failed)?;
        }
        repo.clear_operation_state().await;
        if quiet {
            return Ok(Out::ok(""));
        }
        if hard {
            let Some(oid) = target_oid else {
                return Ok(Out::ok(""));
            };
            let subject = repo
                .commit(&oid)
                .await
                .map_err(failed)?
                .subject()
                .to_string();
            return Ok(Out::ok(format!(
                "HEAD is now at {} {subject}\n",
                self.repo.short(&oid).await
            )));
        }
        if soft {
            return Ok(Out::ok(""));
        }
        let state = self.state().await?;
        let unstaged = state.unstaged();
        if unstaged.is_empty() {
            return Ok(Out::ok(""));
        }
        let mut out = String::from("Unstaged changes after reset:\n");
        for (code, path) in unstaged {
            let _ = writeln!(out, "{code}\t{path}");
        }
        Ok(Out::ok(out))
    }

    pub(super) async fn restore(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "restore",
                flags: &["-S", "--staged", "-W", "--worktree"],
                valued: &[&["-s", "--source"]],
            },
        )?;
        let staged = args.has(&["-S", "--staged"]);
        let worktree = args.has(&["-W", "--worktree"]) || !staged;
        let specs: Vec<String> = self.specs(&args.operands, &args.paths)?;
        if specs.is_empty() {
            return Err(Out::fatal("you must specify path(s) to restore"));
        }
        let source = args
            .value("-s")
            .or(if staged { Some("HEAD") } else { None });
        self.restore_paths(source, &specs, staged, worktree).await
    }

    /// Puts `specs` back from `source` (a revision; the index if none)
    /// into the index and/or the work tree.
    pub(super) async fn restore_paths(
        &self,
        source: Option<&str>,
        specs: &[String],
        index_too: bool,
        worktree: bool,
    ) -> Run {
        let repo = &self.repo;
        let mut index = repo.index().await.map_err(failed)?;
        let from: Files = match source {
            Some(revision) => match repo.resolve_commit(revision).await {
                Some(oid) => repo.commit_files(Some(&oid)).await.map_err(failed)?,
                None if revision == "HEAD" => Files::new(),
                None => {
                    return Err(self
                        .revision(revision)
                        .await
                        .err()
                        .unwrap_or_else(|| Out::fatal("bad revision")))
                }
            },
            None => index_files(&index),
        };
        for spec in specs {
            let known = from.keys().any(|p| Self::matches(spec, p))
                || index.keys().any(|p| Self::matches(spec, p));
            if !known {
                return Err(Out::error(
                    format!(
                        "error: pathspec '{}' did not match any file(s) known to git\n",
                        display_spec(spec)
                    ),
                    1,
                ));
            }
        }
        let paths: BTreeSet<String> = from
            .keys()
            .chain(index.keys())
            .filter(|p| Self::any_match(specs, p))
            .cloned()
            .collect();
        for path in paths {
            match from.get(&path) {
                Some(blob) => {
                    if worktree {
                        let entry = repo.checkout_file(&path, blob).await.map_err(failed)?;
                        if index_too {
                            index.insert(path.clone(), entry);
                        } else if let Some(existing) = index.get_mut(&path) {
                            // Same content: only its stat is new.
                            if existing.blob == *blob {
                                *existing = entry;
                            }
                        }
                    } else if index_too {
                        let single: Files = [(path.clone(), blob.clone())].into_iter().collect();
                        if let Some(entry) = repo.index_of(&single, &index).await.remove(&path) {
                            index.insert(path.clone(), entry);
                        }
                    }
                }
                None => {
                    if index_too {
                        index.remove(&path);
                    }
                    if worktree && source.is_some() {
                        repo.remove_file(&path).await.map_err(failed)?;
                    }
                }
            }
        }
        repo.save_index(&index).await.map_err(failed)?;
        Ok(Out::ok(""))
    }

    // ---- merge, tag --------------------------------------------------------

    pub(super) async fn clean(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "clean",
                flags: &["-n", "--dry-run", "-f", "--force", "-d", "-q", "--quiet"],
                valued: &[],
            },
        )?;
        // What is below the current directory, or the paths given; each
        // named from the current directory, as git names them.
        let mut specs = self.specs(&args.operands, &args.paths)?;
        if specs.is_empty() {
            specs.push(self.pathspec("."));
        }
        let dry = args.has(&["-n", "--dry-run"]);
        if !dry && !args.has(&["-f", "--force"]) {
            return Err(Out::fatal(
                "clean.requireForce defaults to true and neither -i, -n, nor -f given; refusing to clean",
            ));
        }
        // With paths given, git removes the directories they match too.
        let directories = args.has(&["-d"]) || !(args.operands.is_empty() && args.paths.is_empty());
        let state = self.state().await?;
        let mut out = String::new();
        let mut doomed_paths: BTreeSet<String> = state.untracked().into_iter().collect();
        if directories {
            let (_, empty) = self.repo.work_tree(&state.index).await.map_err(failed)?;
            doomed_paths.extend(self.empty_tops(&state, empty, &doomed_paths));
        }
        for path in doomed_paths {
            let is_dir = path.ends_with('/');
            if is_dir && specs.iter().any(|s| s.starts_with(&path)) {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: clean of a path inside the untracked directory {path}"
                )));
            }
            if (is_dir && !directories) || !Self::any_match(&specs, path.trim_end_matches('/')) {
                continue;
            }
            let mut shown = self.shown_as(path.trim_end_matches('/'), false);
            if is_dir {
                shown.push('/');
            }
            if dry {
                let _ = writeln!(out, "Would remove {shown}");
                continue;
            }
            let quiet = args.has(&["-q", "--quiet"]);
            // An untracked directory's ignored files stay, as git keeps
            // them without -x.
            let doomed = state
                .work
                .iter()
                .filter(|(p, f)| !f.ignored && (*p == &path || (is_dir && p.starts_with(&path))))
                .map(|(p, _)| p);
            for file in doomed {
                self.repo.remove_file(file).await.map_err(failed)?;
            }
            if is_dir {
                self.repo.remove_empty_dirs(&path).await.map_err(failed)?;
            }
            if !quiet {
                let _ = writeln!(out, "Removing {shown}");
            }
        }
        Ok(Out::ok(out))
    }

    /// The empty directories `clean -d` names: each empty one's highest
    /// directory that holds no file (tracked, untracked or ignored), left
    /// out when an untracked directory in `listed` already holds it.
    fn empty_tops(
        &self,
        state: &State,
        empty: Vec<String>,
        listed: &BTreeSet<String>,
    ) -> BTreeSet<String> {
        let holds_file = |dir: &str| {
            let inner = format!("{dir}/");
            let first_after = |keys: Option<&String>| keys.is_some_and(|k| k.starts_with(&inner));
            first_after(state.index.range(inner.clone()..).next().map(|(k, _)| k))
                || first_after(state.work.range(inner.clone()..).next().map(|(k, _)| k))
        };
        let mut tops = BTreeSet::new();
        for dir in empty {
            let mut top = dir.trim_end_matches('/').to_string();
            while let Some((parent, _)) = top.rsplit_once('/') {
                if holds_file(parent) {
                    break;
                }
                top = parent.to_string();
            }
            let top = format!("{top}/");
            if !listed
                .iter()
                .any(|u| u.ends_with('/') && top.starts_with(u.as_str()))
            {
                tops.insert(top);
            }
        }
        tops
    }
}
