//! The commands, each printing what git prints: the dispatch, the
//! arguments, the state a command reads and the helpers the commands
//! share; the commands themselves, by concept, in the modules below.

/// `$then![...]` with the given flags and those of the revision walk's
/// filters that `log`, `rev-list` and `shortlog` share (`--merges`, the
/// refs to walk, how `--author`/`--grep` patterns match).
macro_rules! with_walk_flags {
    ($then:ident; $($flag:expr),* $(,)?) => {
        $then![
            $($flag,)*
            "--merges",
            "--no-merges",
            "--first-parent",
            "--all",
            "--branches",
            "--tags",
            "--remotes",
            "--all-match",
            "--invert-grep",
            "-i",
            "--regexp-ignore-case",
            "-E",
            "--extended-regexp",
            "-F",
            "--fixed-strings",
        ]
    };
}

/// The valued options of the revision walk's filters, after the given ones.
macro_rules! with_walk_values {
    ($($names:expr),* $(,)?) => {
        &[
            $($names,)*
            &["--author"],
            &["--committer"],
            &["--grep"],
            &["--since", "--after"],
            &["--until", "--before"],
            &["--min-parents"],
            &["--max-parents"],
        ]
    };
}

/// Flags as they are: the end of a chain of the macros above.
macro_rules! flag_list {
    ($($flag:expr),* $(,)?) => {
        &[$($flag,)*]
    };
}
pub(crate) use {flag_list, with_walk_flags, with_walk_values};

mod branches;
mod checkout;
mod git_options;
mod index;
mod listing;
mod log;
mod merging;
mod picking;
mod plumbing;
mod setup;
mod status;

pub(crate) use log::Filter;
#[cfg(not(feature = "network"))]
use setup::remote_io;
use setup::{config, init, remote};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::dates::{self, DateMode};
use super::diff::{self, Change};
use super::repo::{
    committed_files, index_files, Abbrev, Blob, Files, Head, Index, Oid, Repo, Signature, WorkFile,
};
use super::revspec::RevSpec;
use super::{config, text};
use super::{resolve, Here, Out, Run};

const SUPPORTED: &str = "init, clone, fetch, pull, push, ls-remote, remote, config, add, rm, \
mv, commit, status, log, show, diff, branch, checkout, switch, reset, restore, merge, stash, tag, \
describe, shortlog, blame, cherry-pick, revert, ls-files, ls-tree, rev-parse, rev-list, merge-base, show-ref, \
for-each-ref, reflog, check-ignore, name-rev, count-objects, grep, cat-file, clean";

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
                    | "cherry-pick"
                    | "revert"
            ) {
                repo.check_writable().await.map_err(Out::fatal)?;
            }
            let quote_high = repo.config_bool("core.quotepath", true).await;
            let it = Ctx {
                here,
                repo,
                quote_high,
                renames: std::sync::atomic::AtomicBool::new(true),
            };
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
                "ls-tree" => it.ls_tree(rest).await,
                "rev-list" => it.rev_list(rest).await,
                "show-ref" => it.show_ref(rest).await,
                "for-each-ref" => it.for_each_ref(rest).await,
                "reflog" => it.reflog(rest).await,
                "name-rev" => it.name_rev(rest).await,
                "cherry-pick" => it.cherry_pick(rest).await,
                "revert" => it.revert(rest).await,
                "count-objects" => it.count_objects(rest).await,
                "check-ignore" => it.check_ignore(rest).await,
                // One git has: refused as any option we have not built.
                _ if git_options::git_has_command(name) => Err(Out::error(
                    format!(
                        "fatal: not supported by the sandbox's git: {name}\n\
                         The sandbox's git has: {SUPPORTED}\n"
                    ),
                    128,
                )),
                _ => Err(Out::error(
                    format!("git: '{name}' is not a git command. See 'git --help'.\n"),
                    1,
                )),
            }
        }
    }
}

