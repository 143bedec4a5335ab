//! `branch` and `tag`.

use super::listing;
use super::*;

impl Ctx<'_> {
    pub(super) async fn branch(&self, args: &[String]) -> Run {
        let args = listing::with_default_commits(args, &listing::REACH_OPTIONS[..4]);
        let args = Args::parse(
            &args,
            &Spec {
                command: "branch",
                flags: &[
                    "--show-current",
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-v",
                    "--verbose",
                    "-a",
                    "--all",
                    "-r",
                    "--remotes",
                    "-f",
                    "--force",
                    "-l",
                    "--list",
                ],
                valued: &[
                    &["--sort"],
                    &["--contains"],
                    &["--no-contains"],
                    &["--merged"],
                    &["--no-merged"],
                    &["--points-at"],
                ],
            },
        )?;
        let mut reach = listing::Reach::of(self, &args).await?;
        // `-v -v` (or `-vv`, read as two): each branch's upstream too.
        let verbosity = args
            .flags
            .iter()
            .filter(|f| ["-v", "--verbose"].contains(*f))
            .count();
        let repo = &self.repo;
        let current = self.branch_name().await;
        if args.has(&["--show-current"]) {
            return Ok(Out::ok(
                current.map(|b| format!("{b}\n")).unwrap_or_default(),
            ));
        }
        if args.has(&["-d", "-D", "--delete"]) {
            if args.operands.is_empty() {
                return Err(Out::fatal("branch name required"));
            }
            let mut out = String::new();
            for name in &args.operands {
                let Some(oid) = repo.branch(name).await else {
                    return Err(Out::error(
                        format!("error: branch '{name}' not found.\n"),
                        1,
                    ));
                };
                if current.as_deref() == Some(*name) {
                    return Err(Out::error(
                        format!(
                            "error: cannot delete branch '{name}' used by worktree at '{}'\n",
                            repo.root.display()
                        ),
                        1,
                    ));
                }
                if args.has(&["-d"]) {
                    if let Some(head) = repo.head_commit().await {
                        if !repo.ancestors(&head).await.contains(&oid) {
                            return Err(Out::error(
                                format!(
                                    "error: The branch '{name}' is not fully merged.\n\
                                     If you are sure you want to delete it, run 'git branch -D {name}'.\n"
                                ),
                                1,
                            ));
                        }
                    }
                }
                repo.delete_ref("heads", name).await.map_err(failed)?;
                let _ = writeln!(
                    out,
                    "Deleted branch {name} (was {}).",
                    self.repo.short(&oid).await
                );
            }
            return Ok(Out::ok(out));
        }
        if args.has(&["-m", "-M", "--move"]) {
            let (old, new) = match args.operands.as_slice() {
                [new] => (current.clone().unwrap_or_default(), new.to_string()),
                [old, new] => (old.to_string(), new.to_string()),
                _ => return Err(Out::fatal("branch name required")),
            };
            check_branch_name(&new)?;
            if old != new && repo.branch(&new).await.is_some() && !args.has(&["-M"]) {
                return Err(Out::fatal(format!("a branch named '{new}' already exists")));
            }
            match repo.branch(&old).await {
                Some(oid) if old != new => {
                    // The branch's reflog and config go with it, as git moves them.
                    let log = repo.state_file(&format!("logs/refs/heads/{old}")).await;
                    repo.set_ref("heads", &new, &oid).await.map_err(failed)?;
                    repo.delete_ref("heads", &old).await.map_err(failed)?;
                    if let Some(log) = log {
                        repo.write_state_file(&format!("logs/refs/heads/{new}"), &log)
                            .await
                            .map_err(failed)?;
                        repo.log_update(
                            &format!("refs/heads/{new}"),
                            Some(&oid),
                            &oid,
                            &format!("Branch: renamed refs/heads/{old} to refs/heads/{new}"),
                        )
                        .await
                        .map_err(failed)?;
                    }
                    let text = repo.config_text().await;
                    if let Some(text) = config::rename_section(
                        &text,
                        &format!("branch.{old}"),
                        &format!("branch.{new}"),
                    ) {
                        repo.save_config_text(&text).await.map_err(failed)?;
                    }
                }
                Some(_) => {}
                None if current.as_deref() == Some(old.as_str()) => {}
                None => {
                    return Err(Out::error(
                        format!("error: refname refs/heads/{old} not found\n"),
                        1,
                    ))
                }
            }
            if current.as_deref() == Some(old.as_str()) {
                repo.set_head_branch(&new).await.map_err(failed)?;
            }
            return Ok(Out::ok(""));
        }
        let listing = args.has(&["-l", "--list"]) || verbosity > 0 || reach.is_some();
        match args.operands.as_slice() {
            patterns if listing || patterns.is_empty() => {
                let wanted = |name: &str| {
                    patterns.is_empty() || patterns.iter().any(|p| text::glob(p, name))
                };
                let mut out = String::new();
                if let (None, Some(head)) = (&current, repo.head_commit().await) {
                    let shown = match reach.as_mut() {
                        Some(reach) => reach.keeps(repo, &head).await,
                        None => true,
                    };
                    if shown {
                        let _ =
                            writeln!(out, "* (HEAD detached at {})", self.repo.short(&head).await);
                    }
                }
                let remotes = args.has(&["-a", "--all", "-r", "--remotes"]);
                let locals = !args.has(&["-r", "--remotes"]);
                let mut listed: Vec<(String, Option<String>)> = Vec::new();
                if locals {
                    let names = repo.refs("heads").await;
                    listed.extend(names.into_iter().filter(|n| wanted(n)).map(|n| (n, None)));
                }
                if remotes {
                    let prefix = if locals { "remotes/" } else { "" };
                    for name in repo.refs("remotes").await {
                        if !wanted(&name) {
                            continue;
                        }
                        let target = repo
                            .symref_target(&format!("refs/remotes/{name}"))
                            .await
                            .and_then(|t| t.strip_prefix("refs/remotes/").map(str::to_string));
                        listed.push((format!("{prefix}{name}"), target));
                    }
                }
                if let Some(reach) = reach.as_mut() {
                    let mut kept = Vec::with_capacity(listed.len());
                    for (name, target) in listed {
                        let full = match name.strip_prefix("remotes/") {
                            Some(remote) => format!("refs/remotes/{remote}"),
                            None if locals => format!("refs/heads/{name}"),
                            None => format!("refs/remotes/{name}"),
                        };
                        // A remote's HEAD (a link) is listed with what it names.
                        let oid = repo.read_ref(&full).await.unwrap_or_default();
                        if reach.keeps(repo, &oid).await {
                            kept.push((name, target));
                        }
                    }
                    listed = kept;
                }
                if let Some(keys) = args.value("--sort") {
                    let full = |name: &str| match name.strip_prefix("remotes/") {
                        Some(_) => format!("refs/{name}"),
                        None if locals => format!("refs/heads/{name}"),
                        None => format!("refs/remotes/{name}"),
                    };
                    let keys: Vec<&str> = keys.split('\n').collect();
                    let names = listed.iter().map(|(n, _)| full(n)).collect();
                    let mut items = self.listed(names, "", &keys).await?;
                    listing::sort_listed(&mut items, &keys)?;
                    let order: Vec<String> = items.into_iter().map(|i| i.name).collect();
                    listed.sort_by_key(|(name, _)| order.iter().position(|o| *o == full(name)));
                }
                // git aligns the names of the branches it lists, links aside.
                let width = listed
                    .iter()
                    .filter(|(_, target)| target.is_none())
                    .map(|(name, _)| name.len())
                    .max()
                    .unwrap_or(0);
                for (name, target) in listed {
                    if let Some(target) = target {
                        let _ = writeln!(out, "  {name} -> {target}");
                        continue;
                    }
                    let mark = if locals && current.as_deref() == Some(name.as_str()) {
                        '*'
                    } else {
                        ' '
                    };
                    if verbosity > 0 {
                        let oid = match name.strip_prefix("remotes/") {
                            Some(remote) => repo.read_ref(&format!("refs/remotes/{remote}")).await,
                            None => repo.branch(&name).await,
                        }
                        .unwrap_or_default();
                        let subject = repo
                            .commit(&oid)
                            .await
                            .map(|c| c.subject())
                            .unwrap_or_default();
                        let tracking = match name.starts_with("remotes/") || !locals {
                            true => String::new(),
                            false => self.upstream_mark(&name, &oid, verbosity > 1).await,
                        };
                        let _ = writeln!(
                            out,
                            "{mark} {name:<width$} {} {tracking}{subject}",
                            self.repo.short(&oid).await
                        );
                    } else {
                        let _ = writeln!(out, "{mark} {name}");
                    }
                }
                Ok(Out::ok(out))
            }
            names => {
                let (name, rest) = names.split_first().expect("a name");
                check_branch_name(name)?;
                if repo.branch(name).await.is_some() && !args.has(&["-f", "--force"]) {
                    return Err(Out::fatal(format!(
                        "a branch named '{name}' already exists"
                    )));
                }
                let start = rest.first().copied().unwrap_or("HEAD");
                let Some(oid) = repo.resolve_commit(start).await else {
                    return Err(Out::fatal(format!("not a valid object name: '{start}'")));
                };
                repo.set_ref("heads", name, &oid).await.map_err(failed)?;
                Ok(Out::ok(""))
            }
        }
    }

    /// `branch -v`'s `[ahead 1, behind 2] ` for a branch with an
    /// upstream; `-vv`'s names the upstream too (`[origin/main: ahead 1] `).
    async fn upstream_mark(&self, branch: &str, oid: &str, named: bool) -> String {
        let Some((upstream, there)) = self.repo.upstream(branch).await else {
            return String::new();
        };
        let counts = match there {
            None => "gone".to_string(),
            Some(there) => match self.ahead_behind(oid, &there).await {
                (0, 0) => String::new(),
                (a, 0) => format!("ahead {a}"),
                (0, b) => format!("behind {b}"),
                (a, b) => format!("ahead {a}, behind {b}"),
            },
        };
        match (named, counts.is_empty()) {
            (true, true) => format!("[{upstream}] "),
            (true, false) => format!("[{upstream}: {counts}] "),
            (false, true) => String::new(),
            (false, false) => format!("[{counts}] "),
        }
    }

    pub(super) async fn tag(&self, args: &[String]) -> Run {
        let args = listing::with_default_commits(args, &listing::REACH_OPTIONS);
        let args = Args::parse(
            &args,
            &Spec {
                command: "tag",
                flags: &[
                    "-d",
                    "--delete",
                    "-f",
                    "--force",
                    "-a",
                    "--annotate",
                    "-l",
                    "--list",
                    "-n",
                    "-n<n>",
                ],
                valued: &[
                    &["-m", "--message"],
                    &["--sort"],
                    &["--format"],
                    &["--contains"],
                    &["--no-contains"],
                    &["--merged"],
                    &["--no-merged"],
                    &["--points-at"],
                ],
            },
        )?;
        let repo = &self.repo;
        let mut reach = listing::Reach::of(self, &args).await?;
        if args.has(&["-d", "--delete"]) {
            let mut out = String::new();
            for name in &args.operands {
                let Some(oid) = repo.tag(name).await else {
                    return Err(Out::error(format!("error: tag '{name}' not found.\n"), 1));
                };
                repo.delete_ref("tags", name).await.map_err(failed)?;
                let _ = writeln!(
                    out,
                    "Deleted tag '{name}' (was {})",
                    self.repo.short(&oid).await
                );
            }
            return Ok(Out::ok(out));
        }
        // `-n[N]`: each tag's first N lines of message (of the commit, for
        // a tag that is no tag object) beside its name.
        let lines = match args.has(&["-n"]) {
            true => Some(1),
            false => args.numbered("-n"),
        };
        // A filter or `-n` means a list, as in git.
        let listing = args.has(&["-l", "--list"]) || reach.is_some() || lines.is_some();
        let making = args.has(&["-a", "--annotate", "-f", "--force"]) || args.value("-m").is_some();
        if making && !listing && args.operands.is_empty() {
            return Err(Out::error(
                "usage: git tag [-a] [-f] [-m <msg>] <tagname> [<head>]\n",
                129,
            ));
        }
        match args.operands.as_slice() {
            patterns if listing || patterns.is_empty() => {
                let mut names = Vec::new();
                for tag in repo.refs("tags").await {
                    if !(patterns.is_empty() || patterns.iter().any(|p| text::glob(p, &tag))) {
                        continue;
                    }
                    if let Some(reach) = reach.as_mut() {
                        let oid = repo.tag(&tag).await.unwrap_or_default();
                        if !reach.keeps(repo, &oid).await {
                            continue;
                        }
                    }
                    names.push(format!("refs/tags/{tag}"));
                }
                let keys: Vec<&str> = args
                    .value("--sort")
                    .map_or(Vec::new(), |k| k.split('\n').collect());
                // git's format for `-n`: `%(align:15)%(refname:lstrip=2)%(end)
                // %(contents:lines=N)`.
                let with_lines = lines.filter(|n| *n > 0 && args.value("--format").is_none());
                let format = match with_lines {
                    Some(_) => "%(refname:strip=2)%(contents)",
                    None => args.value("--format").unwrap_or("%(refname:strip=2)"),
                };
                let mut items = self.listed(names, format, &keys).await?;
                listing::sort_listed(&mut items, &keys)?;
                let shown = Shown::of(repo, &args).await?;
                let mut out = String::new();
                for item in &items {
                    let line = match with_lines {
                        Some(n) => format!(
                            "{:<15} {}",
                            item.name.trim_start_matches("refs/tags/"),
                            listing::contents_lines(item, n)
                        ),
                        None => listing::format_listed(item, format, &shown, None, None)?,
                    };
                    let _ = writeln!(out, "{line}");
                }
                Ok(Out::ok(out))
            }
            names => {
                let (name, rest) = names.split_first().expect("a name");
                if repo.tag(name).await.is_some() && !args.has(&["-f", "--force"]) {
                    return Err(Out::fatal(format!("tag '{name}' already exists")));
                }
                check_branch_name(name)?;
                let mut oid = self.object(rest.first().copied().unwrap_or("HEAD")).await?;
                let annotated = args.has(&["-a", "--annotate"]) || args.value("-m").is_some();
                if annotated {
                    let message = text::clean_message(args.value("-m").unwrap_or(""));
                    if message.is_empty() {
                        return Err(Out::fatal("no tag message given (use -m)"));
                    }
                    let (kind, _) = repo.read_object(&oid).await.map_err(failed)?;
                    let (tagger, when) = repo.identity("COMMITTER").await;
                    let body = format!(
                        "object {oid}\ntype {kind}\ntag {name}\ntagger {tagger} {when}\n\n{message}"
                    );
                    oid = repo
                        .write_object("tag", body.as_bytes())
                        .await
                        .map_err(failed)?;
                }
                repo.set_ref("tags", name, &oid).await.map_err(failed)?;
                Ok(Out::ok(""))
            }
        }
    }

    // ---- plumbing an agent uses ----------------------------------------------
}
