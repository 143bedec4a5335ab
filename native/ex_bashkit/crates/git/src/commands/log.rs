//! `log`, `show` and `diff`, and the history walks they share.

use super::*;
use crate::walk::Walk;

/// A command's flags followed by the ones `diff`, `show` and `log` share:
/// how they print changes (`-p`, the stats, the names), how many lines of
/// context (`-U`), whether renames are found (`-M`, `--no-renames`).
macro_rules! with_change_forms {
    ($($flag:expr),* $(,)?) => {
        &[
            $($flag,)*
            "-p",
            "-u",
            "--patch",
            "--stat",
            "--shortstat",
            "--numstat",
            "--name-only",
            "--name-status",
            "--no-color",
            "--color=never",
            "-U",
            "-U<n>",
            "--unified",
            "--unified=",
            "--inter-hunk-context=",
            "-M",
            "--find-renames",
            "--no-renames",
            "--abbrev",
            "--abbrev=",
        ]
    };
}

/// How `show` and `log` print each commit's entry.
macro_rules! with_entry_forms {
    ($($flag:expr),* $(,)?) => {
        with_change_forms![
            $($flag,)*
            "--oneline",
            "--relative-date",
            "--abbrev-commit",
            "--no-abbrev-commit",
            "--no-decorate",
            "--decorate",
            "--decorate=",
            "--use-mailmap",
            "--mailmap",
            "--no-use-mailmap",
            "--no-mailmap",
        ]
    };
}

/// The options `diff` takes: what it compares, how it prints the changes
/// (the same as `show`'s), its exit status.
const DIFF: Spec = Spec {
    command: "diff",
    flags: with_change_forms!["--cached", "--staged", "--quiet", "--exit-code"],
    valued: &[&["--diff-filter"]],
};

/// `--diff-filter=LETTERS`, as git reads it: upper-case letters are the
/// kinds of change kept; lower-case ones are left out (of every kind, when
/// no upper-case letter is given); with `*`, all changes are kept when any
/// one is of a kept kind, else none. A filter that keeps no kind at all
/// (`Dd`) filters nothing.
struct DiffFilter {
    kept: Vec<char>,
    all_or_none: bool,
}

impl DiffFilter {
    const KINDS: &'static str = "ACDMRTUXB";

    fn parse(letters: &str) -> Result<Self, Out> {
        let (mut kept, mut left_out, mut all_or_none) = (Vec::new(), Vec::new(), false);
        for letter in letters.chars() {
            let upper = letter.to_ascii_uppercase();
            match letter {
                '*' => all_or_none = true,
                _ if !Self::KINDS.contains(upper) => {
                    return Err(Out::error(
                        format!(
                            "error: unknown change class '{letter}' in --diff-filter={letters}\n"
                        ),
                        129,
                    ))
                }
                _ if letter.is_ascii_lowercase() => left_out.push(upper),
                _ => kept.push(upper),
            }
        }
        if !left_out.is_empty() {
            if kept.is_empty() && !all_or_none {
                kept = Self::KINDS.chars().collect();
            }
            kept.retain(|k| !left_out.contains(k));
        }
        Ok(Self { kept, all_or_none })
    }

    fn apply(&self, changes: Vec<Change>) -> Vec<Change> {
        if self.kept.is_empty() && !self.all_or_none {
            return changes;
        }
        let kept = |c: &Change| self.kept.contains(&c.status());
        match self.all_or_none {
            true if changes.iter().any(kept) => changes,
            true => Vec::new(),
            false => changes.into_iter().filter(kept).collect(),
        }
    }
}

const SHOW: Spec = Spec {
    command: "show",
    flags: with_entry_forms!["-s", "--no-patch", "--quiet"],
    valued: &[&["--format", "--pretty"], &["--date"]],
};

const LOG: Spec = Spec {
    command: "log",
    flags: with_walk_flags!(
        with_entry_forms;
        "--graph",
        "--topo-order",
        "--reverse",
        "-<n>",
        "--follow",
        "--no-follow",
    ),
    valued: with_walk_values![
        &["-n", "--max-count"],
        &["--format", "--pretty"],
        &["-S"],
        &["-G"],
        &["--skip"],
        &["--date"],
    ],
};

/// A date `--since`/`--until` take, or their refusal.
fn approximate(date: &str, option: &str) -> Result<i64, Out> {
    dates::approxidate(date, now()).ok_or_else(|| {
        Out::fatal(format!(
            "not supported by the sandbox's git: {option}={date} (a date this git does not read)"
        ))
    })
}

/// Which walked commits `log` shows: by author, committer, message,
/// date, number of parents.
pub(crate) struct Filter {
    /// Repeated `--author` (or `--committer`): any of them.
    author: Vec<regex::Regex>,
    committer: Vec<regex::Regex>,
    grep: Vec<regex::Regex>,
    all_match: bool,
    invert_grep: bool,
    until: Option<i64>,
    min_parents: usize,
    max_parents: Option<usize>,
    /// `log`'s mailmap: authors and committers matched as it names them.
    mailmap: Option<std::sync::Arc<crate::mailmap::Mailmap>>,
}

impl Filter {
    /// Authors and committers matched as `mailmap` names them.
    pub(super) fn through(
        mut self,
        mailmap: Option<std::sync::Arc<crate::mailmap::Mailmap>>,
    ) -> Filter {
        self.mailmap = mailmap;
        self
    }