pub(super) fn failed(message: impl std::fmt::Display) -> Out {
    Out::fatal(message)
}

/// What a command takes: every option the sandbox's git does as git does
/// it. Anything else given is refused before the command runs: with
/// `not supported by the sandbox's git` (exit 128) when git has it, with
/// git's own usage error when git does not. Never parsed and ignored.
pub(super) struct Spec {
    /// The command as git names it (`stash push`).
    pub(super) command: &'static str,
    /// Flags, by every spelling; `--name=` stands for `--name=<value>`,
    /// `-<n>` for `-1`, `-2`, … (a count, as `log -3`), `-U<n>` for `-U5`.
    pub(super) flags: &'static [&'static str],
    /// Options followed by a value (`-m MSG`, or `-mMSG`, `--message=MSG`),
    /// by every name they go by, the first the key.
    pub(super) valued: &'static [&'static [&'static str]],
}

impl Spec {
    fn allows(&self, flag: &str) -> bool {
        let flags = self.flags;
        flags.contains(&flag)
            || flag
                .split_once('=')
                .is_some_and(|(name, _)| flags.iter().any(|f| f.strip_suffix('=') == Some(name)))
            || flags.iter().any(|f| {
                // `-<n>` stands for `-3`, `-U<n>` for `-U5`.
                f.strip_suffix("<n>").is_some_and(|prefix| {
                    flag.strip_prefix(prefix)
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
            })
    }

    /// The refusal of an option this command does not take.
    fn refusal(&self, flag: &str) -> Out {
        // `--name=value`, `-xVALUE`: the option is `--name`, `-x`.
        let single = !flag.starts_with("--");
        let name = match single {
            true => flag.get(..2).unwrap_or(flag),
            false => flag.split_once('=').map_or(flag, |(name, _)| name),
        };
        if git_options::git_has(self.command, name) {
            return Out::fatal(format!("not supported by the sandbox's git: {flag}"));
        }
        let usage = format!("usage: git {} [<options>]\n", self.command);
        match self.command {
            "log" | "show" | "rev-list" | "reflog" | "shortlog" => {
                Out::fatal(format!("unrecognized argument: {flag}"))
            }
            "diff" => Out::error(format!("error: invalid option: {flag}\n{usage}"), 129),
            _ if single => Out::error(
                format!("error: unknown switch `{}'\n{usage}", &name[1..]),
                129,
            ),
            _ => Out::error(
                format!(
                    "error: unknown option `{}'\n{usage}",
                    name.trim_start_matches('-')
                ),
                129,
            ),
        }
    }
}

/// Options a command takes, split from its operands; `--` ends options.
pub(super) struct Args<'a> {
    flags: Vec<&'a str>,
    /// Every flag and valued option's key, in the order given.
    given: Vec<&'a str>,
    values: BTreeMap<&'static str, String>,
    pub(super) operands: Vec<&'a str>,
    pub(super) paths: Vec<&'a str>,
}

impl<'a> Args<'a> {
    /// `args` read as `spec` says; an option it does not take is refused.
    pub(super) fn parse(args: &'a [String], spec: &Spec) -> Result<Self, Out> {
        let parsed = Self::split(args, spec.valued, Some(spec.flags))?;
        match parsed.flags.iter().find(|flag| !spec.allows(flag)) {
            Some(flag) => Err(spec.refusal(flag)),
            None => Ok(parsed),
        }
    }

