//! Commands on the repository itself rather than its content: `init`, `config`, `remote` (and, in a build without the network part, what the network commands answer).

use super::*;

pub(super) async fn init(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "init",
            flags: &["-q", "--quiet"],
            valued: &[&["-b", "--initial-branch"]],
        },
    )?;
    let root = match args.operands.first() {
        Some(dir) => resolve(&here.cwd, dir),
        None => here.cwd.clone(),
    };
    Repo::outside_git_dirs(&root).map_err(failed)?;
    here.fs
        .mkdir(&root, true)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let (repo, existed) = Repo::init(here, &root).await.map_err(failed)?;
    let quiet = args.has(&["-q", "--quiet"]);
    // git names the branch (and advises) again on a repository that
    // exists, though it leaves that one's HEAD as it is.
    let (branch, advice) = match args.value("-b") {
        Some(branch) => (branch.to_string(), None),
        None => Repo::initial_branch(here),
    };
    let advice = advice.filter(|_| !quiet);
    if !existed {
        repo.set_head_branch(&branch).await.map_err(failed)?;
    }
    let advice = advice.unwrap_or_default();
    if quiet {
        return Ok(Out::ok("").with_stderr(advice.to_string()));
    }
    let verb = if existed {
        "Reinitialized existing"
    } else {
        "Initialized empty"
    };
    Ok(Out::ok(format!(
        "{verb} Git repository in {}/\n",
        repo.git.display()
    ))
    .with_stderr(advice.to_string()))
}

/// A build without the network part: the URL a network command names,
/// checked against `:allow_net`, and no transport to reach it.
#[cfg(not(feature = "network"))]
pub(super) async fn remote_io(here: &Here<'_>, command: &str, args: &[String]) -> Run {
    // Whatever it is given, this build refuses the command.
    let args = Args::split(
        args,
        &[&["-b", "--branch"], &["--depth"], &["-o", "--origin"]],
        None,
    )?;
    let named = args.operands.first().copied().unwrap_or("origin");
    let url = if command == "clone" || named.contains("://") || named.contains('@') {
        named.to_string()
    } else {
        let repo = Repo::discover(here, &here.cwd).await;
        let config = match &repo {
            Some(repo) => repo.config().await,
            None => Vec::new(),
        };
        match config
            .iter()
            .find(|(k, _)| *k == format!("remote.{named}.url"))
        {
            Some((_, url)) => url.clone(),
            None if crate::is_path_remote(named) => return Err(crate::path_remote_refused(named)),
            None => {
                return Err(Out::fatal(format!(
                    "'{named}' does not appear to be a git repository"
                )))
            }
        }
    };
    crate::check_allowed(here.git, &url)?;
    Err(Out::fatal(format!(
        "unable to access '{url}': the sandbox's git has no network transport; \
         put the repository's files in the session instead (write_file/3, mounts)"
    )))
}

pub(super) async fn config(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "config",
            // The other files git reads are named to be refused below.
            flags: &[
                "--local",
                "--get",
                "--get-all",
                "--list",
                "-l",
                "--add",
                "--unset",
                "--unset-all",
                "--global",
                "--system",
                "--worktree",
            ],
            valued: &[&["--file", "-f"], &["--blob"]],
        },
    )?;
    // Only the repository's own config is ours to edit (and checked for
    // keys that run programs): never another file git reads.
    for other in [
        "--file",
        "-f",
        "--global",
        "--system",
        "--worktree",
        "--blob",
    ] {
        if args.has(&[other]) || args.value(other).is_some() {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: {other} (it edits the repository's config only)"
            )));
        }
    }
    let Some(repo) = Repo::discover(here, &here.cwd).await else {
        return Err(Out::fatal("not in a git directory"));
    };
    let text = repo.config_text().await;
    // What is read includes `git -c`'s settings; what is unset is the file's.
    let entries = repo.config().await;
    if args.has(&["--list", "-l"]) {
        let text: String = entries.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        return Ok(Out::ok(text));
    }
    let name = args.operands.first().map(|n| config::canonical(n));
    if args.has(&["--unset", "--unset-all"]) {
        let name = name.unwrap_or_default();
        let values = config::parse(&text)
            .iter()
            .filter(|(k, _)| *k == name)
            .count();
        if values > 1 && !args.has(&["--unset-all"]) {
            return Err(Out::error(
                format!("warning: {name} has multiple values\n"),
                5,
            ));
        }
        let Some(edited) = config::unset(&text, &name) else {
            return Err(Out::error("", 5));
        };
        repo.save_config_text(&edited).await.map_err(failed)?;
        return Ok(Out::ok(""));
    }
    if args.has(&["--get-all"]) {
        let name = name.unwrap_or_default();
        let values: String = entries
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| format!("{v}\n"))
            .collect();
        return match values.is_empty() {
            true => Err(Out::error("", 1)),
            false => Ok(Out::ok(values)),
        };
    }
    match args.operands.as_slice() {
        [_, _, ..] if args.has(&["--get"]) => Err(Out::fatal(
            "not supported by the sandbox's git: --get with a value pattern",
        )),
        [_] => {
            let name = name.unwrap_or_default();
            match entries.iter().rev().find(|(k, _)| *k == name) {
                Some((_, value)) => Ok(Out::ok(format!("{value}\n"))),
                None => Err(Out::error("", 1)),
            }
        }
        [key, value] => {
            if !key.contains('.') {
                return Err(Out::error(
                    format!("error: key does not contain a section: {key}\n"),
                    2,
                ));
            }
            let edited = if args.has(&["--add"]) {
                config::add(&text, key, value)
            } else {
                config::set(&text, key, value)
            };
            repo.save_config_text(&edited).await.map_err(failed)?;
            Ok(Out::ok(""))
        }
        _ => Err(Out::error(
            "usage: git config [--add | --unset | --get-all] <name> [<value>]\n",
            129,
        )),
    }
}

