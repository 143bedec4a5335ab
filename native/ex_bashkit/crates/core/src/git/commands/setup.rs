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
    if let (Some(branch), false) = (args.value("-b"), existed) {
        repo.set_head_branch(branch).await.map_err(failed)?;
    }
    if args.has(&["-q", "--quiet"]) {
        return Ok(Out::ok(""));
    }
    let verb = if existed {
        "Reinitialized existing"
    } else {
        "Initialized empty"
    };
    Ok(Out::ok(format!(
        "{verb} Git repository in {}/\n",
        repo.git.display()
    )))
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
            None if crate::git::is_path_remote(named) => {
                return Err(crate::git::path_remote_refused(named))
            }
            None => {
                return Err(Out::fatal(format!(
                    "'{named}' does not appear to be a git repository"
                )))
            }
        }
    };
    let allowed = match &here.git.remotes {
        AllowNet::None => {
            return Err(Out::fatal(format!(
                "remote URL {url} is not allowed: no remote URLs are allowed in this \
                 session (give the session :allow_net for it)"
            )))
        }
        AllowNet::All => true,
        AllowNet::Only(patterns) => patterns.iter().any(|p| url.starts_with(p.as_str())),
    };
    if !allowed {
        return Err(Out::fatal(format!(
            "remote URL {url} is not allowed: it matches no pattern of the session's :allow_net"
        )));
    }
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
    match args.first().map(String::as_str) {
        None => Ok(Out::ok(
            remotes
                .iter()
                .map(|(n, _)| format!("{n}\n"))
                .collect::<String>(),
        )),
        Some("-v") => Ok(Out::ok(
            remotes
                .iter()
                .map(|(n, u)| format!("{n}\t{u} (fetch)\n{n}\t{u} (push)\n"))
                .collect::<String>(),
        )),
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
        Some(sub @ ("show" | "prune" | "update" | "set-head" | "set-branches" | "rename")) => {
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