    /// `args` split by `valued`, every other option let through: for a
    /// command that refuses whatever it is given.
    pub(super) fn split(
        args: &'a [String],
        valued: &[&[&'static str]],
        flags: Option<&[&str]>,
    ) -> Result<Self, Out> {
        let mut parsed = Args {
            flags: Vec::new(),
            given: Vec::new(),
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
            // `-3`: a count, as `-n 3` (the last one given counts).
            if arg.len() > 1
                && arg[1..].bytes().all(|b| b.is_ascii_digit())
                && valued.iter().any(|names| names[0] == "-n")
                && flags.is_some_and(|flags| flags.contains(&"-<n>"))
            {
                parsed.push_value("-n", &arg[1..]);
                continue;
            }
            // `--stat=WIDTH[,NAME-WIDTH]` is `--stat`, sized.
            if let Some(size) = arg.strip_prefix("--stat=") {
                parsed.push_flag("--stat");
                parsed.push_value("--stat", size);
                continue;
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
                    // Letters the command takes, each; else one option
                    // with its value attached (`-Shello`), refused whole.
                    let known = |c: &char| {
                        takes(*c).is_some()
                            || flags.is_none_or(|flags| flags.contains(&short_flag(*c)))
                    };
                    if letters.iter().all(|c| c.is_ascii_alphabetic() && known(c)) {
                        for (i, c) in letters.iter().enumerate() {
                            match takes(*c) {
                                Some(key) if i == letters.len() - 1 => {
                                    let value = iter.next().ok_or_else(|| {
                                        failed(format!("switch '{c}' requires a value"))
                                    })?;
                                    parsed.push_value(key, value);
                                }
                                _ => parsed.push_flag(short_flag(*c)),
                            }
                        }
                        continue;
                    }
                }
                parsed.push_flag(arg);
            } else {
                parsed.operands.push(arg);
            }
        }
        Ok(parsed)
    }

    fn push_flag(&mut self, flag: &'a str) {
        self.flags.push(flag);
        self.given.push(flag);
    }

    fn push_value(&mut self, key: &'static str, value: &str) {
        self.given.push(key);
        match self.values.get_mut(key) {
            // Repeated `-m`: paragraphs.
            Some(existing) if key == "-m" => {
                existing.push_str("\n\n");
                existing.push_str(value);
            }
            // Repeated `-e` (grep), `--grep`, `--author`, `--sort`: one per line.
            Some(existing)
                if [
                    "-e",
                    "--grep",
                    "--author",
                    "--committer",
                    "--sort",
                    "-L",
                    "--refs",
                    "--exclude",
                ]
                .contains(&key) =>
            {
                existing.push('\n');
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

    /// The last of `names` given, for options where the last one wins.
    pub(super) fn last(&self, names: &[&str]) -> Option<&str> {
        self.flags.iter().rev().find(|f| names.contains(f)).copied()
    }

    /// The last of `names` (flags, or valued options by their key)
    /// given: `--oneline` then `--format=%s` is the format.
    pub(super) fn last_given(&self, names: &[&str]) -> Option<&str> {
        self.given.iter().rev().find(|f| names.contains(f)).copied()
    }

    /// The number of the last `PREFIX<n>` flag given (`-n3`: 3).
    pub(super) fn numbered(&self, prefix: &str) -> Option<usize> {
        self.flags
            .iter()
            .rev()
            .find_map(|f| f.strip_prefix(prefix)?.parse().ok())
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

    /// `A`/`M`/`D` of the index against the last commit, file by file
    /// (`status` pairs renames among them: [`Ctx::staged_renamed`]).
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

    /// The state of the paths `keep` picks, and nothing of the others.
    pub(super) fn within(self, keep: impl Fn(&str) -> bool) -> State {
        State {
            head: self.head,
            head_files: self
                .head_files
                .into_iter()
                .filter(|(p, _)| keep(p))
                .collect(),
            index: self.index.into_iter().filter(|(p, _)| keep(p)).collect(),
            work: self.work.into_iter().filter(|(p, _)| keep(p)).collect(),
            work_blobs: self
                .work_blobs
                .into_iter()
                .filter(|(p, _)| keep(p))
                .collect(),
            unmerged: self.unmerged.into_iter().filter(|(p, _)| keep(p)).collect(),
        }
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
    /// `core.quotePath`: paths past ASCII printed quoted, in octal.
    pub(super) quote_high: bool,
    /// Whether changes pair deleted and added files as renames: always,
    /// but in `diff`, `log` and `show` as `diff.renames`, `-M` and
    /// `--no-renames` say ([`Ctx::find_renames`]).
    pub(super) renames: std::sync::atomic::AtomicBool,
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

    /// A path the user gave, relative to the work tree's root; git's
    /// fatal error for one outside it (`..` at the top).
    pub(super) fn inside(&self, spec: &str) -> Result<String, Out> {
        let full = resolve(&self.here.cwd, spec);
        match full.starts_with(&self.repo.root) {
            true => Ok(self.repo.relative(&full)),
            false => Err(Out::fatal(format!(
                "{spec}: '{spec}' is outside repository at '{}'",
                self.repo.root.display()
            ))),
        }
    }

    /// Paths the user gave, each as [`Ctx::inside`] reads it.
    pub(super) fn inside_all<'a>(
        &self,
        given: impl IntoIterator<Item = &'a &'a str>,
    ) -> Result<Vec<String>, Out> {
        given.into_iter().map(|spec| self.inside(spec)).collect()
    }

    /// The pathspecs among `operands` and after `--`.
    fn specs(&self, operands: &[&str], paths: &[&str]) -> Result<Vec<String>, Out> {
        self.inside_all(operands.iter().chain(paths))
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
    /// directory, quoted as `status` quotes it.
    fn shown(&self, path: &str) -> String {
        self.shown_as(path, false)
    }

    /// A path quoted as git prints one (`core.quotePath`).
    pub(super) fn quoted<'p>(&self, path: &'p str) -> std::borrow::Cow<'p, str> {
        text::quote_path(path, self.quote_high)
    }

    /// [`Self::shown`], each name in quotes also when it holds a space
    /// (`spaced`, as `status --short` has it).
    pub(super) fn shown_as(&self, path: &str, spaced: bool) -> String {
        if let Some((from, to)) = path.split_once(" -> ") {
            return format!(
                "{} -> {}",
                self.shown_as(from, spaced),
                self.shown_as(to, spaced)
            );
        }
        let relative = self.relative_path(path);
        match spaced {
            true => text::quote_spaced(&relative, self.quote_high).into_owned(),
            false => text::quote_path(&relative, self.quote_high).into_owned(),
        }
    }

    /// A repository path as seen from the working directory.
    fn relative_path(&self, path: &str) -> String {
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

    /// What `commit` changed from its first parent (from nothing for a
    /// root commit), within `specs`.
    pub(super) async fn commit_changes(
        &self,
        commit: &super::repo::Commit,
        specs: &[String],
    ) -> Result<Vec<Change>, Out> {
        let parent_tree = match commit.parents.first() {
            Some(parent) => Some(self.repo.commit(parent).await.map_err(failed)?.tree),
            None => None,
        };
        let (before, after) = self
            .repo
            .changed_files(parent_tree.as_deref(), &commit.tree)
            .await
            .map_err(failed)?;
        self.changes(&before, &after, None, specs).await
    }

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
        let changed: Vec<&str> = paths
            .iter()
            .filter(|p| Self::any_match(specs, p))
            .filter(|p| {
                let after = match work {
                    Some(state) => state.work_blobs.get(**p),
                    None => new.get(**p),
                };
                old.get(**p) != after
            })
            .map(|p| p.as_str())
            .collect();
        let attributes = repo.attributes(changed.iter().copied()).await;
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
            let driver = match attributes.driver(path) {
                Ok(driver) => driver,
                Err(name) => self.other_driver(&name, path).await?,
            };
            changes.push(Change {
                quote_high: self.quote_high,
                path: path.clone(),
                from: None,
                similarity: 0,
                copied: false,
                driver,
                old: old_side,
                new: new_side,
            });
        }
        match self.renames.load(std::sync::atomic::Ordering::Relaxed) {
            true => Ok(diff::with_renames(changes)),
            false => Ok(changes),
        }
    }

    /// Whether `diff`, `log` and `show` look for renames: `diff.renames`
    /// (on unless `false`), then `-M`/`--find-renames` and `--no-renames`,
    /// the last one given counting. Copy detection is refused.
    pub(super) async fn find_renames(&self, args: &Args<'_>) -> Result<(), Out> {
        let setting = self.repo.config_value("diff.renames").await;
        let mut renames = match setting.as_deref().map(str::to_ascii_lowercase) {
            None => true,
            Some(v) if v == "copies" || v == "copy" => {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: diff.renames={} (copy detection)",
                    setting.unwrap_or_default()
                )))
            }
            Some(_) => self.repo.config_bool("diff.renames", true).await,
        };
        if let Some(flag) = args.last(&["-M", "--find-renames", "--no-renames"]) {
            renames = flag != "--no-renames";
        }
        self.renames
            .store(renames, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// A `diff=NAME` driver that is no built-in of this git: as git, the
    /// default rules when nothing defines it; refused when git would use
    /// a definition this git does not read (a built-in it has not built,
    /// or `diff.NAME.*` settings).
    async fn other_driver(&self, name: &str, path: &str) -> Result<crate::userdiff::Driver, Out> {
        let prefix = format!("diff.{}.", name.to_ascii_lowercase());
        let defined = self
            .repo
            .config()
            .await
            .iter()
            .any(|(key, _)| key.to_ascii_lowercase().starts_with(&prefix));
        if defined || crate::userdiff::NOT_BUILT.contains(&name) {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: the diff driver '{name}' (.gitattributes, for {path})"
            )));
        }
        Ok(crate::userdiff::Driver::Default)
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