    /// The filters `args` give; `None` when there are none.
    pub(crate) fn of(args: &Args<'_>) -> Result<Option<Filter>, Out> {
        let ignore_case = args.has(&["-i", "--regexp-ignore-case"]);
        let compile = |pattern: &str| {
            let source = if args.has(&["-F", "--fixed-strings"]) {
                regex::escape(pattern)
            } else if args.has(&["-E", "--extended-regexp"]) {
                pattern.to_string()
            } else {
                text::basic_regex(pattern)
            };
            regex::RegexBuilder::new(&source)
                .case_insensitive(ignore_case)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| Out::fatal(format!("command line, '{pattern}': {e}")))
        };
        // A repeated option's values, one per line.
        let all = |given: Option<&str>| -> Result<Vec<regex::Regex>, Out> {
            given
                .map_or(Vec::new(), |v| v.split('\n').collect())
                .into_iter()
                .map(compile)
                .collect()
        };
        let parents = |key: &str| -> Result<Option<usize>, Out> {
            args.value(key)
                .map(|n| {
                    n.parse()
                        .map_err(|_| Out::fatal(format!("'{n}': not an integer")))
                })
                .transpose()
        };
        let mut min_parents = parents("--min-parents")?.unwrap_or(0);
        let mut max_parents = parents("--max-parents")?;
        if args.has(&["--merges"]) {
            min_parents = 2;
        }
        if args.has(&["--no-merges"]) {
            max_parents = Some(1);
        }
        let filter = Filter {
            author: all(args.value("--author"))?,
            committer: all(args.value("--committer"))?,
            grep: all(args.value("--grep"))?,
            all_match: args.has(&["--all-match"]),
            invert_grep: args.has(&["--invert-grep"]),
            until: args
                .value("--until")
                .map(|d| approximate(d, "--until"))
                .transpose()?,
            min_parents,
            max_parents,
            mailmap: None,
        };
        let none = filter.author.is_empty()
            && filter.committer.is_empty()
            && filter.grep.is_empty()
            && filter.until.is_none()
            && filter.min_parents == 0
            && filter.max_parents.is_none();
        Ok((!none).then_some(filter))
    }

    pub(crate) fn passes(&self, commit: &crate::repo::Commit) -> bool {
        let who = |s: &crate::repo::Signature| format!("{} <{}>", s.name, s.email);
        let parents = commit.parents.len();
        if parents < self.min_parents || self.max_parents.is_some_and(|m| parents > m) {
            return false;
        }
        if self.until.is_some_and(|until| commit.date > until) {
            return false;
        }
        let any = |patterns: &[regex::Regex], s: &crate::repo::Signature| {
            let mapped;
            let s = match &self.mailmap {
                Some(map) if !patterns.is_empty() => {
                    mapped = map.map(s);
                    &mapped
                }
                _ => s,
            };
            patterns.is_empty() || patterns.iter().any(|r| r.is_match(&who(s)))
        };
        if !any(&self.author, &commit.author) || !any(&self.committer, &commit.committer) {
            return false;
        }
        if self.grep.is_empty() {
            return true;
        }
        let matches = |r: &regex::Regex| commit.message.lines().any(|l| r.is_match(l));
        let found = match self.all_match {
            true => self.grep.iter().all(matches),
            false => self.grep.iter().any(matches),
        };
        found != self.invert_grep
    }
}

/// `log -S STRING` (a change where the number of times a file holds
/// it differs) or `-G REGEX` (a change that adds or removes a line it
/// matches), as git's pickaxe finds them.
enum Pickaxe {
    Count(regex::bytes::Regex),
    Lines(regex::Regex),
}

impl Pickaxe {
    fn of(args: &Args<'_>) -> Result<Option<Pickaxe>, Out> {
        let ignore_case = args.has(&["-i", "--regexp-ignore-case"]);
        match (args.value("-S"), args.value("-G")) {
            (Some(_), Some(_)) => Err(Out::fatal(
                "options '-G', '-S', and '--find-object' cannot be used together",
            )),
            (Some(needle), None) => regex::bytes::RegexBuilder::new(&regex::escape(needle))
                .case_insensitive(ignore_case)
                .build()
                .map(|r| Some(Pickaxe::Count(r)))
                .map_err(|e| Out::fatal(e.to_string())),
            (None, Some(pattern)) => regex::RegexBuilder::new(pattern)
                .case_insensitive(ignore_case)
                .multi_line(true)
                .size_limit(1 << 20)
                .build()
                .map(|r| Some(Pickaxe::Lines(r)))
                .map_err(|e| Out::fatal(format!("invalid regex: {e}"))),
            (None, None) => Ok(None),
        }
    }

    fn finds(&self, change: &Change) -> bool {
        let old = change.old.as_ref().map(|(_, bytes)| bytes.as_slice());
        let new = change.new.as_ref().map(|(_, bytes)| bytes.as_slice());
        if old.is_some() && old == new {
            return false;
        }
        match self {
            // Occurrences that do not overlap, in each side.
            Pickaxe::Count(needle) => {
                let count = |b: Option<&[u8]>| b.map_or(0, |b| needle.find_iter(b).count());
                count(old) != count(new)
            }
            // The lines a diff adds or removes; binary files are not read.
            Pickaxe::Lines(regex) => {
                if change.binary() {
                    return false;
                }
                let text =
                    |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
                let (old, new) = (text(old), text(new));
                let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (
                    old.split_inclusive('\n').collect(),
                    new.split_inclusive('\n').collect(),
                );
                diff::line_diff_without_context(&old, &new)
                    .into_iter()
                    .any(|(removed, added)| {
                        let strip = |l: &&str| l.strip_suffix('\n').unwrap_or(l).to_string();
                        old_lines[removed]
                            .iter()
                            .chain(&new_lines[added])
                            .any(|l| regex.is_match(&strip(l)))
                    })
            }
        }
    }
}

fn unsupported_placeholder(token: &str) -> Out {
    Out::fatal(format!(
        "not supported by the sandbox's git: the --format placeholder %{token}"
    ))
}

/// How `log --follow` prints a commit it shows, with its changes.
type Printer<'a> = dyn Fn(&str, &crate::repo::Commit, &[Change]) -> Result<String, Out> + Sync + 'a;

/// Whether a patch is asked for: `-p`, `-u`, `--patch`, or a count of
/// context lines (`-U`, `--unified`), which asks for one too.
fn patch_asked(args: &Args<'_>) -> bool {
    args.has(&["-p", "-u", "--patch"])
        || args
            .flags
            .iter()
            .any(|f| f.starts_with("-U") || f.starts_with("--unified"))
}

/// A count of lines as a setting or an option gives it.
fn line_count(value: &str) -> Option<usize> {
    value.trim().parse().ok()
}