pub(super) async fn remote(here: &Here<'_>, args: &[String]) -> Run {
    let Some(repo) = Repo::discover(here, &here.cwd).await else {
        return Err(Out::fatal(
            "not a git repository (or any of the parent directories): .git",
        ));
    };
    let text = repo.config_text().await;
    let remotes: Vec<(String, String)> = config::parse(&text)
        .into_iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("remote.")?.strip_suffix(".url")?;
            Some((name.to_string(), v))
        })
        .collect();
    let settings: Vec<(String, String)> = repo
        .config()
        .await
        .into_iter()
        .map(|(k, v)| (config::canonical(&k), v))
        .collect();
    let described = RemoteSettings::all(&settings);
    match args.first().map(String::as_str) {
        // Sorted by name, as git lists them.
        None => Ok(Out::ok(
            described
                .keys()
                .map(|n| format!("{n}\n"))
                .collect::<String>(),
        )),
        Some("-v") => Ok(Out::ok(
            described
                .iter()
                .map(|(name, remote)| {
                    let mut lines = String::new();
                    if let Some(url) = remote.urls.first() {
                        let _ = write!(lines, "{name}\t{url} (fetch)");
                        if let Some(filter) = &remote.filter {
                            let _ = write!(lines, " [{filter}]");
                        }
                        lines.push('\n');
                    }
                    for url in remote.push_urls() {
                        let _ = writeln!(lines, "{name}\t{url} (push)");
                    }
                    lines
                })
                .collect::<String>(),
        )),
        Some("show") => {
            let (no_query, names): (Vec<&String>, Vec<&String>) =
                args[1..].iter().partition(|a| a.starts_with('-'));
            if let Some(option) = no_query.iter().find(|a| a.as_str() != "-n") {
                return Err(Out::error(
                    format!("error: unknown switch `{}'\nusage: git remote show [<options>] <name>...\n", option.trim_start_matches('-')),
                    129,
                ));
            }
            if names.is_empty() {
                return Ok(Out::ok(
                    described.keys().map(|n| format!("{n}\n")).collect::<String>(),
                ));
            }
            if no_query.is_empty() {
                return Err(Out::fatal(
                    "not supported by the sandbox's git: remote show without -n (asking the remote); git remote show -n NAME shows what the repository knows",
                ));
            }
            let refs = repo.all_refs().await;
            let mut out = String::new();
            for name in names {
                let remote = described.get(name.as_str()).cloned().unwrap_or_else(|| RemoteSettings {
                    urls: vec![name.to_string()],
                    ..RemoteSettings::default()
                });
                remote.show_unqueried(name, &settings, &refs, &repo, &mut out).await;
            }
            Ok(Out::ok(out))
        }
        Some("add") if args.len() == 3 => {
            let name = &args[1];
            if remotes.iter().any(|(n, _)| n == name) {
                return Err(Out::error(
                    format!("error: remote {name} already exists.\n"),
                    3,
                ));
            }
            let edited = config::add(&text, &format!("remote.{name}.url"), &args[2]);
            let edited = config::add(
                &edited,
                &format!("remote.{name}.fetch"),
                &format!("+refs/heads/*:refs/remotes/{name}/*"),
            );
            repo.save_config_text(&edited).await.map_err(failed)?;
            Ok(Out::ok(""))
        }
        Some("remove" | "rm") if args.len() == 2 => {
            let Some(edited) = config::remove_section(&text, &format!("remote.{}", args[1])) else {
                return Err(Out::error(
                    format!("error: No such remote: '{}'\n", args[1]),
                    2,
                ));
            };
            repo.save_config_text(&edited).await.map_err(failed)?;
            for name in repo.refs(&format!("remotes/{}", args[1])).await {
                repo.delete_ref(&format!("remotes/{}", args[1]), &name)
                    .await
                    .map_err(failed)?;
            }
            Ok(Out::ok(""))
        }
        Some("get-url") if args.len() == 2 => match remotes.iter().find(|(n, _)| *n == args[1]) {
            Some((_, url)) => Ok(Out::ok(format!("{url}\n"))),
            None => Err(Out::error(
                format!("error: No such remote '{}'\n", args[1]),
                2,
            )),
        },
        Some("set-url") if args.len() == 3 => {
            if !remotes.iter().any(|(n, _)| *n == args[1]) {
                return Err(Out::error(
                    format!("error: No such remote '{}'\n", args[1]),
                    2,
                ));
            }
            let edited = config::set(&text, &format!("remote.{}.url", args[1]), &args[2]);
            repo.save_config_text(&edited).await.map_err(failed)?;
            Ok(Out::ok(""))
        }
        // What git's `remote` has and ours has not: refused by name.
        Some(sub @ ("prune" | "update" | "set-head" | "set-branches" | "rename")) => {
            Err(Out::fatal(format!(
                "not supported by the sandbox's git: remote {sub}"
            )))
        }
        Some(sub @ ("add" | "remove" | "rm" | "get-url" | "set-url"))
            if args.iter().skip(1).any(|a| a.starts_with('-')) =>
        {
            let option = args.iter().skip(1).find(|a| a.starts_with('-')).unwrap_or(&args[0]);
            Err(Out::fatal(format!(
                "not supported by the sandbox's git: remote {sub} {option}"
            )))
        }
        _ => Err(Out::error(
            "usage: git remote [-v | add <name> <url> | remove <name> | get-url <name> | set-url <name> <url>]\n",
            129,
        )),
    }
}