    /// A revision as the object it names (a tag stays a tag), paths in
    /// it (`REV:./x`) read from the current directory.
    async fn object(&self, revision: &str) -> Result<Oid, Out> {
        match self.revspec(revision).await? {
            Some(RevSpec::Include(oid)) => Ok(oid),
            _ => Err(Out::fatal(format!(
                "ambiguous argument '{revision}': unknown revision or path not in the working tree."
            ))),
        }
    }

    /// The best common ancestors of two commits or tags of them.
    pub(super) async fn merge_bases(&self, a: &str, b: &str) -> Vec<Oid> {
        match (self.repo.peel(a).await, self.repo.peel(b).await) {
            (Ok(a), Ok(b)) => crate::merge::bases(&self.repo, &a, &b).await,
            _ => Vec::new(),
        }
    }

    /// Object names as `args` (`--abbrev=N`) has them abbreviated.
    pub(super) async fn abbrev(&self, args: &Args<'_>) -> Result<std::sync::Arc<Abbrev>, Out> {
        abbrev_of(&self.repo, args).await
    }

    /// What a revision argument (a single one or a range) names, paths
    /// in it read from the current directory; git's fatal error where git
    /// stops reading it (`@{upstream}` of a branch that has none).
    pub(super) async fn revspec(&self, text: &str) -> Result<Option<RevSpec>, Out> {
        self.repo
            .revspec(text, &self.pathspec("."))
            .await
            .map_err(Out::fatal)
    }

