//! `status`: long, short and porcelain (v1, v2), with upstream ahead/behind.

use super::*;

impl Ctx<'_> {
    /// What the index changed against `HEAD`, as `status` shows it: a
    /// deleted file and an added one alike enough paired as a rename
    /// (`R`, `old -> new`, with how alike they are in percent), as git's
    /// diffcore-rename pairs them for `diff` (`status.renames`, else
    /// `diff.renames`, can turn that off).
    pub(super) async fn staged_renamed(
        &self,
        state: &State,
    ) -> Result<Vec<(char, String, u32)>, Out> {
        let repo = &self.repo;
        let mut setting = None;
        for key in ["status.renames", "diff.renames"] {
            if let Some(value) = repo.config_value(key).await {
                setting = Some((key, value));
                break;
            }
        }
        let detect = match &setting {
            None => true,
            Some((key, value))
                if matches!(value.to_ascii_lowercase().as_str(), "copies" | "copy") =>
            {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: {key}={value} (copy detection)"
                )))
            }
            Some((key, _)) => repo.config_bool(key, true).await,
        };
        let mut staged: Vec<(char, String, u32)> =
            state.staged().into_iter().map(|(c, p)| (c, p, 0)).collect();
        let has = |code: char| staged.iter().any(|(c, _, _)| *c == code);
        if detect && has('A') && has('D') {
            let mut sides = Vec::new();
            for (code, path, _) in staged.iter().filter(|(c, _, _)| matches!(c, 'A' | 'D')) {
                let blob = match code {
                    'A' => state.index[path].blob.clone(),
                    _ => state.head_files[path].clone(),
                };
                let bytes = repo.blob(&blob.oid).await.map_err(failed)?;
                let side = Some((blob, bytes));
                let (old, new) = match code {
                    'A' => (None, side),
                    _ => (side, None),
                };
                sides.push(Change {
                    quote_high: self.quote_high,
                    path: path.clone(),
                    from: None,
                    similarity: 0,
                    copied: false,
                    driver: crate::userdiff::Driver::Default,
                    old,
                    new,
                });
            }
            let renamed: Vec<(String, String, u32)> = diff::with_renames(sides)
                .into_iter()
                .filter_map(|c| Some((c.from?, c.path, c.similarity)))
                .collect();
            staged.retain(|(_, path, _)| {
                !renamed
                    .iter()
                    .any(|(from, to, _)| path == from || path == to)
            });
            staged.extend(
                renamed
                    .into_iter()
                    .map(|(from, to, similarity)| ('R', format!("{from} -> {to}"), similarity)),
            );
        }
        staged.sort_by(|a, b| sort_key(&a.1).cmp(sort_key(&b.1)));
        Ok(staged)
    }

    pub(super) async fn status(&self, args: &[String]) -> Run {
        // `-u<mode>` is one option, not bundled letters.
        let mut mode_given = None;
        let args: Vec<String> = args
            .iter()
            .filter(|a| {
                match a
                    .strip_prefix("-u")
                    .or_else(|| a.strip_prefix("--untracked-files="))
                {
                    Some(mode @ ("no" | "normal" | "all")) => {
                        mode_given = Some(mode.to_string());
                        false
                    }
                    _ => true,
                }
            })
            .cloned()
            .collect();
        let args = Args::parse(
            &args,
            &Spec {
                command: "status",
                flags: &[
                    "-s",
                    "--short",
                    "--long",
                    "--porcelain",
                    "--porcelain=v1",
                    "--porcelain=1",
                    "--porcelain=v2",
                    "--porcelain=2",
                    "-b",
                    "--branch",
                    "-u",
                    "--untracked-files",
                ],
                valued: &[],
            },
        )?;
        let specs = self.specs(&args.operands, &args.paths)?;
        let state = self.state().await?;
        let untracked_mode = match mode_given.as_deref() {
            Some(mode) => mode,
            None if args.has(&["-u", "--untracked-files"]) => "all",
            None => "normal",
        };
        let mut untracked = match untracked_mode {
            "no" => Vec::new(),
            "all" => state.untracked_files(),
            _ => state.untracked(),
        };
        // With paths, only what they match: untracked directories are
        // collapsed as the whole tree has them, the rest is compared
        // within the paths (a rename from outside them is a new file).
        let state = match specs.is_empty() {
            true => state,
            false => {
                // (A glob looks inside untracked directories in git.)
                let glob = specs.iter().any(|s| s.contains(['*', '?', '[']));
                if let Some(inside) = untracked.iter().find(|u| {
                    u.ends_with('/') && (glob || specs.iter().any(|s| s.starts_with(u.as_str())))
                }) {
                    return Err(Out::fatal(format!(
                        "not supported by the sandbox's git: status of a path inside the untracked directory {inside}"
                    )));
                }
                untracked.retain(|u| Self::any_match(&specs, u.trim_end_matches('/')));
                state.within(|path| Self::any_match(&specs, path))
            }
        };
        if args.has(&["--porcelain=v2", "--porcelain=2"]) {
            return Ok(Out::ok(
                self.status_v2(&state, &untracked, args.has(&["-b", "--branch"]))
                    .await?,
            ));
        }
        let porcelain = args.has(&["--porcelain", "--porcelain=v1", "--porcelain=1"]);
        let short = porcelain || args.has(&["-s", "--short"]);
        if !short {
            let hidden = untracked_mode == "no";
            return Ok(Out::ok(
                self.long_status_with(&state, Some(&untracked), hidden)
                    .await?,
            ));
        }
        // Porcelain paths are the repository's; short ones the caller's.
        let shown = |path: &str| -> String {
            if porcelain {
                path.split(" -> ")
                    .map(|p| text::quote_spaced(p, self.quote_high).into_owned())
                    .collect::<Vec<_>>()
                    .join(" -> ")
            } else {
                self.shown_as(path, true)
            }
        };
        let mut out = String::new();
        if args.has(&["-b", "--branch"]) {
            match (self.branch_name().await, &state.head) {
                (Some(branch), None) => {
                    let _ = writeln!(out, "## No commits yet on {branch}");
                }
                (Some(branch), Some(head)) => {
                    let _ = write!(out, "## {branch}");
                    if let Some((upstream, there)) = self.repo.upstream(&branch).await {
                        let _ = write!(out, "...{upstream}");
                        match there {
                            None => out.push_str(" [gone]"),
                            Some(there) => {
                                let (ahead, behind) = self.ahead_behind(head, &there).await;
                                match (ahead, behind) {
                                    (0, 0) => {}
                                    (a, 0) => {
                                        let _ = write!(out, " [ahead {a}]");
                                    }
                                    (0, b) => {
                                        let _ = write!(out, " [behind {b}]");
                                    }
                                    (a, b) => {
                                        let _ = write!(out, " [ahead {a}, behind {b}]");
                                    }
                                }
                            }
                        }
                    }
                    out.push('\n');
                }
                (None, _) => out.push_str("## HEAD (no branch)\n"),
            }
        }
        // By path: the staged change's code, then the unstaged one's.
        let mut codes: BTreeMap<String, (char, char, String)> = BTreeMap::new();
        for (code, shown, _) in self.staged_renamed(&state).await? {
            let key = sort_key(&shown).to_string();
            codes.entry(key).or_insert((' ', ' ', shown)).0 = code;
        }
        for (code, path) in state.unstaged() {
            codes.entry(path.clone()).or_insert((' ', ' ', path)).1 = code;
        }
        let mut lines: Vec<(String, String)> = codes
            .into_iter()
            .map(|(key, (x, y, path))| {
                let display = match path.split_once(" -> ") {
                    Some((from, to)) => format!("{} -> {}", shown(from), shown(to)),
                    None => shown(&path),
                };
                (key, format!("{x}{y} {display}"))
            })
            .collect();
        for (path, stages) in &state.unmerged {
            lines.push((
                path.clone(),
                format!("{} {}", unmerged_code(stages).0, shown(path)),
            ));
        }
        lines.sort();
        for (_, line) in lines {
            let _ = writeln!(out, "{line}");
        }
        for path in &untracked {
            let _ = writeln!(out, "?? {}", shown(path));
        }
        Ok(Out::ok(out))
    }

    /// `status --porcelain=v2`: each changed path with its modes and
    /// object names in `HEAD`, the index and the work tree.
    pub(super) async fn status_v2(
        &self,
        state: &State,
        untracked: &[String],
        branch: bool,
    ) -> Result<String, Out> {
        let mut out = String::new();
        if branch {
            match &state.head {
                Some(head) => {
                    let _ = writeln!(out, "# branch.oid {head}");
                }
                None => out.push_str("# branch.oid (initial)\n"),
            }
            match self.branch_name().await {
                Some(name) => {
                    let _ = writeln!(out, "# branch.head {name}");
                    if let Some((upstream, there)) = self.repo.upstream(&name).await {
                        let _ = writeln!(out, "# branch.upstream {upstream}");
                        if let (Some(there), Some(head)) = (there, &state.head) {
                            let (a, b) = self.ahead_behind(head, &there).await;
                            let _ = writeln!(out, "# branch.ab +{a} -{b}");
                        }
                    }
                }
                None => out.push_str("# branch.head (detached)\n"),
            }
        }
        let zero = crate::repo::NULL_OID;
        let quote = |path: &str| text::quote_path(path, self.quote_high).into_owned();
        let mut lines: BTreeMap<String, String> = BTreeMap::new();
        // Each path's staged and unstaged codes, and a rename's source and likeness.
        type Renamed = Option<(String, u32)>;
        let mut codes: BTreeMap<String, (char, char, Renamed)> = BTreeMap::new();
        for (code, shown, similarity) in self.staged_renamed(state).await? {
            match shown.split_once(" -> ") {
                Some((from, to)) => {
                    codes.insert(
                        to.to_string(),
                        (code, '.', Some((from.to_string(), similarity))),
                    );
                }
                None => {
                    codes.entry(shown).or_insert(('.', '.', None)).0 = code;
                }
            }
        }
        for (code, path) in state.unstaged() {
            codes.entry(path).or_insert(('.', '.', None)).1 = code;
        }
        for (path, (x, y, from)) in codes {
            let head = state
                .head_files
                .get(from.as_ref().map_or(&path, |(from, _)| from));
            let index = state.index.get(&path).map(|e| &e.blob);
            let work = match state.work.get(&path) {
                Some(file) if y != 'D' && index.is_some() => file.mode,
                _ => 0,
            };
            let mode = |b: Option<&Blob>| b.map_or(0, |b| b.mode);
            let oid = |b: Option<&Blob>| b.map_or(zero.to_string(), |b| b.oid.clone());
            let line = match from {
                Some((from, similarity)) => format!(
                    "2 {x}{y} N... {:06o} {:06o} {work:06o} {} {} R{similarity} {}\t{}",
                    mode(head),
                    mode(index),
                    oid(head),
                    oid(index),
                    quote(&path),
                    quote(&from)
                ),
                None => format!(
                    "1 {x}{y} N... {:06o} {:06o} {work:06o} {} {} {}",
                    mode(head),
                    mode(index),
                    oid(head),
                    oid(index),
                    quote(&path)
                ),
            };
            lines.insert(path, line);
        }
        for (path, stages) in &state.unmerged {
            let blobs = self.repo.unmerged_blobs(path);
            let get = |stage: u8| blobs.iter().find(|(s, _)| *s == stage).map(|(_, b)| b);
            let mode = |b: Option<&Blob>| b.map_or(0, |b| b.mode);
            let oid = |b: Option<&Blob>| b.map_or(zero.to_string(), |b| b.oid.clone());
            let work = state.work.get(path).map_or(0, |f| f.mode);
            lines.insert(
                path.clone(),
                format!(
                    "u {} N... {:06o} {:06o} {:06o} {work:06o} {} {} {} {}",
                    unmerged_code(stages).0,
                    mode(get(1)),
                    mode(get(2)),
                    mode(get(3)),
                    oid(get(1)),
                    oid(get(2)),
                    oid(get(3)),
                    quote(path)
                ),
            );
        }
        for line in lines.into_values() {
            out.push_str(&line);
            out.push('\n');
        }
        for path in untracked {
            let _ = writeln!(out, "? {}", quote(path));
        }
        Ok(out)
    }

    /// Commits on `ours` not on `theirs`, and the other way round.
    pub(super) async fn ahead_behind(&self, ours: &str, theirs: &str) -> (usize, usize) {
        if ours == theirs {
            return (0, 0);
        }
        // Both sides walked together, newest first, each commit marked with
        // the sides that reach it; the walk ends once every commit still
        // queued is reached from both (git's way: no full history read).
        const OURS: u8 = 1;
        const THEIRS: u8 = 2;
        let repo = &self.repo;
        let mut marks: std::collections::HashMap<Oid, u8> = std::collections::HashMap::new();
        let mut queue = std::collections::BinaryHeap::new();
        for (oid, mark) in [(ours, OURS), (theirs, THEIRS)] {
            let Ok((time, parents)) = repo.commit_links(oid).await else {
                return (0, 0);
            };
            marks.insert(oid.to_string(), mark);
            queue.push((time, oid.to_string(), parents));
        }
        while queue.iter().any(|(_, oid, _)| marks[oid] != OURS | THEIRS) {
            let Some((_, oid, parents)) = queue.pop() else {
                break;
            };
            let mark = marks[&oid];
            for parent in parents {
                let before = marks.get(&parent).copied().unwrap_or(0);
                if before | mark != before {
                    marks.insert(parent.clone(), before | mark);
                    if let Ok((time, parents)) = repo.commit_links(&parent).await {
                        queue.push((time, parent, parents));
                    }
                }
            }
        }
        let count = |side: u8| marks.values().filter(|m| **m == side).count();
        (count(OURS), count(THEIRS))
    }

    /// `status`'s lines on the upstream branch, as git words them.
    pub(super) async fn tracking(&self, branch: &str, head: Option<&str>) -> String {
        let Some((upstream, there)) = self.repo.upstream(branch).await else {
            return String::new();
        };
        let (Some(there), Some(head)) = (there, head) else {
            return format!(
                "Your branch is based on '{upstream}', but the upstream is gone.\n  (use \"git branch --unset-upstream\" to fixup)\n\n"
            );
        };
        let plural = |n: usize| if n == 1 { "commit" } else { "commits" };
        match self.ahead_behind(head, &there).await {
            (0, 0) => format!("Your branch is up to date with '{upstream}'.\n\n"),
            (a, 0) => format!(
                "Your branch is ahead of '{upstream}' by {a} {}.\n  (use \"git push\" to publish your local commits)\n\n",
                plural(a)
            ),
            (0, b) => format!(
                "Your branch is behind '{upstream}' by {b} {}, and can be fast-forwarded.\n  (use \"git pull\" to update your local branch)\n\n",
                plural(b)
            ),
            (a, b) => format!(
                "Your branch and '{upstream}' have diverged,\nand have {a} and {b} different commits each, respectively.\n  (use \"git pull\" if you want to integrate the remote branch with yours)\n\n"
            ),
        }
    }

    pub(crate) async fn long_status(&self, state: &State) -> Result<String, Out> {
        self.long_status_with(state, None, false).await
    }

    /// The long status; `untracked` replaces the usual list (`-uall`,
    /// or `-uno` as an empty one).
    pub(super) async fn long_status_with(
        &self,
        state: &State,
        shown_untracked: Option<&[String]>,
        hidden: bool,
    ) -> Result<String, Out> {
        let mut out = match self.repo.head().await {
            Head::Branch(branch) => {
                let tracking = self.tracking(&branch, state.head.as_deref()).await;
                format!("On branch {branch}\n{tracking}")
            }
            Head::Detached(oid) => {
                // "at" the name it was checked out as while HEAD is still
                // there, "from" it once commits moved on.
                let name = self.repo.last_checkout().await;
                match name {
                    Some(name)
                        if self.repo.resolve_commit(&name).await.as_deref()
                            == Some(oid.as_str()) =>
                    {
                        format!("HEAD detached at {name}\n")
                    }
                    Some(name) => format!("HEAD detached from {name}\n"),
                    None => format!("HEAD detached at {}\n", self.repo.short(&oid).await),
                }
            }
        };
        let unborn = state.head.is_none();
        if unborn {
            out.push_str("\nNo commits yet\n\n");
        }
        let label = |code: char| match code {
            'A' => "new file:   ",
            'D' => "deleted:    ",
            'R' => "renamed:    ",
            _ => "modified:   ",
        };
        let staged = self.staged_renamed(state).await?;
        let unstaged = state.unstaged();
        let untracked = match shown_untracked {
            Some(list) => list.to_vec(),
            None => state.untracked(),
        };
        let repo = &self.repo;
        let merging = repo.state_file("MERGE_HEAD").await.is_some();
        let picking = repo.state_file("CHERRY_PICK_HEAD").await;
        let reverting = repo.state_file("REVERT_HEAD").await;
        let conflicts = !state.unmerged.is_empty();
        if merging && conflicts {
            out.push_str(
                "You have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\n",
            );
        } else if merging {
            out.push_str(
                "All conflicts fixed but you are still merging.\n  (use \"git commit\" to conclude merge)\n\n",
            );
        } else if let Some((oid, command, doing)) = match (&picking, &reverting) {
            (Some(oid), _) => Some((oid, "cherry-pick", "cherry-picking")),
            (None, Some(oid)) => Some((oid, "revert", "reverting")),
            _ => None,
        } {
            let short = repo.short(oid.trim()).await;
            let next = if conflicts {
                format!("fix conflicts and run \"git {command} --continue\"")
            } else {
                format!("all conflicts fixed: run \"git {command} --continue\"")
            };
            let _ = write!(
                out,
                "You are currently {doing} commit {short}.\n  ({next})\n  \
                 (use \"git {command} --skip\" to skip this patch)\n  \
                 (use \"git {command} --abort\" to cancel the {command} operation)\n\n"
            );
        }
        // Hints on unstaging are for a commit in the making, not one that
        // concludes a merge or a cherry-pick.
        let unstage_hint = if merging || picking.is_some() {
            ""
        } else if unborn {
            "  (use \"git rm --cached <file>...\" to unstage)\n"
        } else {
            "  (use \"git restore --staged <file>...\" to unstage)\n"
        };
        if !staged.is_empty() {
            out.push_str("Changes to be committed:\n");
            out.push_str(unstage_hint);
            for (code, path, _) in &staged {
                let _ = writeln!(out, "\t{}{}", label(*code), self.shown(path));
            }
            out.push('\n');
        }
        if conflicts {
            out.push_str("Unmerged paths:\n");
            out.push_str(unstage_hint);
            // git's three kinds: both deleted (only a base), deleted on
            // one side (a base and one side), and the rest.
            let (mut both_deleted, mut deleted_one_side, mut kept) = (false, false, false);
            for stages in state.unmerged.values() {
                match (
                    stages.contains(&1),
                    stages.contains(&2),
                    stages.contains(&3),
                ) {
                    (true, false, false) => both_deleted = true,
                    (true, true, false) | (true, false, true) => deleted_one_side = true,
                    _ => kept = true,
                }
            }
            out.push_str(if !both_deleted && !deleted_one_side {
                "  (use \"git add <file>...\" to mark resolution)\n"
            } else if both_deleted && !deleted_one_side && !kept {
                "  (use \"git rm <file>...\" to mark resolution)\n"
            } else {
                "  (use \"git add/rm <file>...\" as appropriate to mark resolution)\n"
            });
            for (path, stages) in &state.unmerged {
                let _ = writeln!(out, "\t{}{}", unmerged_code(stages).1, self.shown(path));
            }
            out.push('\n');
        }
        if !unstaged.is_empty() {
            out.push_str("Changes not staged for commit:\n");
            if unstaged.iter().any(|(c, _)| *c == 'D') {
                out.push_str("  (use \"git add/rm <file>...\" to update what will be committed)\n");
            } else {
                out.push_str("  (use \"git add <file>...\" to update what will be committed)\n");
            }
            out.push_str(
                "  (use \"git restore <file>...\" to discard changes in working directory)\n",
            );
            for (code, path) in &unstaged {
                let _ = writeln!(out, "\t{}{}", label(*code), self.shown(path));
            }
            out.push('\n');
        }
        if !untracked.is_empty() {
            out.push_str("Untracked files:\n");
            out.push_str("  (use \"git add <file>...\" to include in what will be committed)\n");
            for path in &untracked {
                let _ = writeln!(out, "\t{}", self.shown(path));
            }
            out.push('\n');
        }
        if staged.is_empty() {
            out.push_str(if !unstaged.is_empty() || conflicts {
                "no changes added to commit (use \"git add\" and/or \"git commit -a\")\n"
            } else if !untracked.is_empty() {
                "nothing added to commit but untracked files present (use \"git add\" to track)\n"
            } else if unborn {
                "nothing to commit (create/copy files and use \"git add\" to track)\n"
            } else if hidden {
                "nothing to commit (use -u to show untracked files)\n"
            } else {
                "nothing to commit, working tree clean\n"
            });
        }
        Ok(out)
    }

    // ---- diff, log, show ---------------------------------------------------
}
