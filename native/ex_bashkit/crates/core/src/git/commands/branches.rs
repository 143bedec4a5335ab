//! `branch` and `tag`.

use super::*;

impl Ctx<'_> {
    pub(super) async fn branch(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        args.refuse(&[
            "--sort",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--format",
            "--column",
            "-vv",
        ])?;
        // `-v -v` (or `-vv`, read as two): with upstreams, which this git
        // does not show.
        if args.flags.iter().filter(|f| **f == "-v").count() > 1 {
            return Err(Out::fatal("not supported by the sandbox's git: -vv"));
        }
        let repo = &self.repo;
        let current = self.branch_name().await;
        if args.has(&["--show-current"]) {
            return Ok(Out::ok(
                current.map(|b| format!("{b}\n")).unwrap_or_default(),
            ));
        }
        if args.has(&["-d", "-D", "--delete"]) {
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
                            "error: Cannot delete branch '{name}' checked out at '{}'\n",
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
                let _ = writeln!(out, "Deleted branch {name} (was {}).", short(&oid));
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
        match args.operands.as_slice() {
            [] => {
                let verbose = args.has(&["-v", "-vv", "--verbose"]);
                let names = repo.refs("heads").await;
                let width = names.iter().map(String::len).max().unwrap_or(0);
                let mut out = String::new();
                if let (None, Some(head)) = (&current, repo.head_commit().await) {
                    let _ = writeln!(out, "* (HEAD detached at {})", short(&head));
                }
                let remotes = args.has(&["-a", "--all", "-r", "--remotes"]);
                let locals = !args.has(&["-r", "--remotes"]);
                let mut listed: Vec<(String, Option<String>)> = Vec::new();
                if locals {
                    listed.extend(names.into_iter().map(|n| (n, None)));
                }
                if remotes {
                    let prefix = if locals { "remotes/" } else { "" };
                    for name in repo.refs("remotes").await {
                        let target = repo
                            .symref_target(&format!("refs/remotes/{name}"))
                            .await
                            .and_then(|t| t.strip_prefix("refs/remotes/").map(str::to_string));
                        listed.push((format!("{prefix}{name}"), target));
                    }
                }
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
                    if verbose {
                        let oid = match name.strip_prefix("remotes/") {
                            Some(remote) => repo.read_ref(&format!("refs/remotes/{remote}")).await,
                            None => repo.branch(&name).await,
                        }
                        .unwrap_or_default();
                        let subject = repo
                            .commit(&oid)
                            .await
                            .map(|c| c.subject().to_string())
                            .unwrap_or_default();
                        let _ = writeln!(out, "{mark} {name:<width$} {} {subject}", short(&oid));
                    } else {
                        let _ = writeln!(out, "{mark} {name}");
                    }
                }
                Ok(Out::ok(out))
            }
            [name, rest @ ..] => {
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

    pub(super) async fn tag(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-m", "--message"]])?;
        args.refuse(&[
            "--sort",
            "--contains",
            "--no-contains",
            "--points-at",
            "--merged",
            "--no-merged",
            "--format",
            "-n",
            "-s",
            "--sign",
            "-u",
            "--local-user",
            "--column",
            "-i",
            "--ignore-case",
        ])?;
        let repo = &self.repo;
        if args.has(&["-d", "--delete"]) {
            let mut out = String::new();
            for name in &args.operands {
                let Some(oid) = repo.tag(name).await else {
                    return Err(Out::error(format!("error: tag '{name}' not found.\n"), 1));
                };
                repo.delete_ref("tags", name).await.map_err(failed)?;
                let _ = writeln!(out, "Deleted tag '{name}' (was {})", short(&oid));
            }
            return Ok(Out::ok(out));
        }
        match args.operands.as_slice() {
            [] => Ok(Out::ok(
                repo.refs("tags")
                    .await
                    .iter()
                    .map(|t| format!("{t}\n"))
                    .collect::<String>(),
            )),
            [name, rest @ ..] => {
                if repo.tag(name).await.is_some() && !args.has(&["-f"]) {
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