    /// A revision argument as git's walk takes it: each object, and
    /// whether its history is left out (`^`): `A..B` is `B ^A`, `A...B`
    /// is `B A` and `^` each merge base, `A^!` is `A` and `^` each parent,
    /// `A^@` its parents.
    pub(super) async fn tips(&self, spec: RevSpec) -> Vec<(bool, Oid)> {
        let parents_only = matches!(spec, RevSpec::Parents(_));
        match spec {
            RevSpec::Include(oid) => vec![(false, oid)],
            RevSpec::Exclude(oid) => vec![(true, oid)],
            RevSpec::Range { from, to } => vec![(false, to), (true, from)],
            RevSpec::Symmetric { left, right } => {
                let bases = self.merge_bases(&left, &right).await;
                let mut tips = vec![(false, right), (false, left)];
                tips.extend(bases.into_iter().map(|base| (true, base)));
                tips
            }
            RevSpec::Parents(oid) | RevSpec::WithoutParents(oid) => {
                let parents = self.repo.commit(&oid).await.map(|c| c.parents);
                let parents = parents.unwrap_or_default().into_iter();
                if parents_only {
                    parents.map(|p| (false, p)).collect()
                } else {
                    std::iter::once((false, oid))
                        .chain(parents.map(|p| (true, p)))
                        .collect()
                }
            }
        }
    }
}

/// Object names abbreviated as git does, to `--abbrev=N` digits (at least
/// 4, at most 40) when given, else to the repository's default.
async fn abbrev_of(repo: &Repo, args: &Args<'_>) -> Result<std::sync::Arc<Abbrev>, Out> {
    let abbrev = repo.abbrev().await;
    // The last one given counts; `--abbrev` alone is the default.
    let last = args
        .flags
        .iter()
        .rev()
        .find(|f| **f == "--abbrev" || f.starts_with("--abbrev="));
    let Some(given) = last.and_then(|f| f.strip_prefix("--abbrev=")) else {
        return Ok(abbrev);
    };
    let len: usize = given
        .parse()
        .map_err(|_| Out::error("error: option `abbrev' expects a numerical value\n", 129))?;
    Ok(std::sync::Arc::new(abbrev.with_len(len.clamp(4, 40))))
}

/// How `log` and `show` print each commit's names and dates.
pub(super) struct Shown {
    pub(super) abbrev: std::sync::Arc<Abbrev>,
    pub(super) date: DateMode,
    /// What `relative` dates count back from.
    pub(super) now: i64,
    /// `--abbrev-commit`: the `commit` line's name abbreviated.
    pub(super) abbrev_commit: bool,
    /// `.mailmap`, for `%aN` and its kind.
    pub(super) mailmap: std::sync::Arc<super::mailmap::Mailmap>,
    /// Whether authors and committers are shown as `.mailmap` names them
    /// (`log.mailmap`, its default on; `--[no-]use-mailmap`).
    pub(super) map_idents: bool,
    /// Each decorated commit's refs as git lists them (`HEAD -> main,
    /// tag: v1, origin/main`), read when `--decorate`, `log.decorate` or
    /// a format's `%d`/`%D` wants them.
    pub(super) decorations: Option<std::collections::HashMap<Oid, String>>,
    /// `--decorate`: commit lines carry them.
    pub(super) decorate: bool,
}

impl Shown {
    /// `--date=`, `--relative-date` and `--abbrev-commit` as `args` give them.
    async fn of(repo: &Repo, args: &Args<'_>) -> Result<Shown, Out> {
        // `--date=`, else `log.date`, else git's default.
        let date = match args.value("--date") {
            None if args.has(&["--relative-date"]) => DateMode::Relative,
            Some(name) => DateMode::named(name).ok_or_else(|| {
                Out::fatal(format!("not supported by the sandbox's git: --date={name}"))
            })?,
            None => match repo.config_value("log.date").await {
                None => DateMode::Default,
                Some(name) => DateMode::named(&name).ok_or_else(|| {
                    Out::fatal(format!(
                        "not supported by the sandbox's git: log.date={name}"
                    ))
                })?,
            },
        };
        let map_idents = match args.last(&[
            "--use-mailmap",
            "--mailmap",
            "--no-use-mailmap",
            "--no-mailmap",
        ]) {
            Some(flag) => !flag.starts_with("--no-"),
            None => repo.config_bool("log.mailmap", true).await,
        };
        const DECORATE: [&str; 6] = [
            "--decorate",
            "--decorate=short",
            "--no-decorate",
            "--decorate=no",
            "--decorate=auto",
            "--decorate=full",
        ];
        if let Some(other) = args
            .flags_like("--decorate")
            .filter(|f| !DECORATE.contains(f))
        {
            let value = other.trim_start_matches("--decorate=");
            return Err(Out::fatal(format!("invalid --decorate option: {value}")));
        }
        let decorate = match args.last(&DECORATE) {
            Some("--decorate" | "--decorate=short") => true,
            Some("--no-decorate" | "--decorate=no" | "--decorate=auto") => false,
            Some(other) => {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: {other}"
                )))
            }
            // `log.decorate` (no terminal here, so `auto` shows none).
            None => match repo
                .config_value("log.decorate")
                .await
                .map(|v| v.to_lowercase())
            {
                Some(v) if matches!(v.as_str(), "true" | "yes" | "on" | "1" | "short") => true,
                Some(v) if matches!(v.as_str(), "false" | "no" | "off" | "0" | "auto" | "") => {
                    false
                }
                None => false,
                Some(v) => {
                    return Err(Out::fatal(format!(
                        "not supported by the sandbox's git: log.decorate={v}"
                    )))
                }
            },
        };
        let placeholders = args
            .value("--format")
            .is_some_and(|f| f.contains("%d") || f.contains("%D"));
        let decorations = match decorate || placeholders {
            true => Some(decorations(repo).await),
            false => None,
        };
        Ok(Shown {
            abbrev: abbrev_of(repo, args).await?,
            date,
            now: now(),
            decorations,
            decorate,
            // `--oneline` is `--pretty=oneline --abbrev-commit`.
            abbrev_commit: args.has(&["--abbrev-commit", "--oneline"]),
            mailmap: std::sync::Arc::new(repo.mailmap().await.map_err(Out::fatal)?),
            map_idents,
        })
    }

    /// `oid`'s decorations, if it has any.
    pub(super) fn decorated(&self, oid: &str) -> Option<&str> {
        self.decorations
            .as_ref()
            .and_then(|d| d.get(oid))
            .map(String::as_str)
            .filter(|refs| !refs.is_empty())
    }

    /// A commit's author or committer as its header block shows them.
    pub(super) fn ident(&self, who: &Signature) -> Signature {
        match self.map_idents {
            true => self.mailmap.map(who),
            false => who.clone(),
        }
    }

    /// The mailmap `--author` and `--committer` match through, if used.
    pub(super) fn idents_map(&self) -> Option<std::sync::Arc<super::mailmap::Mailmap>> {
        (self.map_idents && !self.mailmap.is_empty()).then(|| self.mailmap.clone())
    }
}