impl Ctx<'_> {
    /// The lines of context a patch shows: `diff.context` and
    /// `diff.interHunkContext`, then `-U`/`--unified` and
    /// `--inter-hunk-context` as given (the last one counting).
    pub(crate) async fn context(&self, args: &Args<'_>) -> Result<diff::Context, Out> {
        // (Every command that prints patches asks for these first: a
        // `--stat=` git would not read is refused here, before any output.)
        if let Some(size) = args.value("--stat") {
            if size.split(',').count() > 2 && size.split(',').all(|n| n.parse::<usize>().is_ok()) {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: --stat={size} (a count of files)"
                )));
            }
            if diff::StatSize::parse(size).is_none() {
                return Err(Out::error(
                    format!("error: invalid --stat value: {size}\n"),
                    129,
                ));
            }
        }
        let mut context = diff::Context::default();
        for (key, lines) in [("diff.context", true), ("diff.interhunkcontext", false)] {
            if let Some(value) = self.repo.config_value(key).await {
                let n = line_count(&value).ok_or_else(|| {
                    Out::fatal(format!("bad numeric config value '{value}' for '{key}'"))
                })?;
                match lines {
                    true => context.lines = n,
                    false => context.between = n,
                }
            }
        }
        for flag in &args.flags {
            let (given, option) = if let Some(n) = flag.strip_prefix("--unified=") {
                (n, "--unified")
            } else if let Some(n) = flag.strip_prefix("--inter-hunk-context=") {
                (n, "--inter-hunk-context")
            } else if let Some(n) = flag.strip_prefix("-U").filter(|n| !n.is_empty()) {
                (n, "--unified")
            } else {
                continue;
            };
            let n = line_count(given).ok_or_else(|| {
                Out::error(format!("error: {option} expects a numerical value\n"), 129)
            })?;
            match option {
                "--unified" => context.lines = n,
                _ => context.between = n,
            }
        }
        Ok(context)
    }

    pub(super) async fn diff(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &DIFF)?;
        self.find_renames(&args).await?;
        // Operands that are not revisions are paths.
        let mut revisions = Vec::new();
        let mut specs: Vec<String> = self.inside_all(&args.paths)?;
        for operand in &args.operands {
            let spec = self.revspec(operand).await?;
            if let Some(RevSpec::Symmetric { left, right }) = spec {
                // From where the two histories met.
                let Some(base) = self.merge_bases(&left, &right).await.into_iter().next() else {
                    return Err(Out::fatal(format!("{operand}: no merge base")));
                };
                revisions.extend([base, right]);
            } else if let Some(RevSpec::Range { from, to }) = spec {
                revisions.extend([from, to]);
            } else if let Some(
                spec @ (RevSpec::WithoutParents(_) | RevSpec::Parents(_) | RevSpec::Exclude(_)),
            ) = spec
            {
                // `A^!` of a commit with one parent is that parent and A.
                match self.tips(spec).await.as_slice() {
                    [(false, oid), (true, parent)] => revisions.extend([parent.clone(), oid.clone()]),
                    _ => {
                        return Err(Out::fatal(format!(
                            "not supported by the sandbox's git: diff {operand} (a combined diff, or one side of a range)"
                        )))
                    }
                }
            } else if spec.is_some() {
                revisions.push(operand.to_string());
            } else if operand.contains(['*', '?', '['])
                || operand.starts_with(':')
                || self
                    .repo
                    .fs
                    .exists(&resolve(&self.here.cwd, operand))
                    .await
                    .unwrap_or(false)
            {
                specs.push(self.inside(operand)?);
            } else {
                return Err(Out::fatal(format!(
                    "ambiguous argument '{operand}': unknown revision or path not in the working tree.\n\
                     Use '--' to separate paths from revisions, like this:\n\
                     'git <command> [<revision>...] -- [<file>...]'"
                )));
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
        // (The index is read by now.) A conflicted path's index holds its stages, which git shows as a
        // combined diff (or `* Unmerged path`): not done here.
        if revisions.is_empty() || cached {
            let conflicted: Vec<String> = self
                .repo
                .unmerged()
                .into_iter()
                .filter(|p| specs.is_empty() || Self::any_match(&specs, p))
                .collect();
            if !conflicted.is_empty() {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: diff of the index while paths are unmerged ({}); `git diff HEAD` and `git status` show them",
                    conflicted.join(", ")
                )));
            }
        }
        if cached && revisions.len() > 1 {
            return Err(Out::error(
                "usage: git diff [<options>] [<commit> [<commit>]] [--] [<path>...]\n",
                129,
            ));
        }
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
        let changes = match args.value("--diff-filter") {
            Some(letters) => DiffFilter::parse(letters)?.apply(changes),
            None => changes,
        };
        if args.has(&["--quiet"]) {
            return Ok(Out {
                stdout: String::new(),
                stderr: String::new(),
                code: i32::from(!changes.is_empty()),
            });
        }
        let code = i32::from(args.has(&["--exit-code"]) && !changes.is_empty());
        let context = self.context(&args).await?;
        Ok(Out {
            stdout: Self::render(&changes, &args, &*self.abbrev(&args).await?, context),
            stderr: String::new(),
            code,
        })
    }

    /// What stands between a commit's message and its changes: a blank
    /// line, or `---` when a `--stat` comes before a patch.
    fn separator(args: &Args<'_>) -> &'static str {
        let names = args.has(&["--name-only", "--name-status"]);
        match !names && args.has(&["--stat"]) && patch_asked(args) {
            true => "---\n",
            false => "\n",
        }
    }

    /// The changes in the forms `args` ask for, in git's order: names
    /// alone (`--name-status` over `--name-only`), else `--numstat`,
    /// `--stat`, `--shortstat`, then the patch after a blank line when a
    /// stat came before it. The patch is the form when no other is asked
    /// for.
    pub(super) fn render(
        changes: &[Change],
        args: &Args<'_>,
        abbrev: &Abbrev,
        context: diff::Context,
    ) -> String {
        let names = args.has(&["--name-only", "--name-status"]);
        let stats = args.has(&["--numstat", "--stat", "--shortstat"]);
        let patch = patch_asked(args) || !(names || stats);
        let mut out = String::new();
        // Names are the only form when asked for, as git clears the others.
        if args.has(&["--name-status"]) {
            for c in changes {
                let path = c.shown_path();
                let _ = match c.shown_from() {
                    Some(from) => {
                        writeln!(out, "{}{:03}\t{from}\t{path}", c.status(), c.similarity)
                    }
                    None => writeln!(out, "{}\t{path}", c.status()),
                };
            }
        } else if names {
            for c in changes {
                let _ = writeln!(out, "{}", c.shown_path());
            }
        }
        if names {
            return out;
        }
        if args.has(&["--numstat"]) {
            for c in changes {
                let _ = match c.binary() {
                    true => writeln!(out, "-\t-\t{}", c.name()),
                    false => {
                        let (added, removed) = c.counts();
                        writeln!(out, "{added}\t{removed}\t{}", c.name())
                    }
                };
            }
        }
        let size = args
            .value("--stat")
            .and_then(diff::StatSize::parse)
            .unwrap_or_default();
        let stat = (args.has(&["--stat", "--shortstat"])).then(|| diff::stat_sized(changes, size));
        if let (Some(stat), true) = (&stat, args.has(&["--stat"])) {
            out.push_str(stat);
        }
        if let (Some(stat), true) = (&stat, args.has(&["--shortstat"])) {
            // The summary line `--stat` ends with.
            if let Some(last) = stat.lines().last() {
                let _ = writeln!(out, "{last}");
            }
        }
        if patch {
            if stats {
                out.push('\n');
            }
            out.extend(changes.iter().map(|c| c.patch(abbrev, context)));
        }
        out
    }

    /// The commits `log --graph`/`--topo-order` walks: no parent before
    /// all its children, a merge's later parents' lines first, as git's
    /// topological walk orders them.
    pub(super) async fn topo_history(
        &self,
        start: &str,
        stop: Option<&str>,
    ) -> Result<Vec<Oid>, Out> {
        // Each commit's parents as the walk read them: no commit read twice.
        let linked = self.walk_history(start, stop, None).await?;
        let all: Vec<&Oid> = linked.iter().map(|(oid, _)| oid).collect();
        let set: std::collections::HashSet<&Oid> = all.iter().copied().collect();
        let mut parents: std::collections::HashMap<&Oid, Vec<Oid>> =
            std::collections::HashMap::with_capacity(linked.len());
        let mut children: std::collections::HashMap<Oid, usize> = std::collections::HashMap::new();
        for (oid, its) in &linked {
            let kept: Vec<Oid> = its.iter().filter(|p| set.contains(p)).cloned().collect();
            for parent in &kept {
                *children.entry(parent.clone()).or_default() += 1;
            }
            parents.insert(oid, kept);
        }
        let mut stack: Vec<Oid> = all
            .iter()
            .filter(|o| !children.contains_key(**o))
            .rev()
            .map(|o| (*o).clone())
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

    /// The commits `log` walks from `start`, as git orders them by
    /// default (the newest commit date first among those reached so far,
    /// ties in the order they were reached), without `stop`'s ancestors,
    /// up to `limit` of them; each with its parents.
    async fn walk_history(
        &self,
        start: &str,
        stop: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<(Oid, Vec<Oid>)>, Out> {
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
            commit.date,
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
            for parent in &parents {
                if seen.insert(parent.clone()) {
                    let (time, its) = repo.commit_links(parent).await.map_err(failed)?;
                    reached += 1;
                    queue.push((time, std::cmp::Reverse(reached), parent.clone(), its));
                }
            }
            commits.push((oid, parents));
        }
        Ok(commits)
    }

    /// A commit through a `--format` string: the placeholders this git
    /// has; one git has and this git does not is refused, never printed
    /// as it came.
    pub(super) fn formatted(
        format: &str,
        oid: &str,
        commit: &crate::repo::Commit,
        shown: &Shown,
    ) -> Result<String, Out> {
        let abbrev = &shown.abbrev;
        let mut out = String::new();
        let mut chars = format.chars().peekable();
        let body = commit.body().to_string();
        let short = |oid: &str| abbrev.of(oid, None);
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let mut token = String::new();
            if let Some(&next) = chars.peek() {
                token.push(next);
                chars.next();
                if matches!(next, 'a' | 'c' | 'x') {
                    let more = if next == 'x' { 2 } else { 1 };
                    for _ in 0..more {
                        if let Some(&kind) = chars.peek() {
                            token.push(kind);
                            chars.next();
                        }
                    }
                }
            }
            let (who, field) = match token.split_at(token.len().min(1)) {
                ("a", field) => (Some(&commit.author), field),
                ("c", field) => (Some(&commit.committer), field),
                _ => (None, ""),
            };
            if let Some(who) = who {
                let iso = || dates::iso_date(who.time, &who.zone);
                let mapped = || shown.mailmap.map(who);
                match field {
                    "n" => out.push_str(&who.name),
                    "e" => out.push_str(&who.email),
                    "l" => out.push_str(who.email.split('@').next().unwrap_or("")),
                    "N" => out.push_str(&mapped().name),
                    "E" => out.push_str(&mapped().email),
                    "L" => out.push_str(mapped().email.split('@').next().unwrap_or("")),
                    "d" => out.push_str(&shown.date.show(who.time, &who.zone, shown.now)),
                    "r" => out.push_str(&dates::relative(who.time, shown.now)),
                    "D" => out.push_str(&DateMode::Rfc.show(who.time, &who.zone, shown.now)),
                    "t" => out.push_str(&who.time.to_string()),
                    "i" => out.push_str(&iso()),
                    "I" => out.push_str(&dates::strict_iso_date(who.time, &who.zone)),
                    "s" => out.push_str(&iso()[..10]),
                    _ => return Err(unsupported_placeholder(&token)),
                }
                continue;
            }
            match token.as_str() {
                "H" => out.push_str(oid),
                "h" => out.push_str(&short(oid)),
                "T" => out.push_str(&commit.tree),
                "t" => out.push_str(&short(&commit.tree)),
                "P" => out.push_str(&commit.parents.join(" ")),
                "p" => out.push_str(
                    &commit
                        .parents
                        .iter()
                        .map(|p| short(p))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                "s" => out.push_str(&commit.subject()),
                "b" => out.push_str(&body),
                "B" => out.push_str(&commit.message),
                "e" => {}
                "d" => {
                    if let Some(refs) = shown.decorated(oid) {
                        let _ = write!(out, " ({refs})");
                    }
                }
                "D" => out.push_str(shown.decorated(oid).unwrap_or("")),
                "n" => out.push('\n'),
                "%" => out.push('%'),
                hex if hex.len() == 3 && hex.starts_with('x') => {
                    match u8::from_str_radix(&hex[1..], 16) {
                        Ok(byte) => out.push(char::from(byte)),
                        Err(_) => out.push_str(&format!("%{hex}")),
                    }
                }
                // What git does not read as a placeholder, it prints.
                other
                    if !other.starts_with(|c: char| c.is_alphabetic() || "<>()+- ".contains(c)) =>
                {
                    out.push('%');
                    out.push_str(other);
                }
                other => return Err(unsupported_placeholder(other)),
            }
        }
        Ok(out)
    }

    /// The commits `walk` reaches, stopping once `wanted` of them passed
    /// `filter` (so `-n 5` reads five commits, not the whole history).
    pub(super) async fn walk_until(
        repo: &Repo,
        walk: &Walk,
        filter: Option<&Filter>,
        wanted: Option<usize>,
    ) -> Result<Vec<crate::walk::Step>, Out> {
        let mut passed = 0usize;
        walk.run(repo, |step| {
            if filter.is_none_or(|f| f.passes(&step.commit)) {
                passed += 1;
            }
            wanted.is_none_or(|n| passed < n)
        })
        .await
        .map_err(failed)
    }

    /// One commit as `log` prints it in `style`.
    pub(super) fn entry(
        style: &Style,
        oid: &str,
        commit: &crate::repo::Commit,
        shown: &Shown,
    ) -> Result<String, Out> {
        let abbrev = &shown.abbrev;
        Ok(match style {
            Style::Oneline => format!("{} {}\n", Self::commit_name(oid, shown), commit.subject()),
            Style::Format(format, _) => Self::formatted(format, oid, commit, shown)?,
            Style::Block(block) => {
                let mut out = format!("commit {}\n", Self::commit_name(oid, shown));
                if commit.parents.len() > 1 {
                    let parents: Vec<String> =
                        commit.parents.iter().map(|p| abbrev.of(p, None)).collect();
                    let _ = writeln!(out, "Merge: {}", parents.join(" "));
                }
                out.push_str(&block.person("Author", &shown.ident(&commit.author), shown));
                if *block >= Block::Full {
                    out.push_str(&block.person("Commit", &shown.ident(&commit.committer), shown));
                }
                out.push('\n');
                out.push_str(&block.message(&commit.message));
                out
            }
        })
    }

    /// A commit's name on its first line: whole unless `--abbrev-commit`.
    fn commit_name(oid: &str, shown: &Shown) -> String {
        let name = match shown.abbrev_commit {
            true => shown.abbrev.of(oid, None),
            false => oid.to_string(),
        };
        match (shown.decorate, shown.decorated(oid)) {
            (true, Some(refs)) => format!("{name} ({refs})"),
            _ => name,
        }
    }

    /// The revisions and paths `log`, `rev-list` and `shortlog` are given:
    /// `A`, `^A`, `A..B`, `A...B`, `--all`/`--branches`/`--tags`/`--remotes`,
    /// then operands that name files (before `--` as git takes them) and
    /// everything after `--`. `HEAD` when no revision is named.
    pub(crate) async fn walk_of(&self, args: &Args<'_>) -> Result<Walk, Out> {
        let repo = &self.repo;
        let mut walk = Walk::default();
        let mut named = false;
        for (flag, kind) in [
            ("--branches", "heads"),
            ("--tags", "tags"),
            ("--remotes", "remotes"),
        ] {
            if args.has(&[flag, "--all"]) {
                named = true;
                for name in repo.refs(kind).await {
                    if let Some(oid) = repo.read_ref(&format!("refs/{kind}/{name}")).await {
                        // Tags of trees and blobs are no history.
                        if repo.commit(&oid).await.is_ok() {
                            walk.include.push(oid);
                        }
                    }
                }
            }
        }
        if args.has(&["--all"]) {
            walk.include.extend(repo.head_commit().await);
        }
        let mut paths: Vec<String> = Vec::new();
        for operand in &args.operands {
            // A name is a revision until a path has been given.
            let spec = self.revspec(operand).await?;
            match spec {
                Some(spec) if paths.is_empty() || !matches!(spec, RevSpec::Include(_)) => {
                    for (excluded, oid) in self.tips(spec).await {
                        let commit = repo.peel(&oid).await.map_err(failed)?;
                        match excluded {
                            true => walk.exclude.push(commit),
                            false => walk.include.push(commit),
                        }
                    }
                }
                _ if repo
                    .fs
                    .exists(&resolve(&self.here.cwd, operand))
                    .await
                    .unwrap_or(false) =>
                {
                    paths.push(self.inside(operand)?);
                    continue;
                }
                _ => {
                    return Err(Out::fatal(format!(
                        "ambiguous argument '{operand}': unknown revision or path not in the working tree.\n\
                         Use '--' to separate paths from revisions, like this:\n\
                         'git <command> [<revision>...] -- [<file>...]'"
                    )));
                }
            }
            named = true;
        }
        if !named {
            match repo.head_commit().await {
                Some(head) => walk.include.push(head),
                None => {
                    let branch = self.branch_name().await.unwrap_or_default();
                    return Err(Out::fatal(format!(
                        "your current branch '{branch}' does not have any commits yet"
                    )));
                }
            }
        }
        paths.extend(self.inside_all(&args.paths)?);
        if let Some(glob) = paths.iter().find(|p| p.contains(['*', '?', '['])) {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: history of a glob pathspec ({glob})"
            )));
        }
        walk.paths = paths;
        walk.first_parent = args.has(&["--first-parent"]);
        walk.since = match args.value("--since") {
            Some(date) => Some(approximate(date, "--since")?),
            None => None,
        };
        Ok(walk)
    }

    pub(super) async fn log(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &LOG)?;
        self.find_renames(&args).await?;
        let count = |key: &str| -> Result<Option<usize>, Out> {
            match args.value(key) {
                Some(n) => n
                    .parse()
                    .map(Some)
                    .map_err(|_| Out::fatal(format!("'{n}': not an integer"))),
                None => Ok(None),
            }
        };
        let (limit, skip) = (count("-n")?, count("--skip")?.unwrap_or(0));
        let style = Style::of(&args)?;
        let shown = Shown::of(&self.repo, &args).await?;
        let mut walk = self.walk_of(&args).await?;
        let filter = Filter::of(&args)?.map(|f| f.through(shown.idents_map()));
        let pickaxe = Pickaxe::of(&args)?;
        let context = self.context(&args).await?;
        // `--follow`, or `log.follow` when one path is given.
        let follow = match args.last(&["--follow", "--no-follow"]) {
            Some(flag) => flag == "--follow",
            None => walk.paths.len() == 1 && self.repo.config_bool("log.follow", false).await,
        };
        if follow && walk.paths.len() != 1 {
            return Err(Out::fatal("--follow requires exactly one pathspec"));
        }
        if follow && pickaxe.is_some() {
            return Err(Out::fatal(
                "not supported by the sandbox's git: --follow with -S or -G",
            ));
        }
        let graph = args.has(&["--graph"]);
        let topo = graph || args.has(&["--topo-order"]);
        if topo
            && (filter.is_some()
                || pickaxe.is_some()
                || !walk.paths.is_empty()
                || walk.first_parent
                || walk.since.is_some()
                || walk.include.len() != 1
                || skip > 0)
        {
            return Err(Out::fatal(
                "not supported by the sandbox's git: --graph or --topo-order with filters, paths or more than one revision",
            ));
        }
        if graph && args.has(&["--reverse"]) {
            return Err(Out::fatal(
                "options '--reverse' and '--graph' cannot be used together",
            ));
        }
        let patch = patch_asked(&args);
        let summary = args.has(&[
            "--stat",
            "--shortstat",
            "--numstat",
            "--name-only",
            "--name-status",
        ]);
        // With `--first-parent` a merge's changes are those against its
        // first parent, as git's `--diff-merges=first-parent`.
        let merges_diffed = walk.first_parent;
        if follow {
            let path = walk.paths.pop().expect("one path");
            // Each commit printed as it is found, its files' contents let go.
            let print = |oid: &str, commit: &crate::repo::Commit, changes: &[Change]| {
                let entry = Self::entry(&style, oid, commit, &shown)?;
                Ok(match patch || summary {
                    true => Self::with_changes(entry, changes, &style, &args, &shown, context),
                    false => entry,
                })
            };
            let limits = (skip, limit, args.has(&["--reverse"]), patch || summary);
            let entries = self
                .followed(&walk, path, filter.as_ref(), limits, &print)
                .await?;
            return Ok(Out::ok(Self::joined(&style, entries)));
        }
        // What the pickaxe found in each commit searched so far.
        let mut searched: std::collections::HashMap<Oid, Vec<Change>> =
            std::collections::HashMap::new();
        let steps: Vec<(Oid, crate::repo::Commit)> = if topo {
            let start = walk.include[0].clone();
            let stop = walk.exclude.first().cloned();
            let mut steps = Vec::new();
            // Only the commits shown are read out (no filter applies here).
            let order = self.topo_history(&start, stop.as_deref()).await?;
            for oid in order.into_iter().take(limit.unwrap_or(usize::MAX)) {
                let commit = self.repo.commit(&oid).await.map_err(failed)?;
                steps.push((oid, commit));
            }
            steps
        } else if let (Some(pickaxe), Some(n)) = (&pickaxe, limit) {
            // How far the walk must go to find `n` is not known ahead: it
            // goes four times further each time until they are found or
            // history ends, each commit searched once.
            let mut batch = (n + skip).max(8) * 4;
            loop {
                let steps =
                    Self::walk_until(&self.repo, &walk, filter.as_ref(), Some(batch)).await?;
                let (mut passed, mut skipped, mut hits) = (0, 0, 0);
                for step in &steps {
                    if filter.as_ref().is_some_and(|f| !f.passes(&step.commit)) {
                        continue;
                    }
                    passed += 1;
                    if skipped < skip {
                        skipped += 1;
                        continue;
                    }
                    if (step.commit.parents.len() > 1 && !merges_diffed) || hits >= n {
                        continue;
                    }
                    if !searched.contains_key(&step.oid) {
                        let changes = self.commit_changes(&step.commit, &walk.paths).await?;
                        let picked: Vec<Change> =
                            changes.into_iter().filter(|c| pickaxe.finds(c)).collect();
                        searched.insert(step.oid.clone(), picked);
                    }
                    if searched[&step.oid].is_empty() {
                        continue;
                    }
                    hits += 1;
                }
                if hits >= n || passed < batch {
                    break steps.into_iter().map(|s| (s.oid, s.commit)).collect();
                }
                batch *= 4;
            }
        } else {
            // With a pickaxe and no limit, every commit is searched.
            let wanted = limit.map(|n| n + skip).filter(|_| pickaxe.is_none());
            Self::walk_until(&self.repo, &walk, filter.as_ref(), wanted)
                .await?
                .into_iter()
                .map(|s| (s.oid, s.commit))
                .collect()
        };
        let mut parents_of = Vec::new();
        let mut entries = Vec::new();
        let mut skipped = 0;
        for (oid, commit) in steps {
            if limit.is_some_and(|n| entries.len() >= n) {
                break;
            }
            if filter.as_ref().is_some_and(|f| !f.passes(&commit)) {
                continue;
            }
            if skipped < skip {
                skipped += 1;
                continue;
            }
            // A merge shows no changes unless asked (`-m`, `--cc`) or
            // walked with `--first-parent`.
            let merge = commit.parents.len() > 1 && !merges_diffed;
            // With a pickaxe: the commits whose changes it finds, those
            // changes only (a merge has none to look in); `--skip` counts
            // every commit, `-n` the ones shown, as git counts them.
            let picked = match &pickaxe {
                None => None,
                Some(_) if merge => continue,
                Some(pickaxe) => {
                    let picked = match searched.remove(&oid) {
                        Some(picked) => picked,
                        None => {
                            let changes = self.commit_changes(&commit, &walk.paths).await?;
                            changes.into_iter().filter(|c| pickaxe.finds(c)).collect()
                        }
                    };
                    if picked.is_empty() {
                        continue;
                    }
                    Some(picked)
                }
            };
            let mut entry = Self::entry(&style, &oid, &commit, &shown)?;
            if !merge && (patch || summary) {
                let changes = match picked {
                    Some(picked) => picked,
                    None => self.commit_changes(&commit, &walk.paths).await?,
                };
                entry = Self::with_changes(entry, &changes, &style, &args, &shown, context);
            }
            entries.push(entry);
            parents_of.push((oid, commit.parents));
        }
        if graph {
            let separated = !matches!(style, Style::Oneline | Style::Format(_, false));
            return Ok(Out::ok(crate::history::graph(
                &entries,
                &parents_of,
                separated,
            )));
        }
        // The commits the walk and its limits chose, oldest first.
        if args.has(&["--reverse"]) {
            entries.reverse();
        }
        Ok(Out::ok(Self::joined(&style, entries)))
    }

    /// Whether `commit` leaves the files `specs` match as one of its
    /// parents had them (a root commit: has none of them): git's
    /// TREESAME.
    async fn leaves_paths(
        &self,
        commit: &crate::repo::Commit,
        specs: &[String],
    ) -> Result<bool, Out> {
        let repo = &self.repo;
        let mut parents = Vec::with_capacity(commit.parents.len().max(1));
        for parent in &commit.parents {
            parents.push(Some(repo.commit_shape(parent).await.map_err(failed)?.tree));
        }
        if parents.is_empty() {
            parents.push(None);
        }
        for tree in parents {
            let (before, after) = repo
                .changed_files(tree.as_deref(), &commit.tree)
                .await
                .map_err(failed)?;
            if !before
                .keys()
                .chain(after.keys())
                .any(|p| Self::any_match(specs, p))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `log`'s entries as each style separates them.
    fn joined(style: &Style, entries: Vec<String>) -> String {
        match style {
            Style::Block(_) => entries.join("\n"),
            Style::Format(_, true) => entries.join("\n"),
            Style::Format(format, false) if format.is_empty() => entries.concat(),
            Style::Format(_, false) => entries.iter().map(|e| format!("{e}\n")).collect(),
            Style::Oneline => entries.concat(),
        }
    }

    /// A commit's entry followed by its changes where git puts them
    /// after each format's entry.
    fn with_changes(
        mut entry: String,
        changes: &[Change],
        style: &Style,
        args: &Args<'_>,
        shown: &Shown,
        context: diff::Context,
    ) -> String {
        if changes.is_empty() {
            return entry;
        }
        let rendered = Self::render(changes, args, &shown.abbrev, context);
        match style {
            Style::Oneline => entry.push_str(&rendered),
            Style::Format(format, false) if format.is_empty() => entry.push_str(&rendered),
            Style::Block(_) | Style::Format(_, true) => {
                entry.push_str(Self::separator(args));
                entry.push_str(&rendered);
            }
            Style::Format(_, false) => {
                entry.push('\n');
                entry.push_str(Self::separator(args));
                entry.push_str(rendered.strip_suffix('\n').unwrap_or(&rendered));
            }
        }
        entry
    }

    /// `log --follow PATH`: the commits whose changes touch the path, in
    /// the walk's order with no history simplification (as git walks
    /// them), each with those changes; where a commit created the path by
    /// a rename, the path moves to the old name from then on (git's
    /// `try_to_follow_renames`). A merge is shown only with
    /// `--first-parent`, against that parent. `--skip` counts the commits
    /// walked and `-n` the ones shown, as git counts them; with
    /// `--reverse` the walk's commits are chosen first, then followed
    /// oldest first.
    async fn followed(
        &self,
        walk: &Walk,
        mut path: String,
        filter: Option<&Filter>,
        (skip, limit, reverse, printed): (usize, Option<usize>, bool, bool),
        print: &Printer<'_>,
    ) -> Result<Vec<String>, Out> {
        let mut trees = crate::walk::Trees::default();
        let passes = |step: &crate::walk::Step| filter.is_none_or(|f| f.passes(&step.commit));
        let mut shown = Vec::new();
        if reverse {
            let wanted = limit.map(|n| n + skip);
            let steps = Self::walk_until(&self.repo, walk, filter, wanted).await?;
            let chosen: Vec<crate::walk::Step> = steps
                .into_iter()
                .filter(passes)
                .skip(skip)
                .take(limit.unwrap_or(usize::MAX))
                .collect();
            for step in chosen.into_iter().rev() {
                if let Some(changes) = self
                    .follow_step(&step.commit, &mut path, (walk, printed), &mut trees)
                    .await?
                {
                    shown.push(print(&step.oid, &step.commit, &changes)?);
                }
            }
            return Ok(shown);
        }
        // How far the walk must go to show `-n` commits is not known
        // ahead: it goes four times further each time, each commit
        // followed once.
        let mut batch = (limit.unwrap_or(0) + skip).max(16) * 4;
        let mut done = 0;
        loop {
            let wanted = limit.map(|_| batch);
            let steps = Self::walk_until(&self.repo, walk, filter, wanted).await?;
            let passing: Vec<crate::walk::Step> = steps.into_iter().filter(passes).collect();
            let ended = wanted.is_none_or(|n| passing.len() < n);
            for step in passing.into_iter().skip(done) {
                done += 1;
                if done <= skip {
                    continue;
                }
                if let Some(changes) = self
                    .follow_step(&step.commit, &mut path, (walk, printed), &mut trees)
                    .await?
                {
                    shown.push(print(&step.oid, &step.commit, &changes)?);
                    if limit.is_some_and(|n| shown.len() >= n) {
                        return Ok(shown);
                    }
                }
            }
            if ended {
                return Ok(shown);
            }
            batch *= 4;
        }
    }

    /// One commit of `log --follow`: its changes to `path` against its
    /// first parent (read only when `wanted`), or nothing when it has
    /// none (a merge has none unless walked with `--first-parent`). When
    /// it created `path` from another file ([`Self::follow_source`]),
    /// that rename or copy is its change and `path` becomes the old name.
    async fn follow_step(
        &self,
        commit: &crate::repo::Commit,
        path: &mut String,
        (walk, wanted): (&Walk, bool),
        trees: &mut crate::walk::Trees,
    ) -> Result<Option<Vec<Change>>, Out> {
        if commit.parents.len() > 1 && !walk.first_parent {
            return Ok(None);
        }
        let repo = &self.repo;
        let parent_tree = match commit.parents.first() {
            Some(parent) => Some(repo.commit_shape(parent).await.map_err(failed)?.tree),
            None => None,
        };
        let here = trees
            .entry_at(repo, &commit.tree, path)
            .await
            .map_err(failed)?;
        let there = match &parent_tree {
            Some(tree) => trees.entry_at(repo, tree, path).await.map_err(failed)?,
            None => None,
        };
        if here == there {
            return Ok(None);
        }
        // Shown, and nothing of it printed but its entry: its files' contents
        // are read only where the path may have come from elsewhere.
        let created = there.is_none() && here.as_ref().is_some_and(|(mode, _)| *mode != 0o40000);
        if !wanted && !created {
            return Ok(Some(Vec::new()));
        }
        let (before, after) = repo
            .changed_files(parent_tree.as_deref(), &commit.tree)
            .await
            .map_err(failed)?;
        let mut changes = self
            .changes(&before, &after, None, std::slice::from_ref(path))
            .await?;
        if let ([created], Some(parent)) = (changes.as_slice(), commit.parents.first()) {
            if created.old.is_none() && created.path == *path {
                let gone = |p: &str| before.contains_key(p) && !after.contains_key(p);
                if let Some(source) = self.follow_source(parent, created, gone).await? {
                    *path = source.from.clone().expect("a source");
                    changes = vec![source];
                }
            }
        }
        Ok(Some(changes).filter(|c| !c.is_empty() || !wanted))
    }

    /// Where a file a commit created came from, as `log --follow` asks
    /// git's diffcore-rename (`try_to_follow_renames`: copies looked for
    /// harder, whatever `diff.renames` says): every file of the parent a
    /// candidate, a renamed one if `gone`, else copied; the same content
    /// first (a deleted file, then one of the same name, preferred;
    /// at most 100 alike weighed), else the most alike of at least half.
    async fn follow_source(
        &self,
        parent: &str,
        created: &Change,
        gone: impl Fn(&str) -> bool,
    ) -> Result<Option<Change>, Out> {
        let repo = &self.repo;
        let Some((target, target_bytes)) = &created.new else {
            return Ok(None);
        };
        let path = created.path.as_str();
        let sources = repo.commit_files(Some(parent)).await.map_err(failed)?;
        let regular = |mode: u32| matches!(mode, 0o100644 | 0o100755);
        let mut exact: Option<(u8, &String, &Blob)> = None;
        let mut weighed = 0;
        for (from, blob) in &sources {
            if blob.oid != target.oid
                || ((!regular(blob.mode) || !regular(target.mode)) && blob.mode != target.mode)
            {
                continue;
            }
            let score = u8::from(gone(from)) + u8::from(diff::basename_same(from, path));
            if exact.is_none_or(|(best, _, _)| score > best) {
                exact = Some((score, from, blob));
                if score == 2 {
                    break;
                }
            }
            weighed += 1;
            if weighed == 100 {
                break;
            }
        }
        let found = match exact {
            Some((_, from, blob)) => Some((from, blob, 100)),
            None if regular(target.mode) => {
                let candidates: Vec<(&String, &Blob)> =
                    sources.iter().filter(|(_, b)| regular(b.mode)).collect();
                let mut likeness = diff::Likeness::of(target_bytes);
                for (index, (from, blob)) in candidates.iter().enumerate() {
                    let bytes = repo.blob(&blob.oid).await.map_err(failed)?;
                    likeness.consider(index, &bytes, diff::basename_same(from, path));
                }
                likeness
                    .chosen(|index| gone(candidates[index].0))
                    .map(|(index, percent)| (candidates[index].0, candidates[index].1, percent))
            }
            None => None,
        };
        let Some((from, blob, similarity)) = found else {
            return Ok(None);
        };
        let bytes = repo.blob(&blob.oid).await.map_err(failed)?;
        Ok(Some(Change {
            quote_high: created.quote_high,
            path: path.to_string(),
            from: Some(from.clone()),
            similarity,
            copied: !gone(from),
            driver: created.driver.clone(),
            old: Some((blob.clone(), bytes)),
            new: created.new.clone(),
        }))
    }

    pub(super) async fn show(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &SHOW)?;
        self.find_renames(&args).await?;
        if let Some(more) = args.operands.get(1) {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: show of more than one object ({more})"
            )));
        }
        let target = args.operands.first().copied().unwrap_or("HEAD");
        let mut oid = match self.revspec(target).await? {
            Some(RevSpec::Include(oid)) => oid,
            // `A^!`: A, none of its parents' history: A alone.
            Some(RevSpec::WithoutParents(oid)) => oid,
            Some(_) => {
                return Err(Out::fatal(format!(
                "not supported by the sandbox's git: show of a range ({target}); git log shows one"
            )))
            }
            None => {
                // git's words for a path that is not there.
                match target.split_once(':') {
                    Some(("", path)) if !path.starts_with('/') => {
                        let path = path
                            .get(2..)
                            .filter(|_| path.as_bytes().get(1) == Some(&b':'))
                            .unwrap_or(path);
                        return Err(Out::fatal(format!(
                            "path '{path}' does not exist (neither on disk nor in the index)"
                        )));
                    }
                    Some((revision, path)) if self.revspec(revision).await?.is_some() => {
                        let path = path.trim_start_matches("./");
                        return Err(Out::fatal(format!(
                            "path '{path}' does not exist in '{revision}'"
                        )));
                    }
                    _ => {}
                }
                self.object(target).await?
            }
        };
        match self.repo.read_object(&oid).await.map_err(failed)? {
            (kind, bytes) if kind == "blob" => {
                return Ok(Out::ok(String::from_utf8_lossy(&bytes).into_owned()));
            }
            (kind, _) if kind == "tree" => {
                let mut out = format!("tree {target}\n\n");
                for (name, mode, _) in self.repo.tree_entries(&oid).await.map_err(failed)? {
                    let slash = if mode == 0o40000 { "/" } else { "" };
                    let _ = writeln!(out, "{name}{slash}");
                }
                return Ok(Out::ok(out));
            }
            _ => {}
        }
        let style = Style::of(&args)?;
        let shown = Shown::of(&self.repo, &args).await?;
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
                    let tagger = crate::repo::Signature::parse(&field("tagger "));
                    let _ = writeln!(out, "tag {}", field("tag "));
                    // The tagger as git's show_tagger prints it per format.
                    match &style {
                        Style::Oneline => {}
                        Style::Format(..) => {
                            let _ = writeln!(out, "Tagger: {} <{}>", tagger.name, tagger.email);
                        }
                        Style::Block(block) => {
                            out.push_str(&block.person("Tagger", &tagger, &shown))
                        }
                    }
                    let _ = writeln!(out, "\n{message}");
                    if !matches!(style, Style::Block(_)) {
                        out.pop();
                    }
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
        let specs: Vec<String> = self.inside_all(&args.paths)?;
        // With paths, a commit that leaves them as a parent had them is
        // not shown at all, as git's history simplification drops it.
        if !specs.is_empty() && self.leaves_paths(&commit, &specs).await? {
            return Ok(Out::ok(out));
        }
        let abbrev = shown.abbrev.clone();
        out.push_str(&Self::entry(&style, &oid, &commit, &shown)?);
        // An empty `--format=` prints no line at all.
        let shows_entry = !matches!(&style, Style::Format(format, false) if format.is_empty());
        if matches!(style, Style::Format(..)) && shows_entry {
            out.push('\n');
        }
        let summary = args.has(&["--stat", "--numstat", "--name-only", "--name-status"]);
        if args.has(&["-s", "--no-patch", "--quiet"]) {
            return Ok(Out::ok(out));
        }
        // A merge shows its combined diff (`--cc`) after a blank line:
        // nothing when no file differs from every parent; its stat is
        // against the first parent.
        if commit.parents.len() > 1 && !summary {
            if shows_entry {
                out.push('\n');
            }
            let shown_file = crate::combined::first_shown(&self.repo, &commit)
                .await
                .map_err(failed)?;
            if let Some(path) = shown_file {
                let short = &oid[..12.min(oid.len())];
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: the combined diff of a merge that changes {path} against every parent; show it against one parent: git diff {short}^1 {short}"
                )));
            }
            return Ok(Out::ok(out));
        }
        let changes = self.commit_changes(&commit, &specs).await?;
        if !changes.is_empty() {
            // The blank line git puts between a commit and its changes
            // (none after `--oneline` or a `format:` without its newline).
            if matches!(style, Style::Block(_) | Style::Format(_, false)) && shows_entry {
                out.push_str(Self::separator(&args));
            }
            let context = self.context(&args).await?;
            out.push_str(&Self::render(&changes, &args, &abbrev, context));
        }
        Ok(Out::ok(out))
    }

    // ---- branches ----------------------------------------------------------
}
