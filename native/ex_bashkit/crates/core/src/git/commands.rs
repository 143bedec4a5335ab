//! The commands, each printing what git prints.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::diff::{self, Change};
use super::repo::{
    committed_files, index_files, short, Blob, Files, Head, Index, Oid, Repo, WorkFile,
};
use super::{config, text};
use super::{resolve, Here, Out, Run};
#[cfg(not(feature = "network"))]
use crate::network::AllowNet;

const SUPPORTED: &str = "init, clone, fetch, pull, push, ls-remote, remote, config, add, rm, \
mv, commit, status, log, show, diff, branch, checkout, switch, reset, restore, merge, stash, tag, \
describe, shortlog, blame, ls-files, rev-parse, merge-base, grep, cat-file, clean";

pub async fn run(here: &Here<'_>, args: &[String]) -> Run {
    let Some((command, rest)) = args.split_first() else {
        return Ok(Out::ok(format!(
            "usage: git <command> [<args>]\n\ncommands: {SUPPORTED}\n"
        )));
    };
    match command.as_str() {
        "--version" | "version" => Ok(Out::ok("git version 2.39.5 (ex_bashkit)\n")),
        "help" | "--help" | "-h" => Ok(Out::ok(format!("commands: {SUPPORTED}\n"))),
        "init" => init(here, rest).await,
        #[cfg(feature = "network")]
        "clone" => super::transfer::clone(here, rest).await,
        #[cfg(feature = "network")]
        "ls-remote" => {
            let repo = Repo::discover(here, &here.cwd).await;
            super::transfer::ls_remote(here, repo.as_ref(), rest).await
        }
        #[cfg(not(feature = "network"))]
        "clone" | "fetch" | "pull" | "push" | "ls-remote" => remote_io(here, command, rest).await,
        "config" => config(here, rest).await,
        "remote" => remote(here, rest).await,
        name => {
            let Some(repo) = Repo::discover(here, &here.cwd).await else {
                return Err(Out::fatal(
                    "not a git repository (or any of the parent directories): .git",
                ));
            };
            // A command that writes the index checks first that it may, so
            // a refusal comes before anything has changed.
            if matches!(
                name,
                "add"
                    | "rm"
                    | "mv"
                    | "commit"
                    | "checkout"
                    | "switch"
                    | "reset"
                    | "restore"
                    | "merge"
                    | "pull"
            ) {
                repo.check_writable().await.map_err(Out::fatal)?;
            }
            let it = Ctx { here, repo };
            match name {
                #[cfg(feature = "network")]
                "fetch" => super::transfer::fetch(here, &it.repo, rest).await,
                #[cfg(feature = "network")]
                "push" => super::transfer::push(here, &it.repo, rest).await,
                #[cfg(feature = "network")]
                "pull" => it.pull(rest).await,
                "add" => it.add(rest).await,
                "rm" => it.rm(rest).await,
                "mv" => it.mv(rest).await,
                "commit" => it.commit(rest).await,
                "status" => it.status(rest).await,
                "log" => it.log(rest).await,
                "show" => it.show(rest).await,
                "diff" => it.diff(rest).await,
                "branch" => it.branch(rest).await,
                "checkout" => it.checkout(rest).await,
                "switch" => it.switch(rest).await,
                "reset" => it.reset(rest).await,
                "restore" => it.restore(rest).await,
                "merge" => it.merge(rest).await,
                "tag" => it.tag(rest).await,
                "ls-files" => it.ls_files(rest).await,
                "rev-parse" => it.rev_parse(rest).await,
                "merge-base" => it.merge_base(rest).await,
                "grep" => it.grep(rest).await,
                "cat-file" => it.cat_file(rest).await,
                "clean" => it.clean(rest).await,
                "stash" => it.stash(rest).await,
                "describe" => it.describe(rest).await,
                "shortlog" => it.shortlog(rest).await,
                "blame" => it.blame(rest).await,
                "rebase" | "cherry-pick" | "revert" | "bisect" | "am" | "apply" | "reflog"
                | "submodule" | "worktree" | "gc" | "filter-branch" | "replace" => Err(
                    Out::error(
                        format!(
                            "git: '{name}' is not supported by the sandbox's git; it has: {SUPPORTED}\n"
                        ),
                        1,
                    ),
                ),
                _ => Err(Out::error(
                    format!("git: '{name}' is not a git command. See 'git --help'.\n"),
                    1,
                )),
            }
        }
    }
}

pub(super) fn failed(message: String) -> Out {
    Out::fatal(message)
}

/// Options a command takes, split from its operands; `--` ends options.
pub(super) struct Args<'a> {
    flags: Vec<&'a str>,
    values: BTreeMap<&'static str, String>,
    pub(super) operands: Vec<&'a str>,
    pub(super) paths: Vec<&'a str>,
}

impl<'a> Args<'a> {
    /// `valued`: options followed by a value (`-m MSG`, or `-mMSG`,
    /// `--message=MSG`), by every name they go by, the first the key.
    pub(super) fn parse(args: &'a [String], valued: &[&[&'static str]]) -> Result<Self, Out> {
        let mut parsed = Args {
            flags: Vec::new(),
            values: BTreeMap::new(),
            operands: Vec::new(),
            paths: Vec::new(),
        };
        let mut iter = args.iter().map(String::as_str);
        'next: while let Some(arg) = iter.next() {
            if arg == "--" {
                parsed.paths.extend(iter.by_ref());
                break;
            }
            for names in valued {
                let key = names[0];
                for name in *names {
                    if arg == *name {
                        let value = iter
                            .next()
                            .ok_or_else(|| failed(format!("option '{name}' requires a value")))?;
                        parsed.push_value(key, value);
                        continue 'next;
                    }
                    if let Some(value) = arg.strip_prefix(&format!("{name}=")) {
                        if name.starts_with("--") {
                            parsed.push_value(key, value);
                            continue 'next;
                        }
                    }
                    if !name.starts_with("--") && name.len() == 2 && arg.len() > 2 {
                        if let Some(value) = arg.strip_prefix(name) {
                            parsed.push_value(key, value);
                            continue 'next;
                        }
                    }
                }
            }
            if arg.starts_with('-') && arg.len() > 1 {
                // Bundled short flags (`-am msg`): the last may take a value.
                if !arg.starts_with("--") && arg.len() > 2 {
                    let letters: Vec<char> = arg[1..].chars().collect();
                    let takes = |c: char| {
                        valued
                            .iter()
                            .find(|names| names.iter().any(|n| *n == format!("-{c}")))
                            .map(|names| names[0])
                    };
                    if letters.iter().all(|c| c.is_ascii_alphabetic()) {
                        for (i, c) in letters.iter().enumerate() {
                            match takes(*c) {
                                Some(key) if i == letters.len() - 1 => {
                                    let value = iter.next().ok_or_else(|| {
                                        failed(format!("switch '{c}' requires a value"))
                                    })?;
                                    parsed.push_value(key, value);
                                }
                                _ => parsed.flags.push(short_flag(*c)),
                            }
                        }
                        continue;
                    }
                }
                parsed.flags.push(arg);
            } else {
                parsed.operands.push(arg);
            }
        }
        Ok(parsed)
    }

    fn push_value(&mut self, key: &'static str, value: &str) {
        match self.values.get_mut(key) {
            // Repeated `-m`: paragraphs.
            Some(existing) if key == "-m" => {
                existing.push_str("\n\n");
                existing.push_str(value);
            }
            _ => {
                self.values.insert(key, value.to_string());
            }
        }
    }

    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|f| names.contains(f))
    }

    /// The first flag that is `name` or `name=…`.
    pub(super) fn flags_like(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|f| **f == name || f.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
            .copied()
    }

    pub(super) fn value(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

fn short_flag(c: char) -> &'static str {
    const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const FLAGS: [&str; 52] = [
        "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-i", "-j", "-k", "-l", "-m", "-n", "-o",
        "-p", "-q", "-r", "-s", "-t", "-u", "-v", "-w", "-x", "-y", "-z", "-A", "-B", "-C", "-D",
        "-E", "-F", "-G", "-H", "-I", "-J", "-K", "-L", "-M", "-N", "-O", "-P", "-Q", "-R", "-S",
        "-T", "-U", "-V", "-W", "-X", "-Y", "-Z",
    ];
    FLAGS[LETTERS.find(c).unwrap_or(0)]
}