/// Every decorated commit's refs, as git's `--decorate` lists them: in
/// the reverse of ref order with `HEAD` first (`HEAD -> BRANCH` when it
/// names a branch there), branches and remote-tracking branches by their
/// short names, tags as `tag: NAME` on the commit they name.
async fn decorations(repo: &Repo) -> std::collections::HashMap<Oid, String> {
    const SHOWN: [&str; 5] = [
        "refs/heads/",
        "refs/remotes/",
        "refs/tags/",
        "refs/stash",
        "refs/replace/",
    ];
    let mut by_commit: std::collections::HashMap<Oid, Vec<String>> =
        std::collections::HashMap::new();
    for (name, oid) in repo.refs_with_objects().await {
        if !SHOWN.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let commit = repo.peel(&oid).await.unwrap_or(oid);
        by_commit.entry(commit).or_default().push(name);
    }
    let head_branch = match repo.head().await {
        Head::Branch(branch) => Some(format!("refs/heads/{branch}")),
        Head::Detached(_) => None,
    };
    if let Some(head) = repo.head_commit().await {
        by_commit.entry(head).or_default().push("HEAD".to_string());
    }
    by_commit
        .into_iter()
        .map(|(commit, mut names)| {
            names.reverse();
            let current = names
                .iter()
                .any(|n| n == "HEAD")
                .then_some(head_branch.as_ref())
                .flatten()
                .filter(|branch| names.contains(branch))
                .cloned();
            let shown: Vec<String> = names
                .iter()
                .filter(|n| Some(*n) != current.as_ref())
                .map(|n| match (n.as_str(), &current) {
                    ("HEAD", Some(branch)) => format!("HEAD -> {}", &branch["refs/heads/".len()..]),
                    _ => match n.strip_prefix("refs/tags/") {
                        Some(tag) => format!("tag: {tag}"),
                        None => n
                            .strip_prefix("refs/heads/")
                            .or_else(|| n.strip_prefix("refs/remotes/"))
                            .unwrap_or(n)
                            .to_string(),
                    },
                })
                .collect();
            (commit, shown.join(", "))
        })
        .collect()
}

