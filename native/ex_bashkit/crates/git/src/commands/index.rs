//! Commands that record into the index and history: `add`, `rm`, `mv`, `commit`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn add(&self, args: &[String]) -> Run {
        let interactive = ["-p", "--patch", "-i", "--interactive", "-e", "--edit"];
        if args.iter().any(|a| interactive.contains(&a.as_str())) {
            return Err(Out::fatal(
                "the sandbox's git has no interactive staging (add -p/-i/-e): nobody is at a \
                 terminal to answer it; stage whole files, or write the part you want and add that",
            ));
        }
        let args = Args::parse(
            args,
            &Spec {
                command: "add",
                flags: &["-A", "--all", "-u", "--update", "-f", "--force"],
                valued: &[],
            },
        )?;
        let all = args.has(&["-A", "--all"]);
        let update = args.has(&["-u", "--update"]);
        let mut specs: Vec<String> = self.specs(&args.operands, &args.paths)?;
        if specs.is_empty() {
            if all || update {
                specs.push(String::new());
            } else {
                return Ok(Out::ok("").with_stderr(
                    "Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?\n",
                ));
            }
        }
        let repo = &self.repo;
        let mut index = repo.index().await.map_err(failed)?;
        let work = repo.work_files(&index).await.map_err(failed)?;
        // (A pathspec is named in messages as it was given.)
        let given = args.operands.iter().chain(&args.paths);
        for (spec, given) in specs.iter().zip(given) {
            let matched = work.keys().any(|p| Self::matches(spec, p))
                || index.keys().any(|p| Self::matches(spec, p));
            if !matched {
                return Err(Out::fatal(format!(
                    "pathspec '{given}' did not match any files"
                )));
            }
        }
        // A path named outright that only ignored files match is refused,
        // as git refuses it, before anything is staged.
        let ignored_named: Vec<&str> = specs
            .iter()
            .filter(|spec| !spec.is_empty() && !args.has(&["-f", "--force"]))
            .filter(|spec| {
                let hits: Vec<_> = work
                    .iter()
                    .filter(|(p, _)| Self::matches(spec, p) && !index.contains_key(*p))
                    .collect();
                !hits.is_empty()
                    && hits.iter().all(|(_, f)| f.ignored)
                    && !index.keys().any(|p| Self::matches(spec, p))
            })
            .map(|spec| display_spec(spec))
            .collect();
        if !ignored_named.is_empty() {
            let mut message =
                String::from("The following paths are ignored by one of your .gitignore files:\n");
            for spec in &ignored_named {
                message.push_str(spec);
                message.push('\n');
            }
            message.push_str(
                "hint: Use -f if you really want to add them.\n\
                 hint: Disable this message with \"git config advice.addIgnoredFile false\"\n",
            );
            return Err(Out::error(message, 1));
        }
        let force = args.has(&["-f", "--force"]);
        for (path, file) in &work {
            if !Self::any_match(&specs, path) || (update && !index.contains_key(path)) {
                continue;
            }
            if file.ignored && !force && !index.contains_key(path) {
                continue;
            }
            let unchanged = index.get(path).is_some_and(|e| repo.unchanged(e, file));
            if !unchanged {
                let entry = repo.stage(path).await.map_err(failed)?;
                index.insert(path.clone(), entry);
            }
        }
        index.retain(|path, entry| {
            work.contains_key(path) || entry.not_checked() || !Self::any_match(&specs, path)
        });
        repo.save_index(&index).await.map_err(failed)?;
        Ok(Out::ok(""))
    }

    pub(super) async fn rm(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "rm",
                flags: &[
                    "--cached",
                    "-q",
                    "--quiet",
                    "-r",
                    "-f",
                    "--force",
                    "-n",
                    "--dry-run",
                    "--ignore-unmatch",
                ],
                valued: &[],
            },
        )?;
        let cached = args.has(&["--cached"]);
        let quiet = args.has(&["-q", "--quiet"]);
        let recursive = args.has(&["-r"]);
        let specs: Vec<String> = self.specs(&args.operands, &args.paths)?;
        if specs.is_empty() {
            return Err(Out::error(
                "usage: git rm [--cached] [-r] [-q] <file>...\n",
                129,
            ));
        }
        let mut index = self.repo.index().await.map_err(failed)?;
        let mut removed = Vec::new();
        let given = args.operands.iter().chain(&args.paths);
        for (spec, given) in specs.iter().zip(given) {
            let hits: Vec<String> = index
                .keys()
                .filter(|p| Self::matches(spec, p))
                .cloned()
                .collect();
            if hits.is_empty() && args.has(&["--ignore-unmatch"]) {
                continue;
            }
            if hits.is_empty() {
                return Err(Out::fatal(format!(
                    "pathspec '{given}' did not match any files"
                )));
            }
            if !recursive && hits.iter().any(|h| h != spec) && !spec.contains(['*', '?']) {
                return Err(Out::fatal(format!(
                    "not removing '{given}' recursively without -r"
                )));
            }
            removed.extend(hits);
        }
        if !args.has(&["-f", "--force"]) {
            self.check_removable(&removed, cached).await?;
        }
        let mut out = String::new();
        // `-n`: what would go, and nothing goes.
        let dry = args.has(&["-n", "--dry-run"]);
        for path in &removed {
            if !quiet {
                let _ = writeln!(out, "rm '{path}'");
            }
            if dry {
                continue;
            }
            index.remove(path);
            if !cached {
                self.repo.remove_file(path).await.map_err(failed)?;
            }
        }
        if !dry {
            self.repo.save_index(&index).await.map_err(failed)?;
        }
        Ok(Out::ok(out))
    }

    /// git's refusal to `rm` (without `-f`) what would lose a change:
    /// content staged and different from both sides, a staged change (kept
    /// by `--cached`), a change in the work tree (kept by `--cached`).
    async fn check_removable(&self, paths: &[String], cached: bool) -> Result<(), Out> {
        let state = self.state_of(true, Some(false)).await?;
        let (mut both, mut staged, mut local) = (Vec::new(), Vec::new(), Vec::new());
        for path in paths {
            let indexed = state.index.get(path).map(|e| &e.blob);
            let in_head = state.head_files.get(path);
            let in_work = state.work_blobs.get(path);
            let is_staged = indexed != in_head;
            let is_local = in_work.is_some() && in_work != indexed;
            if is_staged && is_local && in_work != in_head {
                both.push(path);
            } else if !cached && is_staged {
                staged.push(path);
            } else if !cached && is_local {
                local.push(path);
            }
        }
        let list = |what: &str, paths: &[&String], hint: &str| {
            let one = match paths.len() {
                1 => "file has",
                _ => "files have",
            };
            let mut text = format!("error: the following {one} {what}:\n");
            for path in paths {
                let _ = writeln!(text, "    {path}");
            }
            text.push_str(hint);
            text
        };
        let mut message = String::new();
        if !both.is_empty() {
            message.push_str(&list(
                "staged content different from both the\nfile and the HEAD",
                &both,
                "(use -f to force removal)\n",
            ));
        }
        if !staged.is_empty() {
            message.push_str(&list(
                "changes staged in the index",
                &staged,
                "(use --cached to keep the file, or -f to force removal)\n",
            ));
        }
        if !local.is_empty() {
            message.push_str(&list(
                "local modifications",
                &local,
                "(use --cached to keep the file, or -f to force removal)\n",
            ));
        }
        match message.is_empty() {
            true => Ok(()),
            false => Err(Out::error(message, 1)),
        }
    }

    /// `git mv SOURCE... DESTINATION`: files and directories (each tracked
    /// path under one moves with it), into a directory when the
    /// destination is one; every move checked, as git checks them,
    /// before any is made. `-n` only says what it would do; `-v` says it.
    pub(super) async fn mv(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "mv",
                flags: &["-n", "--dry-run", "-v", "--verbose"],
                valued: &[],
            },
        )?;
        let dry_run = args.has(&["-n", "--dry-run"]);
        let verbose = args.has(&["-v", "--verbose"]) || dry_run;
        let operands: Vec<&str> = args.operands.iter().chain(&args.paths).copied().collect();
        let Some((dest, sources)) = operands.split_last().filter(|(_, s)| !s.is_empty()) else {
            return Err(Out::error(
                "usage: git mv [<options>] <source>... <destination>\n",
                129,
            ));
        };
        let repo = &self.repo;
        let fs = &repo.fs;
        let is_dir = |path: String| async move {
            fs.stat(&repo.root.join(path))
                .await
                .is_ok_and(|m| m.file_type.is_dir())
        };
        let dest = self.pathspec(dest);
        let into_dir = is_dir(dest.clone()).await;
        if sources.len() > 1 && !into_dir {
            return Err(Out::fatal(format!(
                "destination '{dest}' is not a directory"
            )));
        }
        let mut index = repo.index().await.map_err(failed)?;
        // Each move: the source, where it goes, and the tracked paths it
        // carries (a file's own path; a directory's paths under it).
        let mut moves: Vec<(String, String, Vec<String>)> = Vec::new();
        for source in sources {
            let from = self.pathspec(source);
            let to = match into_dir {
                true => format!("{dest}/{}", from.rsplit('/').next().unwrap_or(&from)),
                false => dest.clone(),
            };
            let refused = |why: &str| Out::fatal(format!("{why}, source={from}, destination={to}"));
            let carried: Vec<String> = if index.contains_key(&from) {
                vec![from.clone()]
            } else if is_dir(from.clone()).await {
                let under: Vec<String> = index
                    .keys()
                    .filter(|p| p.starts_with(&format!("{from}/")))
                    .cloned()
                    .collect();
                if under.is_empty() {
                    return Err(refused("source directory is empty"));
                }
                under
            } else if fs.exists(&repo.root.join(&from)).await.unwrap_or(false) {
                return Err(refused("not under version control"));
            } else {
                return Err(refused("bad source"));
            };
            // git's rule before the work tree changes: never into a git
            // directory, never outside the work tree.
            for path in &carried {
                let moved = format!("{to}{}", &path[from.len()..]);
                if !crate::paths::verify_path(&moved, index[path].blob.mode) {
                    return Err(Out::fatal(format!("invalid path '{moved}'")));
                }
            }
            if fs.exists(&repo.root.join(&to)).await.unwrap_or(false) || index.contains_key(&to) {
                return Err(refused("destination exists"));
            }
            moves.push((from, to, carried));
        }
        let mut out = String::new();
        for (from, to, carried) in &moves {
            let each: Vec<(String, String)> = carried
                .iter()
                .map(|path| (path.clone(), format!("{to}{}", &path[from.len()..])))
                .collect();
            let directory = carried.first() != Some(from);
            if dry_run {
                if directory {
                    let _ = writeln!(out, "Checking rename of '{from}' to '{to}'");
                }
                for (a, b) in &each {
                    let _ = writeln!(out, "Checking rename of '{a}' to '{b}'");
                }
            }
            if verbose {
                if directory {
                    let _ = writeln!(out, "Renaming {from} to {to}");
                }
                for (a, b) in &each {
                    let _ = writeln!(out, "Renaming {a} to {b}");
                }
            }
            if dry_run {
                continue;
            }
            fs.rename(&repo.root.join(from), &repo.root.join(to))
                .await
                .map_err(|e| failed(format!("renaming '{from}' failed: {e}")))?;
            for (a, b) in each {
                if let Some(entry) = index.remove(&a) {
                    index.insert(b, entry);
                }
            }
        }
        if !dry_run {
            repo.save_index(&index).await.map_err(failed)?;
        }
        Ok(Out::ok(out))
    }

    // ---- commit ------------------------------------------------------------

    pub(super) async fn commit(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "commit",
                // The sandbox runs no hooks, so `--no-verify` is what it
                // does anyway; with no editor, `--no-edit` too.
                flags: &[
                    "-a",
                    "--all",
                    "--amend",
                    "--allow-empty",
                    "-q",
                    "--quiet",
                    "-n",
                    "--no-verify",
                    "--no-edit",
                ],
                valued: &[
                    &["-m", "--message"],
                    &["-F", "--file"],
                    &["--author"],
                    &["--date"],
                    &["--cleanup"],
                ],
            },
        )?;
        // With no editor, `default` and `scissors` clean as `whitespace`.
        let cleanup = match args.value("--cleanup") {
            None | Some("default" | "scissors" | "whitespace") => text::Cleanup::Whitespace,
            Some("strip") => text::Cleanup::Strip,
            Some("verbatim") => text::Cleanup::Verbatim,
            Some(mode) => return Err(Out::fatal(format!("Invalid cleanup mode {mode}"))),
        };
        // `commit PATH…` (git's `--only`): the commit takes those paths as
        // the work tree has them and everything else as `HEAD` has it;
        // what else is staged stays staged.
        let specs = self.specs(&args.operands, &args.paths)?;
        let partial = !specs.is_empty();
        let repo = &self.repo;
        if partial {
            let shown: Vec<&str> = args.operands.iter().chain(&args.paths).copied().collect();
            if args.has(&["-a", "--all"]) {
                return Err(Out::fatal(format!(
                    "paths '{} ...' with -a does not make sense",
                    shown[0]
                )));
            }
            if args.has(&["--amend"]) {
                return Err(Out::fatal(
                    "not supported by the sandbox's git: commit --amend with paths",
                ));
            }
            if repo.state_file("MERGE_HEAD").await.is_some() {
                return Err(Out::fatal("cannot do a partial commit during a merge."));
            }
        }
        repo.check_writable().await.map_err(failed)?;
        let mut only: Vec<String> = Vec::new();
        if partial {
            let mut index = repo.index().await.map_err(failed)?;
            let work = repo.work_files(&index).await.map_err(failed)?;
            let head_files = repo
                .head_files(repo.head_commit().await.as_deref(), &index)
                .await
                .map_err(failed)?;
            let known: BTreeSet<&String> = index.keys().chain(head_files.keys()).collect();
            let given = args.operands.iter().chain(&args.paths);
            for (spec, given) in specs.iter().zip(given) {
                if !known.iter().any(|p| Self::matches(spec, p)) {
                    return Err(Out::error(
                        format!(
                            "error: pathspec '{given}' did not match any file(s) known to git\n"
                        ),
                        1,
                    ));
                }
            }
            only = known
                .into_iter()
                .filter(|p| Self::any_match(&specs, p))
                .cloned()
                .collect();
            // Those paths are staged as they are, in the index kept too.
            for path in &only {
                match work.get(path) {
                    Some(_) => {
                        let entry = repo.stage(path).await.map_err(failed)?;
                        index.insert(path.clone(), entry);
                    }
                    None => {
                        index.remove(path);
                    }
                }
            }
            repo.save_index(&index).await.map_err(failed)?;
        }
        if args.has(&["-a", "--all"]) {
            let mut index = repo.index().await.map_err(failed)?;
            let work = repo.work_files(&index).await.map_err(failed)?;
            let paths: Vec<String> = index.keys().cloned().collect();
            for path in paths {
                if index[&path].not_checked() {
                    continue;
                }
                match work.get(&path) {
                    None => {
                        index.remove(&path);
                    }
                    Some(file) => {
                        let blob = repo.work_blob(&path, file, &index).await.map_err(failed)?;
                        if index.get(&path).is_some_and(|e| e.blob != blob) {
                            let entry = repo.stage(&path).await.map_err(failed)?;
                            index.insert(path, entry);
                        }
                    }
                }
            }
            // `-a` stages a conflicted path's file too (its removal if it
            // is gone), which resolves it.
            for path in repo.unmerged() {
                if repo.io.exists(&repo.root.join(&path)).await {
                    let entry = repo.stage(&path).await.map_err(failed)?;
                    index.insert(path, entry);
                }
            }
            repo.set_unmerged(Vec::new());
            repo.save_index(&index).await.map_err(failed)?;
        }
        let unmerged = repo.unmerged();
        if !unmerged.is_empty() {
            // The index's refresh names each conflicted path first.
            let listed: String = unmerged.iter().map(|p| format!("U\t{p}\n")).collect();
            let message = "error: Committing is not possible because you have unmerged files.\n\
                 hint: Fix them up in the work tree, and then use 'git add/rm <file>'\n\
                 hint: as appropriate to mark resolution and make a commit.\n\
                 fatal: Exiting because of an unresolved conflict.\n";
            return Err(Out {
                stdout: listed,
                stderr: message.to_string(),
                code: 128,
            });
        }
        let amend = args.has(&["--amend"]);
        let head = repo.head_commit().await;
        let amended = match (&head, amend) {
            (Some(head), true) => Some(repo.commit(head).await.map_err(failed)?),
            (None, true) => {
                return Err(Out::fatal("You have nothing to amend."));
            }
            _ => None,
        };
        let mut message = match (args.value("-m"), args.value("-F")) {
            (Some(message), _) => message.to_string(),
            (None, Some(file)) => {
                let bytes = repo
                    .fs
                    .read_file(&resolve(&self.here.cwd, file))
                    .await
                    .map_err(|_| failed(format!("could not read log file '{file}'")))?;
                String::from_utf8_lossy(&bytes).into_owned()
            }
            (None, None) => match &amended {
                Some(commit) => commit.message.clone(),
                None => String::new(),
            },
        };
        let given = args.value("-m").is_some() || args.value("-F").is_some();
        message = cleanup.apply(&message);
        // Concluding a merge: its other parent and its message.
        let merging = repo.state_file("MERGE_HEAD").await;
        // Concluding a cherry-pick: the picked commit's author.
        let picking = match repo.state_file("CHERRY_PICK_HEAD").await {
            Some(oid) if !amend => Some(repo.commit(oid.trim()).await.map_err(failed)?),
            _ => None,
        };
        let mut parents = match (&head, &amended) {
            (_, Some(commit)) => commit.parents.clone(),
            (Some(head), None) => vec![head.clone()],
            (None, None) => Vec::new(),
        };
        if let (Some(merge_head), None) = (&merging, &amended) {
            parents.extend(
                merge_head
                    .lines()
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty()),
            );
        }
        if !given && amended.is_none() {
            // A merge's, cherry-pick's or revert's prepared message, as
            // `--no-edit` takes it (comments and all unless `--cleanup`
            // says otherwise).
            if let Some(saved) = repo.state_file("MERGE_MSG").await {
                message = cleanup.apply(&saved);
            }
        }
        let index = repo.index().await.map_err(failed)?;
        // `git add -N` paths are not committed until really added.
        let mut files = committed_files(&index);
        let parent_files = repo
            .head_files(parents.first().map(String::as_str), &index)
            .await
            .map_err(failed)?;
        if partial {
            let staged = std::mem::replace(&mut files, parent_files.clone());
            for path in &only {
                match staged.get(path) {
                    Some(blob) => files.insert(path.clone(), blob.clone()),
                    None => files.remove(path),
                };
            }
        }
        if files == parent_files && !args.has(&["--allow-empty"]) && !amend && merging.is_none() {
            let status = self.long_status(&self.state().await?).await?;
            let advice = if picking.is_some() {
                "The previous cherry-pick is now empty, possibly due to conflict resolution.\n\
                 If you wish to commit it anyway, use:\n\n    git commit --allow-empty\n\n\
                 Otherwise, please use 'git cherry-pick --skip'\n"
            } else {
                ""
            };
            return Err(Out {
                stdout: status,
                stderr: advice.to_string(),
                code: 1,
            });
        }
        if message.is_empty() {
            return Err(Out::error(
                "Aborting commit due to empty commit message.\n",
                1,
            ));
        }
        let tree = repo.write_tree(&files).await.map_err(failed)?;
        let mut author = None;
        if let Some(commit) = amended.as_ref().or(picking.as_ref()) {
            // --amend keeps the author and the authored date; so does the
            // commit that concludes a cherry-pick.
            let a = &commit.author;
            author = Some((
                format!("{} <{}>", a.name, a.email),
                format!("{} {}", a.time, a.zone),
            ));
        }
        if let Some(given) = args.value("--author").filter(|g| g.contains('<')) {
            let when = match author.take() {
                Some((_, when)) => when,
                None => repo.identity("AUTHOR").await.1,
            };
            author = Some((given.to_string(), when));
        }
        if let Some(date) = args.value("--date") {
            let (seconds, zone) = dates::parse_date(date)
                .ok_or_else(|| Out::fatal(format!("invalid date format: {date}")))?;
            let who = match author.take() {
                Some((who, _)) => who,
                None => repo.identity("AUTHOR").await.0,
            };
            author = Some((who, format!("{seconds} {zone}")));
        }
        let oid = self.write_commit(&tree, &parents, &message, author).await?;
        repo.clear_operation_state().await;
        let what = match (amend, parents.len()) {
            (true, _) => "commit (amend)",
            (false, 0) => "commit (initial)",
            (false, 1) if picking.is_some() => "commit (cherry-pick)",
            (false, 1) => "commit",
            (false, _) => "commit (merge)",
        };
        let reflog = format!("{what}: {}", message.lines().next().unwrap_or(""));
        repo.advance_head(&oid, &reflog).await.map_err(failed)?;
        if args.has(&["-q", "--quiet"]) {
            return Ok(Out::ok(""));
        }
        let shows_date = amend || picking.is_some() || args.value("--date").is_some();
        let out = self
            .commit_summary(&oid, &parent_files, &files, shows_date)
            .await?;
        Ok(Out::ok(out))
    }

    /// What `commit` prints of a commit it made: `[BRANCH HASH] subject`,
    /// the author where it is not the committer, the author's date when
    /// `shows_date`, and the changes from `parent_files` counted.
    pub(super) async fn commit_summary(
        &self,
        oid: &Oid,
        parent_files: &Files,
        files: &Files,
        shows_date: bool,
    ) -> Result<String, Out> {
        let repo = &self.repo;
        let written = repo.commit(oid).await.map_err(failed)?;
        let root = if written.parents.is_empty() {
            " (root-commit)"
        } else {
            ""
        };
        let place = match self.branch_name().await {
            Some(branch) => branch,
            None => "detached HEAD".to_string(),
        };
        // `%s`: the first paragraph on one line.
        let subject = written.subject();
        let mut out = format!("[{place}{root} {}] {subject}\n", repo.short(oid).await);
        let (a, c) = (&written.author, &written.committer);
        if (&a.name, &a.email) != (&c.name, &c.email) {
            let _ = writeln!(out, " Author: {} <{}>", a.name, a.email);
        }
        if shows_date {
            let _ = writeln!(out, " Date: {}", a.date());
        }
        let changes = self.changes(parent_files, files, None, &[]).await?;
        let (mut insertions, mut deletions) = (0, 0);
        for change in &changes {
            let (added, removed) = change.counts();
            insertions += added;
            deletions += removed;
        }
        // An empty commit's summary stops at its title, as git's does.
        if !changes.is_empty() {
            out.push_str(&diff::summary(changes.len(), insertions, deletions));
        }
        out.push_str(&Self::mode_summary(&changes));
        Ok(out)
    }

    // ---- status ------------------------------------------------------------
}