async fn init(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(args, &[&["-b", "--initial-branch"]])?;
    let root = match args.operands.first() {
        Some(dir) => resolve(&here.cwd, dir),
        None => here.cwd.clone(),
    };
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
async fn remote_io(here: &Here<'_>, command: &str, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &[&["-b", "--branch"], &["--depth"], &["-o", "--origin"]],
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

async fn config(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(args, &[&["--file", "-f"]])?;
    let Some(repo) = Repo::discover(here, &here.cwd).await else {
        return Err(Out::fatal("not in a git directory"));
    };
    let text = repo.config_text().await;
    let entries = config::parse(&text);
    if args.has(&["--list", "-l"]) {
        let text: String = entries.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        return Ok(Out::ok(text));
    }
    let name = args.operands.first().map(|n| config::canonical(n));
    if args.has(&["--unset", "--unset-all"]) {
        let name = name.unwrap_or_default();
        let values = entries.iter().filter(|(k, _)| *k == name).count();
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

async fn remote(here: &Here<'_>, args: &[String]) -> Run {
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
        _ => Err(Out::error(
            "usage: git remote [-v | add <name> <url> | remove <name> | get-url <name> | set-url <name> <url>]\n",
            129,
        )),
    }
}

/// What `status` and friends compare: the last commit, the index, the
/// work tree.
pub(super) struct State {
    pub(super) head: Option<Oid>,
    pub(super) head_files: Files,
    pub(super) index: Index,
    pub(super) work: BTreeMap<String, WorkFile>,
    /// The blob of each tracked file in the work tree.
    pub(super) work_blobs: BTreeMap<String, Blob>,
    /// Conflicted paths and the stages the index has for each.
    pub(super) unmerged: BTreeMap<String, Vec<u8>>,
}

/// git's refusal of a merge (or a stash's apply) that would overwrite
/// local changes to `paths`.
pub(super) fn overwritten_by_merge(paths: &[&String], code: i32) -> Out {
    let list: String = paths.iter().map(|p| format!("\t{p}\n")).collect();
    Out::error(
        format!(
            "error: Your local changes to the following files would be overwritten by merge:\n{list}\
             Please commit your changes or stash them before you merge.\nAborting\n"
        ),
        code,
    )
}

/// An unmerged path's two-letter code (`UU`) and its long label.
fn unmerged_code(stages: &[u8]) -> (&'static str, &'static str) {
    let has = |s: u8| stages.contains(&s);
    match (has(1), has(2), has(3)) {
        (true, true, true) => ("UU", "both modified:   "),
        (false, true, false) => ("AU", "added by us:     "),
        (false, false, true) => ("UA", "added by them:   "),
        (true, false, true) => ("DU", "deleted by us:   "),
        (true, true, false) => ("UD", "deleted by them: "),
        (false, true, true) => ("AA", "both added:      "),
        _ => ("DD", "both deleted:    "),
    }
}

impl State {
    /// Whether `path` in the work tree is not what the index has: changed,
    /// deleted, or untracked (and not ignored) where the index has nothing.
    pub(super) fn changed_in_work(&self, path: &str) -> bool {
        let indexed = self.index.get(path).map(|e| &e.blob);
        self.work_blobs.get(path) != indexed
            || (indexed.is_none() && self.work.get(path).is_some_and(|f| !f.ignored))
    }

    /// `A`/`M`/`D` of the index against the last commit.
    pub(super) fn staged(&self) -> Vec<(char, String)> {
        let mut changes = Vec::new();
        for (path, entry) in &self.index {
            match self.head_files.get(path) {
                None => changes.push(('A', path.clone())),
                Some(blob) if *blob != entry.blob => changes.push(('M', path.clone())),
                _ => {}
            }
        }
        for path in self.head_files.keys() {
            if !self.index.contains_key(path) && !self.unmerged.contains_key(path) {
                changes.push(('D', path.clone()));
            }
        }
        // A file deleted and one added with the same content: a rename
        // (`a -> b`, in the new name's place).
        let mut renamed = Vec::new();
        for (code, path) in &changes {
            if *code != 'A' {
                continue;
            }
            let oid = &self.index[path].blob.oid;
            let from = changes.iter().find(|(c, p)| {
                *c == 'D'
                    && self.head_files[p].oid == *oid
                    && !renamed
                        .iter()
                        .any(|(_, old, _): &(String, String, String)| old == p)
            });
            if let Some((_, from)) = from {
                renamed.push((path.clone(), from.clone(), format!("{from} -> {path}")));
            }
        }
        changes.retain(|(_, path)| {
            !renamed
                .iter()
                .any(|(new, old, _)| path == new || path == old)
        });
        changes.extend(renamed.into_iter().map(|(_, _, shown)| ('R', shown)));
        changes.sort_by(|a, b| sort_key(&a.1).cmp(sort_key(&b.1)));
        changes
    }

    /// `M`/`D` of the work tree against the index.
    pub(super) fn unstaged(&self) -> Vec<(char, String)> {
        let mut changes = Vec::new();
        for (path, entry) in &self.index {
            if entry.not_checked() {
                continue;
            }
            match self.work_blobs.get(path) {
                None => changes.push(('D', path.clone())),
                Some(blob) if *blob != entry.blob => changes.push(('M', path.clone())),
                _ => {}
            }
        }
        changes
    }

    /// Untracked files, a directory holding nothing tracked as `dir/`.
    /// Untracked files one by one (`-uall`).
    fn untracked_files(&self) -> Vec<String> {
        self.work
            .iter()
            .filter(|(p, f)| {
                !f.ignored && !self.index.contains_key(*p) && !self.unmerged.contains_key(*p)
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn untracked(&self) -> Vec<String> {
        let mut shown = BTreeSet::new();
        let untracked = self
            .work
            .iter()
            .filter(|(p, f)| {
                !f.ignored && !self.index.contains_key(*p) && !self.unmerged.contains_key(*p)
            })
            .map(|(p, _)| p);
        for path in untracked {
            let mut display = path.clone();
            let mut end = 0;
            while let Some(slash) = path[end..].find('/') {
                let dir = &path[..end + slash + 1];
                // The first tracked path at or after `dir` is the only one
                // that can be inside it: a lookup, not a scan of the index.
                let tracked_inside = self
                    .index
                    .range(dir.to_string()..)
                    .next()
                    .is_some_and(|(tracked, _)| tracked.starts_with(dir));
                if !tracked_inside {
                    display = dir.to_string();
                    break;
                }
                end += slash + 1;
            }
            shown.insert(display);
        }
        shown.into_iter().collect()
    }
}

pub(super) struct Ctx<'a> {
    pub(super) here: &'a Here<'a>,
    pub(super) repo: Repo,
}

impl Ctx<'_> {
    pub(super) async fn state(&self) -> Result<State, Out> {
        self.state_of(true, Some(true)).await
    }

    /// The state a command needs: `HEAD`'s files or not; the work tree
    /// not at all (`None`), its tracked files only (`Some(false)`: no walk
    /// for untracked ones), or all of it.
    async fn state_of(&self, head_too: bool, work_too: Option<bool>) -> Result<State, Out> {
        let repo = &self.repo;
        let head = repo.head_commit().await;
        let index = repo.index().await.map_err(failed)?;
        let head_files = match head_too {
            true => repo
                .head_files(head.as_deref(), &index)
                .await
                .map_err(failed)?,
            false => Files::new(),
        };
        let work = match work_too {
            Some(true) => repo.work_files(&index).await.map_err(failed)?,
            Some(false) => repo.tracked_work(&index).await.map_err(failed)?,
            None => BTreeMap::new(),
        };
        let mut work_blobs = BTreeMap::new();
        for (path, file) in &work {
            if index.contains_key(path) {
                let blob = repo.work_blob(path, file, &index).await.map_err(failed)?;
                work_blobs.insert(path.clone(), blob);
            }
        }
        Ok(State {
            head,
            head_files,
            index,
            work,
            work_blobs,
            unmerged: repo.unmerged_stages(),
        })
    }

    /// A pathspec as a path relative to the work tree's root (`""` for
    /// all of it).
    pub(super) fn pathspec(&self, spec: &str) -> String {
        let full = resolve(&self.here.cwd, spec);
        self.repo.relative(&full)
    }

    /// The pathspecs among `operands` and after `--`.
    fn specs(&self, operands: &[&str], paths: &[&str]) -> Vec<String> {
        operands
            .iter()
            .chain(paths)
            .map(|spec| self.pathspec(spec))
            .collect()
    }

    fn matches(spec: &str, path: &str) -> bool {
        spec.is_empty()
            || path == spec
            || path.starts_with(&format!("{spec}/"))
            || (spec.contains(['*', '?']) && text::glob(spec, path))
    }

    fn any_match(specs: &[String], path: &str) -> bool {
        specs.is_empty() || specs.iter().any(|s| Self::matches(s, path))
    }

    /// A repository path (or `a -> b`) as seen from the working
    /// directory, as `status` shows it.
    fn shown(&self, path: &str) -> String {
        if let Some((from, to)) = path.split_once(" -> ") {
            return format!("{} -> {}", self.shown(from), self.shown(to));
        }
        let prefix = self.pathspec(".");
        if prefix.is_empty() {
            return path.to_string();
        }
        let here: Vec<&str> = prefix.split('/').collect();
        let there: Vec<&str> = path.split('/').collect();
        let common = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
        let mut shown = "../".repeat(here.len() - common);
        shown.push_str(&there[common..].join("/"));
        shown
    }

    pub(super) async fn branch_name(&self) -> Option<String> {
        match self.repo.head().await {
            Head::Branch(name) => Some(name),
            Head::Detached(_) => None,
        }
    }

    // ---- add, rm, mv -------------------------------------------------------

    async fn add(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        if args.has(&["-p", "--patch", "-i", "--interactive", "-e", "--edit"]) {
            return Err(Out::fatal(
                "the sandbox's git has no interactive staging (add -p/-i/-e): nobody is at a \
                 terminal to answer it; stage whole files, or write the part you want and add that",
            ));
        }
        let all = args.has(&["-A", "--all"]);
        let update = args.has(&["-u", "--update"]);
        let mut specs: Vec<String> = self.specs(&args.operands, &args.paths);
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
        for spec in &specs {
            let matched = work.keys().any(|p| Self::matches(spec, p))
                || index.keys().any(|p| Self::matches(spec, p));
            if !matched {
                return Err(Out::fatal(format!(
                    "pathspec '{}' did not match any files",
                    display_spec(spec)
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

    async fn rm(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let cached = args.has(&["--cached"]);
        let quiet = args.has(&["-q", "--quiet"]);
        let recursive = args.has(&["-r"]);
        let specs: Vec<String> = self.specs(&args.operands, &args.paths);
        if specs.is_empty() {
            return Err(Out::error(
                "usage: git rm [--cached] [-r] [-q] <file>...\n",
                129,
            ));
        }
        let mut index = self.repo.index().await.map_err(failed)?;
        let mut removed = Vec::new();
        for spec in &specs {
            let hits: Vec<String> = index
                .keys()
                .filter(|p| Self::matches(spec, p))
                .cloned()
                .collect();
            if hits.is_empty() {
                return Err(Out::fatal(format!(
                    "pathspec '{}' did not match any files",
                    display_spec(spec)
                )));
            }
            if !recursive && hits.iter().any(|h| h != spec) && !spec.contains(['*', '?']) {
                return Err(Out::fatal(format!(
                    "not removing '{}' recursively without -r",
                    display_spec(spec)
                )));
            }
            removed.extend(hits);
        }
        let mut out = String::new();
        for path in &removed {
            index.remove(path);
            if !cached {
                self.repo.remove_file(path).await.map_err(failed)?;
            }
            if !quiet {
                let _ = writeln!(out, "rm '{path}'");
            }
        }
        self.repo.save_index(&index).await.map_err(failed)?;
        Ok(Out::ok(out))
    }

    async fn mv(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let [from, to] = args.operands.as_slice() else {
            return Err(Out::error("usage: git mv <source> <destination>\n", 129));
        };
        let (from, mut to) = (self.pathspec(from), self.pathspec(to));
        let mut index = self.repo.index().await.map_err(failed)?;
        let Some(entry) = index.remove(&from) else {
            return Err(Out::fatal(format!(
                "not under version control, source={from}, destination={to}"
            )));
        };
        let fs = &self.repo.fs;
        if fs
            .stat(&self.repo.root.join(&to))
            .await
            .is_ok_and(|m| m.file_type.is_dir())
        {
            let name = from.rsplit('/').next().unwrap_or(&from);
            to = format!("{to}/{name}");
        }
        fs.rename(&self.repo.root.join(&from), &self.repo.root.join(&to))
            .await
            .map_err(|e| failed(format!("renaming '{from}' failed: {e}")))?;
        index.insert(to, entry);
        self.repo.save_index(&index).await.map_err(failed)?;
        Ok(Out::ok(""))
    }

    // ---- commit ------------------------------------------------------------

    async fn commit(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &[
                &["-m", "--message"],
                &["-F", "--file"],
                &["--author"],
                &["--date"],
            ],
        )?;
        let repo = &self.repo;
        repo.check_writable().await.map_err(failed)?;
        let unmerged = repo.unmerged();
        if !unmerged.is_empty() {
            let mut message = String::from(
                "error: Committing is not possible because you have unmerged files.\n\
                 hint: Fix them up in the work tree, and then use 'git add/rm <file>'\n\
                 hint: as appropriate to mark resolution and make a commit.\n",
            );
            message.push_str("fatal: Exiting because of an unresolved conflict.\n");
            return Err(Out::error(message, 128));
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
            repo.save_index(&index).await.map_err(failed)?;
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
        message = text::clean_message(&message);
        // Concluding a merge: its other parent and its message.
        let merging = repo.state_file("MERGE_HEAD").await;
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
            if message.is_empty() {
                // As `--no-edit` takes it: comments and all.
                let saved = repo.state_file("MERGE_MSG").await.unwrap_or_default();
                message = text::clean_message(&saved);
            }
        }
        let index = repo.index().await.map_err(failed)?;
        // `git add -N` paths are not committed until really added.
        let files = committed_files(&index);
        let parent_files = repo
            .head_files(parents.first().map(String::as_str), &index)
            .await
            .map_err(failed)?;
        if files == parent_files && !args.has(&["--allow-empty"]) && !amend && merging.is_none() {
            let status = self.long_status(&self.state().await?).await;
            return Err(Out {
                stdout: status,
                stderr: String::new(),
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
        if let Some(commit) = &amended {
            // --amend keeps the author and the authored date.
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
            let (seconds, zone) = text::parse_date(date)
                .ok_or_else(|| Out::fatal(format!("invalid date format: {date}")))?;
            let who = match author.take() {
                Some((who, _)) => who,
                None => repo.identity("AUTHOR").await.0,
            };
            author = Some((who, format!("{seconds} {zone}")));
        }
        let oid = self.write_commit(&tree, &parents, &message, author).await?;
        if merging.is_some() {
            repo.remove_state_files(&["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"])
                .await;
        }
        let what = match (amend, parents.len()) {
            (true, _) => "commit (amend)",
            (false, 0) => "commit (initial)",
            (false, 1) => "commit",
            (false, _) => "commit (merge)",
        };
        let reflog = format!("{what}: {}", message.lines().next().unwrap_or(""));
        repo.advance_head(&oid, &reflog).await.map_err(failed)?;
        if args.has(&["-q", "--quiet"]) {
            return Ok(Out::ok(""));
        }
        let root = if parents.is_empty() {
            " (root-commit)"
        } else {
            ""
        };
        let place = match self.branch_name().await {
            Some(branch) => branch,
            None => "detached HEAD".to_string(),
        };
        let subject = message.lines().next().unwrap_or("");
        let mut out = format!("[{place}{root} {}] {subject}\n", short(&oid));
        // git names the author where it is not the committer, and the
        // author's date where it was carried over or given.
        let written = repo.commit(&oid).await.map_err(failed)?;
        let (a, c) = (&written.author, &written.committer);
        if (&a.name, &a.email) != (&c.name, &c.email) {
            let _ = writeln!(out, " Author: {} <{}>", a.name, a.email);
        }
        if amend || args.value("--date").is_some() {
            let _ = writeln!(out, " Date: {}", a.date());
        }
        let changes = self.changes(&parent_files, &files, None, &[]).await?;
        let (mut insertions, mut deletions) = (0, 0);
        for change in &changes {
            let (added, removed) = change.counts();
            insertions += added;
            deletions += removed;
        }
        out.push_str(&diff::summary(changes.len(), insertions, deletions));
        out.push_str(&Self::mode_summary(&changes));
        Ok(Out::ok(out))
    }

    // ---- status ------------------------------------------------------------

    async fn status(&self, args: &[String]) -> Run {
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
        let args = Args::parse(&args, &[])?;
        if args.has(&["-z", "-v", "--verbose", "--ignored"]) {
            return Err(Out::fatal(
                "the sandbox's git has no status -z, -v or --ignored",
            ));
        }
        let state = self.state().await?;
        let untracked_mode = match mode_given.as_deref() {
            Some(mode) => mode,
            None if args.has(&["-u", "--untracked-files"]) => "all",
            None => "normal",
        };
        let untracked = match untracked_mode {
            "no" => Vec::new(),
            "all" => state.untracked_files(),
            _ => state.untracked(),
        };
        if args.has(&["--porcelain=v2", "--porcelain=2"]) {
            return Ok(Out::ok(
                self.status_v2(&state, &untracked, args.has(&["-b", "--branch"]))
                    .await,
            ));
        }
        let porcelain = args.has(&["--porcelain", "--porcelain=v1", "--porcelain=1"]);
        let short = porcelain || args.has(&["-s", "--short"]);
        if !short {
            let listed = (untracked_mode != "normal").then_some(untracked.as_slice());
            return Ok(Out::ok(self.long_status_with(&state, listed).await));
        }
        // Porcelain paths are the repository's; short ones the caller's.
        let shown = |path: &str| -> String {
            if porcelain {
                path.to_string()
            } else {
                self.shown(path)
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
        for (code, shown) in state.staged() {
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
    async fn status_v2(&self, state: &State, untracked: &[String], branch: bool) -> String {
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
        let zero = super::repo::NULL_OID;
        let mut lines: BTreeMap<String, String> = BTreeMap::new();
        let mut codes: BTreeMap<String, (char, char, Option<String>)> = BTreeMap::new();
        for (code, shown) in state.staged() {
            match shown.split_once(" -> ") {
                Some((from, to)) => {
                    codes.insert(to.to_string(), (code, '.', Some(from.to_string())));
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
            let head = state.head_files.get(from.as_ref().unwrap_or(&path));
            let index = state.index.get(&path).map(|e| &e.blob);
            let work = match state.work.get(&path) {
                Some(file) if y != 'D' && index.is_some() => file.mode,
                _ => 0,
            };
            let mode = |b: Option<&Blob>| b.map_or(0, |b| b.mode);
            let oid = |b: Option<&Blob>| b.map_or(zero.to_string(), |b| b.oid.clone());
            let line = match from {
                Some(from) => format!(
                    "2 {x}{y} N... {:06o} {:06o} {work:06o} {} {} R100 {path}\t{from}",
                    mode(head),
                    mode(index),
                    oid(head),
                    oid(index)
                ),
                None => format!(
                    "1 {x}{y} N... {:06o} {:06o} {work:06o} {} {} {path}",
                    mode(head),
                    mode(index),
                    oid(head),
                    oid(index)
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
                    "u {} N... {:06o} {:06o} {:06o} {work:06o} {} {} {} {path}",
                    unmerged_code(stages).0,
                    mode(get(1)),
                    mode(get(2)),
                    mode(get(3)),
                    oid(get(1)),
                    oid(get(2)),
                    oid(get(3))
                ),
            );
        }
        for line in lines.into_values() {
            out.push_str(&line);
            out.push('\n');
        }
        for path in untracked {
            let _ = writeln!(out, "? {path}");
        }
        out
    }

    /// Commits on `ours` not on `theirs`, and the other way round.
    async fn ahead_behind(&self, ours: &str, theirs: &str) -> (usize, usize) {
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
            let Ok(commit) = repo.commit(oid).await else {
                return (0, 0);
            };
            marks.insert(oid.to_string(), mark);
            queue.push((commit.committer.time, oid.to_string(), commit.parents));
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
                    if let Ok(commit) = repo.commit(&parent).await {
                        queue.push((commit.committer.time, parent, commit.parents));
                    }
                }
            }
        }
        let count = |side: u8| marks.values().filter(|m| **m == side).count();
        (count(OURS), count(THEIRS))
    }

    /// `status`'s lines on the upstream branch, as git words them.
    async fn tracking(&self, branch: &str, head: Option<&str>) -> String {
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

    pub(super) async fn long_status(&self, state: &State) -> String {
        self.long_status_with(state, None).await
    }

    /// The long status; `untracked` replaces the usual list (`-uall`,
    /// or `-uno` as an empty one).
    async fn long_status_with(&self, state: &State, shown_untracked: Option<&[String]>) -> String {
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
                    None => format!("HEAD detached at {}\n", short(&oid)),
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
        let staged = state.staged();
        let unstaged = state.unstaged();
        let hidden = shown_untracked.is_some_and(|u| u.is_empty());
        let untracked = match shown_untracked {
            Some(list) => list.to_vec(),
            None => state.untracked(),
        };
        let merging = self.repo.state_file("MERGE_HEAD").await.is_some();
        if merging && !state.unmerged.is_empty() {
            out.push_str(
                "You have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\n",
            );
        } else if merging {
            out.push_str(
                "All conflicts fixed but you are still merging.\n  (use \"git commit\" to conclude merge)\n\n",
            );
        }
        if !staged.is_empty() {
            out.push_str("Changes to be committed:\n");
            out.push_str(if unborn {
                "  (use \"git rm --cached <file>...\" to unstage)\n"
            } else {
                "  (use \"git restore --staged <file>...\" to unstage)\n"
            });
            for (code, path) in &staged {
                let _ = writeln!(out, "\t{}{}", label(*code), self.shown(path));
            }
            out.push('\n');
        }
        if !state.unmerged.is_empty() {
            out.push_str("Unmerged paths:\n");
            let deletion = state
                .unmerged
                .values()
                .any(|stages| !(stages.contains(&2) && stages.contains(&3)));
            out.push_str(if deletion {
                "  (use \"git add/rm <file>...\" as appropriate to mark resolution)\n"
            } else {
                "  (use \"git add <file>...\" to mark resolution)\n"
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
            out.push_str(if !unstaged.is_empty() || !state.unmerged.is_empty() {
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
        out
    }

    // ---- diff, log, show ---------------------------------------------------

    /// The changes from `old` to `new` (or to the work tree's tracked
    /// files when `work` is given), their contents read.
    pub(super) async fn changes(
        &self,
        old: &Files,
        new: &Files,
        work: Option<&State>,
        specs: &[String],
    ) -> Result<Vec<Change>, Out> {
        let repo = &self.repo;
        let mut paths: BTreeSet<&String> = old.keys().collect();
        paths.extend(new.keys());
        let mut changes = Vec::new();
        for path in paths {
            if !Self::any_match(specs, path) {
                continue;
            }
            let before = old.get(path);
            let after = match work {
                Some(state) => state.work_blobs.get(path),
                None => new.get(path),
            };
            if before == after {
                continue;
            }
            let old_side = match before {
                Some(blob) => Some((blob.clone(), repo.blob(&blob.oid).await.map_err(failed)?)),
                None => None,
            };
            let new_side = match (after, work) {
                (Some(blob), Some(_)) => {
                    let bytes = repo.content(path, blob.mode).await.map_err(failed)?;
                    Some((blob.clone(), bytes))
                }
                (Some(blob), None) => {
                    Some((blob.clone(), repo.blob(&blob.oid).await.map_err(failed)?))
                }
                (None, _) => None,
            };
            changes.push(Change {
                path: path.clone(),
                from: None,
                old: old_side,
                new: new_side,
            });
        }
        Ok(diff::with_renames(changes))
    }

    async fn files_at(&self, revision: &str) -> Result<Files, Out> {
        let oid = self.revision(revision).await?;
        self.repo.commit_files(Some(&oid)).await.map_err(failed)
    }

    /// A revision as a commit: tags peeled.
    pub(super) async fn revision(&self, revision: &str) -> Result<Oid, Out> {
        let oid = self.object(revision).await?;
        self.repo.peel(&oid).await.map_err(failed)
    }

    /// A revision as the object it names (a tag stays a tag).
    async fn object(&self, revision: &str) -> Result<Oid, Out> {
        self.repo.resolve(revision).await.ok_or_else(|| {
            Out::fatal(format!(
                "ambiguous argument '{revision}': unknown revision or path not in the working tree."
            ))
        })
    }

    fn render(changes: &[Change], args: &Args<'_>) -> String {
        if args.has(&["--stat"]) {
            return diff::stat(changes);
        }
        if args.has(&["--name-only"]) {
            return changes.iter().map(|c| format!("{}\n", c.path)).collect();
        }
        if args.has(&["--name-status"]) {
            return changes
                .iter()
                .map(|c| match (&c.from, &c.old, &c.new) {
                    (Some(from), _, _) => format!("R100\t{from}\t{}\n", c.path),
                    (None, None, _) => format!("A\t{}\n", c.path),
                    (None, _, None) => format!("D\t{}\n", c.path),
                    _ => format!("M\t{}\n", c.path),
                })
                .collect();
        }
        changes.iter().map(Change::patch).collect()
    }

    async fn diff(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        // Operands that are not revisions are paths.
        let mut revisions = Vec::new();
        let mut specs: Vec<String> = args.paths.iter().map(|p| self.pathspec(p)).collect();
        for operand in &args.operands {
            if let Some((a, b)) = operand.split_once("..") {
                revisions.push(a.to_string());
                revisions.push(b.to_string());
            } else if self.repo.resolve(operand).await.is_some() {
                revisions.push(operand.to_string());
            } else {
                specs.push(self.pathspec(operand));
            }
        }
        let cached = args.has(&["--cached", "--staged"]);
        // Only what the comparison needs: the work tree's tracked files
        // for the plain diff, no work tree at all for --cached.
        let state = match (revisions.len(), cached) {
            (0, false) => self.state_of(false, Some(false)).await?,
            (0, true) => self.state_of(true, None).await?,
            (1, true) | (2, _) => self.state_of(false, None).await?,
            _ => self.state().await?,
        };
        let index_files = index_files(&state.index);
        let changes = match (revisions.as_slice(), cached) {
            ([], false) => {
                self.changes(&index_files, &index_files, Some(&state), &specs)
                    .await?
            }
            ([], true) => {
                self.changes(&state.head_files, &index_files, None, &specs)
                    .await?
            }
            ([rev], true) => {
                let files = self.files_at(rev).await?;
                self.changes(&files, &index_files, None, &specs).await?
            }
            ([rev], false) => {
                let files = self.files_at(rev).await?;
                // The work tree's side: its tracked files (index ∪ rev).
                let mut work_state = State {
                    head: None,
                    head_files: Files::new(),
                    index: state.index.clone(),
                    work: state.work.clone(),
                    work_blobs: state.work_blobs.clone(),
                    unmerged: BTreeMap::new(),
                };
                for path in files.keys() {
                    if let (Some(file), false) = (
                        state.work.get(path),
                        work_state.work_blobs.contains_key(path),
                    ) {
                        let blob = self
                            .repo
                            .work_blob(path, file, &state.index)
                            .await
                            .map_err(failed)?;
                        work_state.work_blobs.insert(path.clone(), blob);
                    }
                }
                self.changes(&files, &index_files, Some(&work_state), &specs)
                    .await?
            }
            ([a, b], _) => {
                let (a, b) = (self.files_at(a).await?, self.files_at(b).await?);
                self.changes(&a, &b, None, &specs).await?
            }
            _ => {
                return Err(Out::error(
                    "usage: git diff [<options>] [<commit> [<commit>]] [--] [<path>...]\n",
                    129,
                ))
            }
        };
        if args.has(&["--quiet"]) {
            return Ok(Out {
                stdout: String::new(),
                stderr: String::new(),
                code: i32::from(!changes.is_empty()),
            });
        }
        let code = i32::from(args.has(&["--exit-code"]) && !changes.is_empty());
        Ok(Out {
            stdout: Self::render(&changes, &args),
            stderr: String::new(),
            code,
        })
    }

    /// The commits `log` walks from `start`, as git orders them by
    /// default: the newest commit date first among those reached so far
    /// (ties in the order they were reached), without `stop`'s ancestors.
    /// The commits `log --graph`/`--topo-order` walks: no parent before
    /// all its children, a merge's later parents' lines first, as git's
    /// topological walk orders them.
    async fn topo_history(&self, start: &str, stop: Option<&str>) -> Result<Vec<Oid>, Out> {
        let all = self.history(start, stop).await?;
        let set: std::collections::HashSet<&Oid> = all.iter().collect();
        let mut parents: BTreeMap<&Oid, Vec<Oid>> = BTreeMap::new();
        let mut children: BTreeMap<Oid, usize> = BTreeMap::new();
        for oid in &all {
            let commit = self.repo.commit(oid).await.map_err(failed)?;
            let kept: Vec<Oid> = commit
                .parents
                .into_iter()
                .filter(|p| set.contains(p))
                .collect();
            for parent in &kept {
                *children.entry(parent.clone()).or_default() += 1;
            }
            parents.insert(oid, kept);
        }
        let mut stack: Vec<Oid> = all
            .iter()
            .filter(|o| !children.contains_key(*o))
            .rev()
            .cloned()
            .collect();
        let mut order = Vec::with_capacity(all.len());
        while let Some(oid) = stack.pop() {
            for parent in &parents[&oid] {
                let left = children.get_mut(parent).expect("counted");
                *left -= 1;
                if *left == 0 {
                    stack.push(parent.clone());
                }
            }
            order.push(oid);
        }
        Ok(order)
    }

    pub(super) async fn history(&self, start: &str, stop: Option<&str>) -> Result<Vec<Oid>, Out> {
        self.history_upto(start, stop, None).await
    }

    /// `history`, stopping once `limit` commits are found (`log -n`).
    async fn history_upto(
        &self,
        start: &str,
        stop: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<Oid>, Out> {
        let repo = &self.repo;
        let excluded = match stop {
            Some(stop) => repo.ancestors(&self.revision(stop).await?).await,
            None => Default::default(),
        };
        let first = repo
            .peel(&self.revision(start).await?)
            .await
            .map_err(failed)?;
        // Each queued commit with its parents, read once.
        let mut queue = std::collections::BinaryHeap::new();
        let mut seen = std::collections::HashSet::new();
        let mut reached = 0u64;
        let mut commits = Vec::new();
        let commit = repo.commit(&first).await.map_err(failed)?;
        seen.insert(first.clone());
        queue.push((
            commit.committer.time,
            std::cmp::Reverse(reached),
            first,
            commit.parents,
        ));
        while let Some((_, _, oid, parents)) = queue.pop() {
            if limit.is_some_and(|n| commits.len() >= n) {
                break;
            }
            if excluded.contains(&oid) {
                continue;
            }
            for parent in parents {
                if seen.insert(parent.clone()) {
                    let commit = repo.commit(&parent).await.map_err(failed)?;
                    reached += 1;
                    queue.push((
                        commit.committer.time,
                        std::cmp::Reverse(reached),
                        parent,
                        commit.parents,
                    ));
                }
            }
            commits.push(oid);
        }
        Ok(commits)
    }

    fn formatted(format: &str, oid: &str, commit: &super::repo::Commit) -> String {
        let mut out = String::new();
        let mut chars = format.chars().peekable();
        let body = commit
            .message
            .split_once("\n\n")
            .map_or("", |(_, body)| body)
            .to_string();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let mut token = String::new();
            if let Some(&next) = chars.peek() {
                token.push(next);
                chars.next();
                if matches!(next, 'a' | 'c') {
                    if let Some(&kind) = chars.peek() {
                        token.push(kind);
                        chars.next();
                    }
                }
            }
            match token.as_str() {
                "H" => out.push_str(oid),
                "h" => out.push_str(short(oid)),
                "T" => out.push_str(&commit.tree),
                "t" => out.push_str(short(&commit.tree)),
                "P" => out.push_str(&commit.parents.join(" ")),
                "p" => out.push_str(
                    &commit
                        .parents
                        .iter()
                        .map(|p| short(p))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                "an" => out.push_str(&commit.author.name),
                "cn" => out.push_str(&commit.committer.name),
                "ae" => out.push_str(&commit.author.email),
                "ce" => out.push_str(&commit.committer.email),
                "ad" => out.push_str(&commit.author.date()),
                "cd" => out.push_str(&commit.committer.date()),
                "at" => out.push_str(&commit.author.time.to_string()),
                "ct" => out.push_str(&commit.committer.time.to_string()),
                "ai" => out.push_str(&text::iso_date(commit.author.time, &commit.author.zone)),
                "ci" => out.push_str(&text::iso_date(
                    commit.committer.time,
                    &commit.committer.zone,
                )),
                "as" => {
                    out.push_str(&text::iso_date(commit.author.time, &commit.author.zone)[..10])
                }
                "cs" => out
                    .push_str(&text::iso_date(commit.committer.time, &commit.committer.zone)[..10]),
                "s" => out.push_str(commit.subject()),
                "b" => out.push_str(&body),
                "B" => out.push_str(&commit.message),
                "n" => out.push('\n'),
                "%" => out.push('%'),
                other => {
                    out.push('%');
                    out.push_str(other);
                }
            }
        }
        out
    }

    /// One commit as `log` prints it in `style`.
    fn entry(style: &Style, oid: &str, commit: &super::repo::Commit) -> String {
        match style {
            Style::Oneline => format!("{} {}\n", short(oid), commit.subject()),
            Style::Format(format, _) => Self::formatted(format, oid, commit),
            Style::Medium => {
                let mut out = format!("commit {oid}\n");
                if commit.parents.len() > 1 {
                    let parents: Vec<&str> = commit.parents.iter().map(|p| short(p)).collect();
                    let _ = writeln!(out, "Merge: {}", parents.join(" "));
                }
                let _ = write!(
                    out,
                    "Author: {} <{}>\nDate:   {}\n\n",
                    commit.author.name,
                    commit.author.email,
                    commit.author.date()
                );
                for line in commit.message.lines() {
                    if line.is_empty() {
                        out.push('\n');
                    } else {
                        let _ = writeln!(out, "    {line}");
                    }
                }
                out
            }
        }
    }

    async fn log(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &[
                &["-n", "--max-count"],
                &["--format", "--pretty"],
                &["--author"],
            ],
        )?;
        let mut limit: Option<usize> = args.value("-n").and_then(|n| n.parse().ok());
        for flag in &args.flags {
            if let Some(n) = flag.strip_prefix('-').and_then(|n| n.parse().ok()) {
                limit = Some(n);
            }
        }
        let style = Style::of(&args);
        let (start, stop) = match args.operands.first() {
            Some(range) if range.contains("..") => {
                let (a, b) = range.split_once("..").unwrap_or(("", ""));
                (if b.is_empty() { "HEAD" } else { b }, Some(a))
            }
            Some(rev) => (*rev, None),
            None => ("HEAD", None),
        };
        if self.repo.resolve(start).await.is_none() && start == "HEAD" {
            let branch = self.branch_name().await.unwrap_or_default();
            return Err(Out::fatal(format!(
                "your current branch '{branch}' does not have any commits yet"
            )));
        }
        let specs: Vec<String> = args.paths.iter().map(|p| self.pathspec(p)).collect();
        let graph = args.has(&["--graph"]);
        let mut commits = if graph || args.has(&["--topo-order"]) {
            self.topo_history(start, stop).await?
        } else {
            // Without filters, -n stops the walk itself.
            let filtered = !specs.is_empty() || args.value("--author").is_some();
            let walk_limit = limit.filter(|_| !filtered && !args.has(&["--reverse"]));
            self.history_upto(start, stop, walk_limit).await?
        };
        if args.has(&["--reverse"]) {
            if graph {
                return Err(Out::fatal(
                    "options '--reverse' and '--graph' cannot be used together",
                ));
            }
            commits.reverse();
        }
        let mut parents_of = Vec::new();
        let patch = args.has(&["-p", "--patch"]);
        let stat = args.has(&["--stat"]);
        let mut entries = Vec::new();
        for oid in commits {
            if limit.is_some_and(|n| entries.len() >= n) {
                break;
            }
            let commit = self.repo.commit(&oid).await.map_err(failed)?;
            if let Some(author) = args.value("--author") {
                if !commit.author.name.contains(author) && !commit.author.email.contains(author) {
                    continue;
                }
            }
            // A merge shows no diff unless asked (`-m`, `--cc`), and with
            // paths it is left out when its first parent had them the same.
            let merge = commit.parents.len() > 1;
            let needs_changes =
                (patch || stat || !specs.is_empty()) && !(merge && specs.is_empty());
            let changes = if needs_changes {
                let before = self
                    .repo
                    .commit_files(commit.parents.first().map(String::as_str))
                    .await
                    .map_err(failed)?;
                let after = self.repo.tree_files(&commit.tree).await.map_err(failed)?;
                self.changes(&before, &after, None, &specs).await?
            } else {
                Vec::new()
            };
            if !specs.is_empty() && changes.is_empty() {
                continue;
            }
            let mut entry = Self::entry(&style, &oid, &commit);
            if merge {
                // No patch or stat for a merge.
            } else if stat {
                entry.push('\n');
                entry.push_str(&diff::stat(&changes));
            } else if patch {
                entry.push('\n');
                entry.push_str(&changes.iter().map(Change::patch).collect::<String>());
            }
            entries.push(entry);
            parents_of.push((oid, commit.parents));
        }
        if graph {
            let separated = !matches!(style, Style::Oneline | Style::Format(_, false));
            return Ok(Out::ok(super::history::graph(
                &entries,
                &parents_of,
                separated,
            )));
        }
        let joined = match &style {
            Style::Medium => entries.join("\n"),
            Style::Format(_, true) => entries.join("\n"),
            Style::Format(_, false) => entries.iter().map(|e| format!("{e}\n")).collect(),
            Style::Oneline => entries.concat(),
        };
        Ok(Out::ok(joined))
    }

    async fn show(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["--format", "--pretty"]])?;
        let target = args.operands.first().copied().unwrap_or("HEAD");
        if let Some((revision, path)) = target.split_once(':') {
            let files = self
                .files_at(if revision.is_empty() {
                    "HEAD"
                } else {
                    revision
                })
                .await?;
            let path = path.trim_start_matches("./");
            let Some(blob) = files.get(path) else {
                return Err(Out::fatal(format!(
                    "path '{path}' does not exist in '{revision}'"
                )));
            };
            let bytes = self.repo.blob(&blob.oid).await.map_err(failed)?;
            return Ok(Out::ok(String::from_utf8_lossy(&bytes).into_owned()));
        }
        let mut oid = self.object(target).await?;
        let mut out = String::new();
        // An annotated tag: its own header and message, then what it names.
        loop {
            let (kind, body) = self.repo.read_object(&oid).await.map_err(failed)?;
            match kind.as_str() {
                "tag" => {
                    let text = String::from_utf8_lossy(&body);
                    let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
                    let field = |name: &str| {
                        headers
                            .lines()
                            .find_map(|l| l.strip_prefix(name))
                            .unwrap_or("")
                            .to_string()
                    };
                    let tagger = super::repo::Signature::parse(&field("tagger "));
                    let _ = write!(
                        out,
                        "tag {}\nTagger: {} <{}>\nDate:   {}\n\n{message}\n",
                        field("tag "),
                        tagger.name,
                        tagger.email,
                        tagger.date()
                    );
                    oid = field("object ");
                }
                "blob" => {
                    out.push_str(&String::from_utf8_lossy(&body));
                    return Ok(Out::ok(out));
                }
                _ => break,
            }
        }
        let commit = self.repo.commit(&oid).await.map_err(failed)?;
        let style = Style::of(&args);
        out.push_str(&Self::entry(&style, &oid, &commit));
        if let Style::Format(_, _) = style {
            out.push('\n');
        }
        // A clean merge's combined diff is empty (no file differs from
        // every parent); its stat is against the first parent.
        let summary = args.has(&["--stat", "--name-only", "--name-status"]);
        if args.has(&["-s", "--no-patch", "--quiet"]) || (commit.parents.len() > 1 && !summary) {
            return Ok(Out::ok(out));
        }
        let before = self
            .repo
            .commit_files(commit.parents.first().map(String::as_str))
            .await
            .map_err(failed)?;
        let after = self.repo.tree_files(&commit.tree).await.map_err(failed)?;
        let specs: Vec<String> = args.paths.iter().map(|p| self.pathspec(p)).collect();
        let changes = self.changes(&before, &after, None, &specs).await?;
        if !changes.is_empty() {
            if matches!(style, Style::Medium) {
                out.push('\n');
            }
            out.push_str(&Self::render(&changes, &args));
        }
        Ok(Out::ok(out))
    }

    // ---- branches ----------------------------------------------------------

    async fn branch(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
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

    async fn checkout(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-b"], &["-B"]])?;
        let quiet = args.has(&["-q", "--quiet"]);
        if let Some(name) = args.value("-b").or(args.value("-B")) {
            let start = args.operands.first().copied();
            return self
                .switch_to(name, start, true, args.value("-B").is_some(), quiet)
                .await;
        }
        let files: Vec<String> = args.paths.iter().map(|p| self.pathspec(p)).collect();
        match (args.operands.as_slice(), files.is_empty()) {
            ([target], true) if self.repo.branch(target).await.is_some() => {
                self.switch_to(target, None, false, false, quiet).await
            }
            ([target], true) if self.repo.resolve(target).await.is_some() => {
                self.detach(target, quiet).await
            }
            ([revision], false) => self.restore_paths(Some(revision), &files, true, true).await,
            ([], false) => self.restore_paths(None, &files, false, true).await,
            (paths, true) if !paths.is_empty() => {
                let specs: Vec<String> = paths.iter().map(|p| self.pathspec(p)).collect();
                self.restore_paths(None, &specs, false, true).await
            }
            _ => Err(Out::error(
                "usage: git checkout [-b <branch>] <branch> | -- <file>...\n",
                129,
            )),
        }
    }

    async fn switch(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-c", "--create"], &["-C", "--force-create"]])?;
        let quiet = args.has(&["-q", "--quiet"]);
        if let Some(name) = args.value("-c").or(args.value("-C")) {
            let start = args.operands.first().copied();
            return self
                .switch_to(name, start, true, args.value("-C").is_some(), quiet)
                .await;
        }
        match args.operands.as_slice() {
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

    /// Moves the index and work tree from `HEAD`'s files to `target`'s,
    /// refusing where a local change would be lost.
    pub(super) async fn move_to(&self, target: &Files) -> Result<(), Out> {
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
                indexed != head
                    || state.work_blobs.get(*p) != indexed
                    || (indexed.is_none() && state.work.contains_key(*p))
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
            match target.get(path) {
                Some(blob) => {
                    let entry = self.repo.checkout_file(path, blob).await.map_err(failed)?;
                    index.insert(path.clone(), entry);
                }
                None => {
                    self.repo.remove_file(path).await.map_err(failed)?;
                    index.remove(path);
                }
            }
        }
        self.repo.save_index(&index).await.map_err(failed)
    }

    async fn switch_to(
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

    /// What a checkout's reflog line says it moved from: the branch, or
    /// the commit a detached `HEAD` was at.
    fn checkout_name(&self, branch: Option<&str>, head: Option<&str>) -> String {
        match (branch, head) {
            (Some(branch), _) => branch.to_string(),
            (None, Some(oid)) => oid.to_string(),
            (None, None) => "HEAD".to_string(),
        }
    }

    async fn detach(&self, target: &str, quiet: bool) -> Run {
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
        let message = format!("HEAD is now at {} {subject}\n", short(&oid));
        Ok(Out::ok("").with_stderr(if quiet { String::new() } else { message }))
    }

    // ---- reset, restore ----------------------------------------------------

    async fn reset(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let quiet = args.has(&["-q", "--quiet"]);
        let repo = &self.repo;
        let (revision, mut specs): (&str, Vec<String>) = match args.operands.split_first() {
            Some((first, rest)) if repo.resolve(first).await.is_some() => {
                (*first, rest.iter().map(|p| self.pathspec(p)).collect())
            }
            _ => (
                "HEAD",
                args.operands.iter().map(|p| self.pathspec(p)).collect(),
            ),
        };
        specs.extend(args.paths.iter().map(|p| self.pathspec(p)));
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
            repo.save_index(&index).await.map_err(failed)?;
            return Ok(Out::ok(""));
        }
        let hard = args.has(&["--hard"]);
        let soft = args.has(&["--soft"]);
        if hard {
            let state = self.state().await?;
            let tracked: BTreeSet<&String> =
                state.index.keys().chain(state.head_files.keys()).collect();
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
                short(&oid)
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

    async fn restore(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-s", "--source"]])?;
        let staged = args.has(&["-S", "--staged"]);
        let worktree = args.has(&["-W", "--worktree"]) || !staged;
        let specs: Vec<String> = self.specs(&args.operands, &args.paths);
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
    async fn restore_paths(
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

    async fn merge(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-m", "--message"]])?;
        let repo = &self.repo;
        if args.has(&["--abort"]) {
            return self.merge_abort().await;
        }
        if repo.state_file("MERGE_HEAD").await.is_some() {
            return Err(Out::error(
                "error: Merging is not possible because you have unmerged files.\n\
                 hint: Fix them up in the work tree, and then use 'git add/rm <file>'\n\
                 hint: as appropriate to mark resolution and make a commit.\n\
                 fatal: Exiting because of an unresolved conflict.\n",
                128,
            ));
        }
        let Some(target) = args.operands.first() else {
            return Err(Out::fatal("No remote for the current branch."));
        };
        if repo.resolve(target).await.is_none() {
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
                short(&ours),
                short(&theirs),
                diff::stat(&changes),
                Self::mode_summary(&changes)
            )));
        }
        if args.has(&["--ff-only"]) {
            return Err(Out::fatal("Not possible to fast-forward, aborting."));
        }
        let Some(base) = super::merge::base(repo, &ours, &theirs).await else {
            return Err(Out::fatal("refusing to merge unrelated histories"));
        };
        let base_files = repo.commit_files(Some(&base)).await.map_err(failed)?;
        let their_files = repo.commit_files(Some(&theirs)).await.map_err(failed)?;
        let state = self.state().await?;
        let mut paths: BTreeSet<&String> = base_files.keys().collect();
        paths.extend(before.keys());
        paths.extend(their_files.keys());
        // Every path's outcome: merged blob (None: deleted), or a conflict.
        let mut result: Files = before.clone();
        let mut conflicts: Vec<(String, u8, Blob)> = Vec::new();
        let mut worktree: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut notes = String::new();
        let mut conflicted = Vec::new();
        for path in paths {
            let (b, o, t) = (
                base_files.get(path),
                before.get(path),
                their_files.get(path),
            );
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
                    let merged = match texts {
                        (Ok(bt), Ok(mt), Ok(tt)) if !mt.contains('\0') && !tt.contains('\0') => {
                            Some(super::merge::text(&bt, &mt, &tt, "HEAD", target))
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
                        None => ("HEAD".to_string(), target.to_string(), *target),
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
        for path in before.keys().chain(result.keys()).collect::<BTreeSet<_>>() {
            if worktree.contains_key(path) || before.get(path) == result.get(path) {
                continue;
            }
            match result.get(path) {
                Some(blob) => {
                    let entry = repo.checkout_file(path, blob).await.map_err(failed)?;
                    index.insert(path.clone(), entry);
                }
                None => {
                    repo.remove_file(path).await.map_err(failed)?;
                    index.remove(path);
                }
            }
        }
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
            for (path, text) in &worktree {
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
            }
            repo.set_unmerged(conflicts);
            repo.save_index(&index).await.map_err(failed)?;
            let mut merge_msg = message.clone();
            merge_msg.push_str("\n# Conflicts:\n");
            for path in &conflicted {
                let _ = writeln!(merge_msg, "#\t{path}");
            }
            repo.write_state_file("MERGE_HEAD", &format!("{theirs}\n"))
                .await
                .map_err(failed)?;
            repo.write_state_file("MERGE_MSG", &merge_msg)
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
        let tree = repo.write_tree(&result).await.map_err(failed)?;
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
        let changes = self.changes(&before, &result, None, &[]).await?;
        Ok(Out::ok(format!(
            "{notes}Merge made by the 'ort' strategy.\n{}{}",
            diff::stat(&changes),
            Self::mode_summary(&changes)
        )))
    }

    /// Writes a commit object: the author given (who, when) or the
    /// environment's, the committer always the environment's.
    pub(super) async fn write_commit(
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
    async fn merge_abort(&self) -> Run {
        let repo = &self.repo;
        if repo.state_file("MERGE_HEAD").await.is_none() {
            return Err(Out::fatal(
                "There is no merge to abort (MERGE_HEAD missing).",
            ));
        }
        let head = repo.head_commit().await;
        let target = repo.commit_files(head.as_deref()).await.map_err(failed)?;
        let state = self.state().await?;
        let mut index = Index::new();
        let unmerged = repo.unmerged_stages();
        for path in state.index.keys().chain(unmerged.keys()) {
            if !target.contains_key(path) {
                repo.remove_file(path).await.map_err(failed)?;
            }
        }
        for (path, blob) in &target {
            let entry = if state.work_blobs.get(path) == Some(blob) && !unmerged.contains_key(path)
            {
                state.index.get(path).cloned()
            } else {
                None
            };
            let entry = match entry {
                Some(entry) => entry,
                None => repo.checkout_file(path, blob).await.map_err(failed)?,
            };
            index.insert(path.clone(), entry);
        }
        repo.set_unmerged(Vec::new());
        repo.save_index(&index).await.map_err(failed)?;
        repo.remove_state_files(&["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"])
            .await;
        Ok(Out::ok(""))
    }

    /// `create mode`/`delete mode`/`mode change` lines, as `commit` and
    /// `merge` print them after the stat.
    pub(super) fn mode_summary(changes: &[Change]) -> String {
        let mut out = String::new();
        for change in changes {
            match (&change.old, &change.new) {
                _ if change.from.is_some() => {
                    let _ = writeln!(out, " rename {} (100%)", change.name());
                }
                (None, Some((blob, _))) => {
                    let _ = writeln!(out, " create mode {:o} {}", blob.mode, change.path);
                }
                (Some((blob, _)), None) => {
                    let _ = writeln!(out, " delete mode {:o} {}", blob.mode, change.path);
                }
                (Some((old, _)), Some((new, _))) if old.mode != new.mode => {
                    let _ = writeln!(
                        out,
                        " mode change {:o} => {:o} {}",
                        old.mode, new.mode, change.path
                    );
                }
                _ => {}
            }
        }
        out
    }

    /// `fetch`, then `merge` of the upstream branch, as git pulls.
    #[cfg(feature = "network")]
    async fn pull(&self, args: &[String]) -> Run {
        let repo = &self.repo;
        let quiet = args.iter().any(|a| a == "-q" || a == "--quiet");
        let Head::Branch(branch) = repo.head().await else {
            return Err(Out::fatal(
                "You are not currently on a branch.\nPlease specify which branch you want to merge with.",
            ));
        };
        let given: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
        let remote = match given.first() {
            Some(remote) => remote.to_string(),
            None => repo
                .config_value(&format!("branch.{branch}.remote"))
                .await
                .unwrap_or_else(|| "origin".to_string()),
        };
        let fetched = super::transfer::fetch_into(self.here, repo, &remote, false).await?;
        let mut err = String::new();
        if !fetched.lines.is_empty() && !quiet {
            let _ = writeln!(err, "From {}", fetched.url);
            err.push_str(&super::transfer::report(&fetched.lines));
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
            let asked = args
                .iter()
                .any(|a| matches!(a.as_str(), "--no-rebase" | "--ff" | "--no-ff" | "--rebase"));
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
        let merged = self.merge(&[upstream, "-m".to_string(), message]).await;
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

    async fn tag(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-m", "--message"]])?;
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

    async fn ls_files(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let prefix = self.pathspec(".");
        let specs: Vec<String> = self.specs(&args.operands, &args.paths);
        let shown = |path: &str| -> Option<String> {
            if !Self::any_match(&specs, path) {
                return None;
            }
            if prefix.is_empty() {
                Some(path.to_string())
            } else {
                path.strip_prefix(&format!("{prefix}/")).map(str::to_string)
            }
        };
        let mut out = String::new();
        if args.has(&["-o", "--others"]) {
            let state = self.state().await?;
            let standard = args.has(&["--exclude-standard"]);
            let others = state
                .work
                .iter()
                .filter(|(p, f)| !(state.index.contains_key(*p) || standard && f.ignored))
                .map(|(p, _)| p);
            for path in others {
                if let Some(shown) = shown(path) {
                    let _ = writeln!(out, "{shown}");
                }
            }
            return Ok(Out::ok(out));
        }
        if args.has(&["-m", "--modified", "-d", "--deleted"]) {
            let state = self.state().await?;
            let wanted = if args.has(&["-d", "--deleted"]) {
                'D'
            } else {
                'M'
            };
            for (code, path) in state.unstaged() {
                // A deleted file is modified too, as git lists it.
                if code == wanted || wanted == 'M' {
                    if let Some(shown) = shown(&path) {
                        let _ = writeln!(out, "{shown}");
                    }
                }
            }
            return Ok(Out::ok(out));
        }
        let stage = args.has(&["-s", "--stage"]);
        for (path, entry) in self.repo.index().await.map_err(failed)? {
            if let Some(shown) = shown(&path) {
                if stage {
                    let _ = writeln!(out, "{:o} {} 0\t{shown}", entry.blob.mode, entry.blob.oid);
                } else {
                    let _ = writeln!(out, "{shown}");
                }
            }
        }
        Ok(Out::ok(out))
    }

    async fn rev_parse(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let repo = &self.repo;
        let mut out = String::new();
        for flag in &args.flags {
            match *flag {
                "--show-toplevel" => {
                    let _ = writeln!(out, "{}", repo.root.display());
                }
                "--git-dir" => out.push_str(".git\n"),
                "--is-inside-work-tree" => out.push_str("true\n"),
                "--is-inside-git-dir" => out.push_str("false\n"),
                "--show-prefix" => {
                    let prefix = self.pathspec(".");
                    let _ = writeln!(
                        out,
                        "{}",
                        if prefix.is_empty() {
                            prefix
                        } else {
                            format!("{prefix}/")
                        }
                    );
                }
                _ => {}
            }
        }
        let abbreviated = args.has(&["--abbrev-ref"]);
        let shortened = args.has(&["--short"]);
        for name in &args.operands {
            if abbreviated && *name == "HEAD" && repo.head_commit().await.is_some() {
                match repo.head().await {
                    Head::Branch(branch) => {
                        let _ = writeln!(out, "{branch}");
                    }
                    Head::Detached(_) => out.push_str("HEAD\n"),
                }
                continue;
            }
            let Some(oid) = repo.resolve(name).await else {
                return Err(Out {
                    stdout: format!("{out}{name}\n"),
                    stderr: format!(
                        "fatal: ambiguous argument '{name}': unknown revision or path not in the working tree.\n\
                         Use '--' to separate paths from revisions, like this:\n\
                         'git <command> [<revision>...] -- [<file>...]'\n"
                    ),
                    code: 128,
                });
            };
            let _ = writeln!(out, "{}", if shortened { short(&oid) } else { &oid });
        }
        Ok(Out::ok(out))
    }

    async fn merge_base(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let [a, b] = args.operands.as_slice() else {
            return Err(Out::error("usage: git merge-base <commit> <commit>\n", 129));
        };
        let (a, b) = (self.revision(a).await?, self.revision(b).await?);
        match super::merge::base(&self.repo, &a, &b).await {
            Some(oid) => Ok(Out::ok(format!("{oid}\n"))),
            None => Err(Out::error("", 1)),
        }
    }

    async fn grep(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[&["-e"]])?;
        let mut operands = args.operands.iter();
        let Some(pattern) = args.value("-e").or_else(|| operands.next().copied()) else {
            return Err(Out::fatal("no pattern given"));
        };
        let specs: Vec<String> = self.specs(operands.as_slice(), &args.paths);
        let source = if args.has(&["-F", "--fixed-strings"]) {
            regex::escape(pattern)
        } else if args.has(&["-E", "--extended-regexp", "-P", "--perl-regexp"]) {
            pattern.to_string()
        } else {
            text::basic_regex(pattern)
        };
        let source = if args.has(&["-w", "--word-regexp"]) {
            format!(r"\b(?:{source})\b")
        } else {
            source
        };
        let regex = regex::RegexBuilder::new(&source)
            .case_insensitive(args.has(&["-i", "--ignore-case"]))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| Out::fatal(format!("command line, '{pattern}': {e}")))?;
        let numbered = args.has(&["-n", "--line-number"]);
        let names_only = args.has(&["-l", "--files-with-matches", "--name-only"]);
        let count = args.has(&["-c", "--count"]);
        let invert = args.has(&["-v", "--invert-match"]);
        let mut out = String::new();
        for (path, entry) in self.repo.index().await.map_err(failed)? {
            if !Self::any_match(&specs, &path) || entry.blob.mode == 0o120000 {
                continue;
            }
            let Ok(bytes) = self.repo.content(&path, entry.blob.mode).await else {
                continue;
            };
            if bytes.iter().take(8000).any(|&b| b == 0) {
                continue;
            }
            let content = String::from_utf8_lossy(&bytes);
            let mut hits = 0;
            for (number, line) in content.lines().enumerate() {
                if regex.is_match(line) == invert {
                    continue;
                }
                hits += 1;
                if names_only || count {
                    continue;
                }
                if numbered {
                    let _ = writeln!(out, "{path}:{}:{line}", number + 1);
                } else {
                    let _ = writeln!(out, "{path}:{line}");
                }
            }
            if hits > 0 && names_only {
                let _ = writeln!(out, "{path}");
            } else if hits > 0 && count {
                let _ = writeln!(out, "{path}:{hits}");
            }
        }
        let code = i32::from(out.is_empty());
        Ok(Out {
            stdout: out,
            stderr: String::new(),
            code,
        })
    }

    async fn cat_file(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let Some(name) = args.operands.last() else {
            return Err(Out::error(
                "usage: git cat-file (-t | -s | -p) <object>\n",
                129,
            ));
        };
        let oid = match self.repo.resolve(name).await {
            Some(oid) => oid,
            None if name.len() == 40 => name.to_string(),
            None => return Err(Out::fatal(format!("Not a valid object name {name}"))),
        };
        let (kind, body) = self.repo.read_object(&oid).await.map_err(failed)?;
        if args.has(&["-t"]) {
            return Ok(Out::ok(format!("{kind}\n")));
        }
        if args.has(&["-s"]) {
            return Ok(Out::ok(format!("{}\n", body.len())));
        }
        if kind == "tree" {
            let mut out = String::new();
            let files = self.repo.tree_files(&oid).await.map_err(failed)?;
            for (path, blob) in files {
                let _ = writeln!(out, "{:06o} blob {}\t{path}", blob.mode, blob.oid);
            }
            return Ok(Out::ok(out));
        }
        Ok(Out::ok(String::from_utf8_lossy(&body).into_owned()))
    }

    async fn clean(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &[])?;
        let dry = args.has(&["-n", "--dry-run"]);
        if !dry && !args.has(&["-f", "--force"]) {
            return Err(Out::fatal(
                "clean.requireForce defaults to true and neither -i, -n, nor -f given; refusing to clean",
            ));
        }
        let directories = args.has(&["-d"]);
        let state = self.state().await?;
        let mut out = String::new();
        for path in state.untracked() {
            let is_dir = path.ends_with('/');
            if is_dir && !directories {
                continue;
            }
            if dry {
                let _ = writeln!(out, "Would remove {path}");
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
            if !quiet {
                let _ = writeln!(out, "Removing {path}");
            }
        }
        Ok(Out::ok(out))
    }
}

/// How `log` and `show` print a commit.
enum Style {
    Medium,
    Oneline,
    /// The format, and whether entries are separated (`format:`) rather
    /// than each ended (`tformat:`, `--format=`) by a newline.
    Format(String, bool),
}

impl Style {
    fn of(args: &Args<'_>) -> Self {
        if args.has(&["--oneline"]) {
            return Style::Oneline;
        }
        match args.value("--format") {
            Some("oneline") => Style::Oneline,
            Some("medium" | "full" | "fuller" | "short") | None => Style::Medium,
            Some(format) => match format.strip_prefix("format:") {
                Some(format) => Style::Format(format.to_string(), true),
                None => Style::Format(
                    format
                        .strip_prefix("tformat:")
                        .unwrap_or(format)
                        .to_string(),
                    false,
                ),
            },
        }
    }
}

/// What a status line is ordered by: a rename's new name.
fn sort_key(shown: &str) -> &str {
    shown.rsplit(" -> ").next().unwrap_or(shown)
}

fn display_spec(spec: &str) -> &str {
    if spec.is_empty() {
        "."
    } else {
        spec
    }
}

fn check_branch_name(name: &str) -> Result<(), Out> {
    let bad = name.is_empty()
        || name.starts_with('-')
        || name.contains("..")
        || name.ends_with('/')
        || name.ends_with(".lock")
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c));
    if bad {
        return Err(Out::fatal(format!("'{name}' is not a valid branch name")));
    }
    Ok(())
}