/// Seconds since 1970, now.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// How `log` and `show` print a commit.
enum Style {
    /// `short`, `medium` (the default), `full`, `fuller`: a header block
    /// and the message indented.
    Block(Block),
    Oneline,
    /// The format, and whether entries are separated (`format:`) rather
    /// than each ended (`tformat:`, `--format=`) by a newline.
    Format(String, bool),
}

impl Style {
    fn of(args: &Args<'_>) -> Result<Self, Out> {
        // The last of `--oneline` and `--format`/`--pretty` counts.
        if args.last_given(&["--oneline", "--format"]) == Some("--oneline") {
            return Ok(Style::Oneline);
        }
        Ok(match args.value("--format") {
            Some("oneline") => Style::Oneline,
            None => Style::Block(Block::Medium),
            Some("short") => Style::Block(Block::Short),
            Some("medium") => Style::Block(Block::Medium),
            Some("full") => Style::Block(Block::Full),
            Some("fuller") => Style::Block(Block::Fuller),
            // Nothing per commit: only what `--stat` and the like print.
            Some("") => Style::Format(String::new(), false),
            // A name without a `%` is one of git's formats, or an alias.
            Some(name) if !name.contains(['%', ':']) => {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: --format={name}"
                )))
            }
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
        })
    }
}