/// What the config says of one remote.
#[derive(Clone, Default)]
struct RemoteSettings {
    urls: Vec<String>,
    push_urls: Vec<String>,
    fetch: Vec<String>,
    push: Vec<String>,
    mirror: bool,
    /// `partialclonefilter`, shown by `remote -v`.
    filter: Option<String>,
}

impl RemoteSettings {
    /// Every configured remote, by name.
    fn all(settings: &[(String, String)]) -> BTreeMap<String, RemoteSettings> {
        let mut remotes: BTreeMap<String, RemoteSettings> = BTreeMap::new();
        for (key, value) in settings {
            let Some((name, field)) = key.strip_prefix("remote.").and_then(|k| k.rsplit_once('.'))
            else {
                continue;
            };
            let remote = remotes.entry(name.to_string()).or_default();
            match field {
                "url" => remote.urls.push(value.clone()),
                "pushurl" => remote.push_urls.push(value.clone()),
                "fetch" => remote.fetch.push(value.clone()),
                "push" => remote.push.push(value.clone()),
                "partialclonefilter" => remote.filter = Some(value.clone()),
                "mirror" => {
                    remote.mirror = matches!(
                        value.to_lowercase().as_str(),
                        "true" | "yes" | "on" | "1" | ""
                    )
                }
                _ => {}
            }
        }
        remotes
    }

    /// Where it pushes: its `pushurl`s, else its `url`s.
    fn push_urls(&self) -> &[String] {
        match self.push_urls.is_empty() {
            true => &self.urls,
            false => &self.push_urls,
        }
    }

    /// The branch a remote-tracking ref follows, by the fetch refspecs
    /// (`refs/remotes/origin/main` → `main`).
    fn tracked(&self, reference: &str) -> Option<String> {
        self.fetch.iter().find_map(|spec| {
            let (src, dst) = spec.trim_start_matches('+').split_once(':')?;
            let source = match (dst.split_once('*'), src.split_once('*')) {
                (Some((before, after)), Some((src_before, src_after))) => {
                    let middle = reference.strip_prefix(before)?.strip_suffix(after)?;
                    format!("{src_before}{middle}{src_after}")
                }
                (None, _) if dst == reference => src.to_string(),
                _ => return None,
            };
            Some(
                source
                    .strip_prefix("refs/heads/")
                    .unwrap_or(&source)
                    .to_string(),
            )
        })
    }