/// git's formats of a header block, from the least said to the most.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Block {
    Short,
    Medium,
    Full,
    Fuller,
}

impl Block {
    /// A person's line (and their date's, in `medium` and `fuller`) as
    /// git's `pp_user_info` writes it: `what` is `Author`, `Commit` or
    /// `Tagger`.
    fn person(self, what: &str, who: &crate::repo::Signature, shown: &Shown) -> String {
        let date = || shown.date.show(who.time, &who.zone, shown.now);
        let pad = if self == Block::Fuller { "    " } else { "" };
        let mut out = format!("{what}: {pad}{} <{}>\n", who.name, who.email);
        match self {
            Block::Medium => out.push_str(&format!("Date:   {}\n", date())),
            Block::Fuller => out.push_str(&format!("{what}Date: {}\n", date())),
            Block::Short | Block::Full => {}
        }
        out
    }

    /// A message as git's `pp_remainder` indents it: every line by four
    /// columns, blank ones too, each line's trailing whitespace trimmed,
    /// leading blank lines dropped; `short` keeps the title paragraph only.
    fn message(self, message: &str) -> String {
        let mut out = String::new();
        let lines = message
            .lines()
            .map(|l| l.trim_end_matches(|c: char| c.is_ascii_whitespace()))
            .skip_while(|l| l.is_empty());
        for line in lines {
            if self == Block::Short && line.is_empty() {
                break;
            }
            out.push_str("    ");
            // Tabs become spaces to the next multiple of eight columns of
            // the line, as git's `expand_tabs_in_log` does.
            let mut column = 0;
            for piece in line.split_inclusive('\t') {
                match piece.strip_suffix('\t') {
                    Some(text) => {
                        column += text::display_width(text);
                        let pad = 8 - column % 8;
                        out.push_str(text);
                        out.push_str(&" ".repeat(pad));
                        column += pad;
                    }
                    None => out.push_str(piece),
                }
            }
            out.push('\n');
        }
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('\n');
        out
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