    /// `git remote show -n NAME`: the URLs, the branches it tracks, the
    /// local branches that pull from it and what pushes to it, as the
    /// repository knows them without asking.
    async fn show_unqueried(
        &self,
        name: &str,
        settings: &[(String, String)],
        refs: &[String],
        repo: &Repo,
        out: &mut String,
    ) {
        let _ = writeln!(out, "* remote {name}");
        let _ = writeln!(
            out,
            "  Fetch URL: {}",
            self.urls.first().map_or("", String::as_str)
        );
        for url in self.push_urls() {
            let _ = writeln!(out, "  Push  URL: {url}");
        }
        if self.push_urls().is_empty() {
            out.push_str("  Push  URL: (no URL)\n");
        }
        out.push_str("  HEAD branch: (not queried)\n");
        let mut tracked = std::collections::BTreeSet::new();
        for reference in refs {
            if repo.symref_target(reference).await.is_some() {
                continue;
            }
            if let Some(branch) = self.tracked(reference) {
                tracked.insert(branch);
            }
        }
        if !tracked.is_empty() {
            let plural = if tracked.len() == 1 { "" } else { "es" };
            let _ = writeln!(out, "  Remote branch{plural}: (status not queried)");
            for branch in &tracked {
                let _ = writeln!(out, "    {branch}");
            }
        }
        // Local branches whose `branch.NAME.remote` is this one and that
        // have a `merge`, with how they pull (`branch.NAME.rebase`).
        let mut pulling: BTreeMap<String, (Vec<String>, &str)> = BTreeMap::new();
        let mut remotes: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in settings {
            let Some((branch, field)) =
                key.strip_prefix("branch.").and_then(|k| k.rsplit_once('.'))
            else {
                continue;
            };
            match field {
                "remote" => {
                    remotes.insert(branch.to_string(), value.clone());
                }
                "merge" => pulling.entry(branch.to_string()).or_default().0.extend(
                    value
                        .split(' ')
                        .map(|m| m.strip_prefix("refs/heads/").unwrap_or(m).to_string()),
                ),
                "rebase" => {
                    pulling.entry(branch.to_string()).or_default().1 =
                        match value.to_lowercase().as_str() {
                            "false" | "no" | "off" | "0" => "",
                            "interactive" | "i" => "rebases interactively onto remote",
                            "merges" | "m" => "rebases interactively (with merges) onto remote",
                            _ => "rebases onto remote",
                        }
                }
                _ => {}
            }
        }
        pulling.retain(|branch, (merges, _)| {
            !merges.is_empty() && remotes.get(branch).map(String::as_str) == Some(name)
        });
        if !pulling.is_empty() {
            let plural = if pulling.len() == 1 {
                "branch"
            } else {
                "branches"
            };
            let _ = writeln!(out, "  Local {plural} configured for 'git pull':");
            let width = pulling.keys().map(String::len).max().unwrap_or(0);
            let any_rebase = pulling.values().any(|(_, rebase)| !rebase.is_empty());
            for (branch, (merges, rebase)) in &pulling {
                if !rebase.is_empty() && merges.len() > 1 {
                    continue;
                }
                let _ = write!(out, "    {branch:<width$} ");
                if !rebase.is_empty() {
                    let _ = writeln!(out, "{rebase} {}", merges[0]);
                    continue;
                }
                let lead = if any_rebase { " " } else { "" };
                let _ = writeln!(out, "{lead}merges with remote {}", merges[0]);
                let indent = width + 4 + lead.len();
                for other in &merges[1..] {
                    let _ = writeln!(out, "{:<indent$}    and with remote {other}", "");
                }
            }
        }
        if self.mirror {
            out.push_str("  Local refs will be mirrored by 'git push'\n");
            return;
        }
        let mut pushes: Vec<(String, String, bool)> = match self.push.is_empty() {
            true => vec![("(matching)".into(), "(matching)".into(), false)],
            false => self
                .push
                .iter()
                .map(|spec| {
                    let forced = spec.starts_with('+');
                    let spec = spec.trim_start_matches('+');
                    if spec == ":" {
                        return ("(matching)".into(), "(matching)".into(), forced);
                    }
                    let (src, dst) = spec
                        .split_once(':')
                        .map_or((spec, None), |(s, d)| (s, Some(d)));
                    let src = match src {
                        "" => "(delete)".to_string(),
                        src => src.to_string(),
                    };
                    let dst = dst.map_or(src.clone(), str::to_string);
                    (src, dst, forced)
                })
                .collect(),
        };
        pushes.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let plural = if pushes.len() == 1 { "ref" } else { "refs" };
        let _ = writeln!(
            out,
            "  Local {plural} configured for 'git push' (status not queried):"
        );
        let width = pushes.iter().map(|(s, _, _)| s.len()).max().unwrap_or(0);
        for (src, dst, forced) in &pushes {
            let verb = if *forced { "forces" } else { "pushes" };
            let _ = writeln!(out, "    {src:<width$} {verb} to {dst}");
        }
    }
}
