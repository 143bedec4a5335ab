//! `git blame`: each line of a file with the commit that last changed it,
//! found as git's blame finds it (a commit passes every line to a parent
//! with the same content, else the lines a diff keeps to each parent in
//! turn; renames followed), printed in git's default and porcelain
//! formats.

use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt::Write as _;

use super::commands::{failed, Args, Ctx, Spec};
use super::odb::Oid;
use super::repo::{Commit, Repo, Shape};
use super::walk::Trees;
use super::{dates, text, Out, Run};

/// A file at a commit: where lines are blamed.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Origin {
    commit: Oid,
    path: String,
}

/// Lines still to place: (line in the blamed file, line in the origin's
/// version of it).
type Lines = Vec<(usize, usize)>;

/// An origin's version of the file, and the lines of the blamed file
/// still looking for the commit that wrote them.
struct Suspect {
    blob: Oid,
    text: String,
    lines: Lines,
}

/// Where each line came from, and what git prints about it.
struct Blamed {
    /// Per line of the blamed file: the origin that wrote it, and its
    /// line there.
    owners: Vec<Option<(Origin, usize)>>,
    /// Of each origin that kept lines of its own: the parent's version
    /// it changed (git's `previous`).
    previous: HashMap<Origin, Origin>,
    commits: HashMap<Oid, Commit>,
}

/// How `blame` prints its lines.
#[derive(Default)]
struct Style {
    porcelain: bool,
    /// `--line-porcelain`: a commit's details on every line.
    every_line: bool,
    long: bool,
    no_author: bool,
    email: bool,
    number: bool,
    name: bool,
    raw_time: bool,
    /// `--root`: a root commit is not a boundary.
    root: bool,
    /// `-b`: a boundary commit's hash left blank.
    blank_boundary: bool,
    /// `core.quotePath`: names past ASCII quoted.
    quote_high: bool,
}

impl Ctx<'_> {
    /// `git blame [-L RANGE]… [REV] [--] FILE`.
    pub(super) async fn blame(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "blame",
                flags: &[
                    "-p",
                    "--porcelain",
                    "--line-porcelain",
                    "-l",
                    "-s",
                    "-e",
                    "--show-email",
                    "-n",
                    "--show-number",
                    "-f",
                    "--show-name",
                    "-t",
                    "--root",
                    "-b",
                ],
                valued: &[&["-L"]],
            },
        )?;
        let style = Style {
            porcelain: args.has(&["-p", "--porcelain", "--line-porcelain"]),
            every_line: args.has(&["--line-porcelain"]),
            long: args.has(&["-l"]),
            no_author: args.has(&["-s"]),
            email: args.has(&["-e", "--show-email"]),
            number: args.has(&["-n", "--show-number"]),
            name: args.has(&["-f", "--show-name"]),
            raw_time: args.has(&["-t"]),
            root: args.has(&["--root"]),
            blank_boundary: args.has(&["-b"]),
            quote_high: self.repo.config_bool("core.quotepath", true).await,
        };
        let usage = || {
            Out::error(
                "usage: git blame [<options>] [<rev-opts>] [<rev>] [--] <file>\n",
                129,
            )
        };
        let (revision, path) = match (args.operands.as_slice(), args.paths.first()) {
            ([rev], Some(path)) => (Some(*rev), *path),
            ([], Some(path)) | ([path], None) => (None, *path),
            ([rev, path], None) => (Some(*rev), *path),
            _ => return Err(usage()),
        };
        let repo = &self.repo;
        // Settings that change what blame prints, not built here.
        if let Some((key, _)) = repo
            .config()
            .await
            .into_iter()
            .find(|(key, _)| key.starts_with("blame."))
        {
            return Err(Out::error(
                format!("fatal: not supported by the sandbox's git: blame with {key} set\n"),
                128,
            ));
        }
        let path = self.inside(path)?;
        let start = self.revision(revision.unwrap_or("HEAD")).await?;
        let start_commit = repo.commit(&start).await.map_err(failed)?;
        let mut trees = Trees::default();
        let found = trees
            .entry_at(repo, &start_commit.tree, &path)
            .await
            .map_err(failed)?;
        let Some((_, blob)) = found else {
            return Err(Out::fatal(format!(
                "no such path {path} in {}",
                revision.unwrap_or("HEAD")
            )));
        };
        let bytes = repo.blob(&blob).await.map_err(failed)?;
        if revision.is_none() {
            // Without a revision git blames the work tree's file, its
            // uncommitted lines on a commit it makes up.
            let work = repo.content(&path, 0o100644).await.ok();
            if work.as_deref() != Some(bytes.as_slice()) {
                return Err(Out::error(
                    "fatal: not supported by the sandbox's git: blame of a file with uncommitted changes (name a revision: git blame HEAD -- FILE)\n",
                    128,
                ));
            }
        }
        let content = String::from_utf8_lossy(&bytes).into_owned();
        let lines: Vec<&str> = content.split_inclusive('\n').collect();
        let ranges = match args.value("-L") {
            Some(specs) => line_ranges(specs, &lines, &path)?,
            None => std::iter::once(0..lines.len()).collect(),
        };
        let wanted: Lines = ranges.iter().cloned().flatten().map(|i| (i, i)).collect();
        let mut blamed = blame_lines(repo, &start, &path, blob, content.clone(), wanted).await?;
        // Authors and committers as the project's `.mailmap` names them.
        let mailmap = repo.mailmap().await.map_err(Out::fatal)?;
        for commit in blamed.commits.values_mut() {
            commit.author = mailmap.map(&commit.author);
            commit.committer = mailmap.map(&commit.committer);
        }
        let mut out = String::new();
        let runs = runs(&blamed.owners, &ranges);
        if style.porcelain {
            porcelain(&mut out, &blamed, &runs, &lines, &style);
        } else {
            let names = repo.abbrev().await;
            let abbrev = runs
                .iter()
                .map(|run| names.of(&run.origin.commit, None).len())
                .max()
                .unwrap_or(names.default_len())
                + 1;
            human(
                &mut out,
                &blamed,
                &runs,
                &lines,
                &path,
                abbrev.min(40),
                &style,
            );
        }
        Ok(Out::ok(out))
    }
}

/// `-L` ranges (one per line of `specs`) as git reads them: `N,M`,
/// `N,+C`, `N,-C`, `/regex/` (searched from the end of the range before),
/// `^/regex/`; sorted and merged, as line indexes.
fn line_ranges(
    specs: &str,
    lines: &[&str],
    path: &str,
) -> Result<Vec<std::ops::Range<usize>>, Out> {
    let count = lines.len();
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    let mut anchor = 1;
    for spec in specs.split('\n') {
        if spec.starts_with(':') || spec.starts_with("^:") {
            return Err(Out::error(
                "fatal: not supported by the sandbox's git: -L :<funcname>\n",
                128,
            ));
        }
        let anchor_here = anchor.clamp(1, count + 1);
        let (bottom, rest) = location(spec, lines, -(anchor_here as i64))?;
        let (top, rest) = match rest.strip_prefix(',') {
            Some(after) => location(after, lines, bottom + 1)?,
            None => (0, rest),
        };
        if !rest.is_empty() {
            return Err(Out::error(
                "usage: git blame [<options>] [<rev-opts>] [<rev>] [--] <file>\n",
                129,
            ));
        }
        let (mut bottom, mut top) = if bottom != 0 && top != 0 && top < bottom {
            (top, bottom)
        } else {
            (bottom, top)
        };
        if (count == 0 && (top != 0 || bottom != 0)) || (count as i64) < bottom {
            let plural = if count == 1 { "" } else { "s" };
            return Err(Out::fatal(format!(
                "file {path} has only {count} line{plural}"
            )));
        }
        bottom = bottom.max(1);
        if top < 1 || count as i64 > 0 && (count as i64) < top {
            top = count as i64;
        }
        ranges.push((bottom - 1) as usize..top as usize);
        anchor = top as usize + 1;
    }
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    Ok(merged)
}

/// One end of a `-L` range and what follows it. `begin` is negative for
/// the start (where a search begins: the line after the previous range)
/// and the start's line plus one for the end, where `+C`/`-C` count from.
fn location<'s>(spec: &'s str, lines: &[&str], begin: i64) -> Result<(i64, &'s str), Out> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    if begin >= 1 {
        if let Some(sign) = spec.chars().next().filter(|c| *c == '+' || *c == '-') {
            let n = digits(&spec[1..]);
            if n > 0 {
                let num: i64 = spec[1..1 + n].parse().unwrap_or(i64::MAX);
                if num == 0 {
                    return Err(Out::fatal("-L invalid empty range"));
                }
                let end = if sign == '+' {
                    begin + num - 2
                } else if begin - num > 0 {
                    begin - num
                } else {
                    1
                };
                return Ok((end, &spec[1 + n..]));
            }
            return Ok((0, spec));
        }
    }
    let n = digits(spec);
    if n > 0 {
        let num: i64 = spec[..n].parse().unwrap_or(i64::MAX);
        if num == 0 {
            return Err(Out::fatal("-L invalid line number: 0"));
        }
        return Ok((num, &spec[n..]));
    }
    let (mut begin, mut spec) = (begin, spec);
    if begin < 0 {
        match spec.strip_prefix('^') {
            Some(rest) => (begin, spec) = (1, rest),
            None => begin = -begin,
        }
    }
    let Some(body) = spec.strip_prefix('/') else {
        return Ok((0, spec));
    };
    let mut end = None;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '/' => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(end) = end else {
        return Ok((0, spec));
    };
    let pattern = &body[..end];
    let from = (begin - 1).max(0) as usize;
    let regex = regex::RegexBuilder::new(&text::basic_regex(pattern))
        .multi_line(true)
        .build()
        .map_err(|e| {
            Out::fatal(format!(
                "-L parameter '{pattern}' starting at line {begin}: {e}"
            ))
        })?;
    let searched: String = lines[from.min(lines.len())..].concat();
    let Some(found) = regex.find(&searched) else {
        return Err(Out::fatal(format!(
            "-L parameter '{pattern}' starting at line {begin}: No match"
        )));
    };
    // The line the match starts on, counted from 1.
    let mut line = from;
    let mut at = 0;
    for text in &lines[from..] {
        if found.start() < at + text.len() {
            break;
        }
        at += text.len();
        line += 1;
    }
    Ok((line as i64 + 1, &body[end + 1..]))
}

/// Follows `wanted` lines of `path` at `start` back through history, as
/// git's blame: newest commit first; a commit with a parent holding the
/// same content passes every line to it; else each parent in turn takes
/// the lines its version kept (a parent with the content of an earlier
/// one taking none), and what no parent kept is the commit's own.
async fn blame_lines(
    repo: &Repo,
    start: &Oid,
    path: &str,
    blob: Oid,
    content: String,
    wanted: Lines,
) -> Result<Blamed, Out> {
    let lines_total = content.split_inclusive('\n').count();
    let mut owners: Vec<Option<(Origin, usize)>> = vec![None; lines_total];
    let mut previous: HashMap<Origin, Origin> = HashMap::default();
    let mut trees = Trees::default();
    let mut waiting = Waiting::default();
    // What the walk reads of each commit: its tree, parents and date.
    let mut shapes: HashMap<Oid, Shape> = HashMap::default();
    let first = repo.commit_shape(start).await.map_err(failed)?;
    let origin = Origin {
        commit: start.clone(),
        path: path.to_string(),
    };
    let time = first.date;
    waiting.hand(
        origin,
        time,
        Suspect {
            blob,
            text: content,
            lines: wanted,
        },
    );
    shapes.insert(start.clone(), first);
    while let Some((origin, suspect)) = waiting.next() {
        let commit = match shapes.get(&origin.commit) {
            Some(commit) => commit,
            None => {
                let read = repo.commit_shape(&origin.commit).await.map_err(failed)?;
                shapes.entry(origin.commit.clone()).or_insert(read)
            }
        };
        let parents = commit.parents.clone();
        let mut left = suspect.lines;
        // Each parent's version of the file, when it has one.
        let mut versions: Vec<(Origin, Oid)> = Vec::new();
        let mut whole = None;
        for parent in &parents {
            let parent_commit = match shapes.get(parent) {
                Some(commit) => commit,
                None => {
                    let read = repo.commit_shape(parent).await.map_err(failed)?;
                    shapes.entry(parent.clone()).or_insert(read)
                }
            };
            let tree = parent_commit.tree.clone();
            let Some((parent_path, parent_blob)) = parent_version(
                repo,
                &mut trees,
                &origin,
                &suspect.blob,
                &suspect.text,
                parent,
                &tree,
            )
            .await?
            else {
                continue;
            };
            let there = Origin {
                commit: parent.clone(),
                path: parent_path,
            };
            if parent_blob == suspect.blob {
                whole = Some(there);
                break;
            }
            if !versions.iter().any(|(_, blob)| *blob == parent_blob) {
                versions.push((there, parent_blob));
            }
        }
        if let Some(there) = whole {
            let time = shapes[&there.commit].date;
            let lines = left;
            waiting.hand(there, time, Suspect { lines, ..suspect });
            continue;
        }
        if let Some((first, _)) = versions.first() {
            previous.insert(origin.clone(), first.clone());
        }
        for (there, parent_blob) in versions {
            if left.is_empty() {
                break;
            }
            let parent_text =
                String::from_utf8_lossy(&repo.blob(&parent_blob).await.map_err(failed)?)
                    .into_owned();
            // Per line here: its line in the parent, where it has one.
            let mut same: Vec<Option<usize>> =
                vec![None; suspect.text.split_inclusive('\n').count()];
            for (here, there) in super::diff::kept_lines(&parent_text, &suspect.text) {
                if let Some(slot) = same.get_mut(here) {
                    *slot = Some(there);
                }
            }
            let (passed, kept): (Lines, Lines) = left
                .into_iter()
                .partition(|(_, here)| same.get(*here).copied().flatten().is_some());
            if !passed.is_empty() {
                let passed = passed
                    .into_iter()
                    .filter_map(|(line, here)| Some((line, same[here]?)))
                    .collect();
                let time = shapes[&there.commit].date;
                let (blob, text, lines) = (parent_blob, parent_text, passed);
                waiting.hand(there, time, Suspect { blob, text, lines });
            }
            left = kept;
        }
        for (line, here) in left {
            owners[line] = Some((origin.clone(), here));
        }
    }
    // Whole commits only of those that wrote a line, for what is printed.
    let mut commits = HashMap::default();
    for (origin, _) in owners.iter().flatten() {
        if !commits.contains_key(&origin.commit) {
            let commit = repo.commit(&origin.commit).await.map_err(failed)?;
            commits.insert(origin.commit.clone(), commit);
        }
    }
    Ok(Blamed {
        owners,
        previous,
        commits,
    })
}

/// Origins with lines still to place, newest commit first.
#[derive(Default)]
struct Waiting {
    suspects: HashMap<Origin, Suspect>,
    queue: BinaryHeap<(i64, Origin)>,
}

impl Waiting {
    /// Lines passed to an origin (its commit made at `time`), merged with
    /// what it already has.
    fn hand(&mut self, origin: Origin, time: i64, mut given: Suspect) {
        match self.suspects.get_mut(&origin) {
            Some(suspect) => suspect.lines.append(&mut given.lines),
            None => {
                self.suspects.insert(origin.clone(), given);
            }
        }
        self.queue.push((time, origin));
    }

    fn next(&mut self) -> Option<(Origin, Suspect)> {
        while let Some((_, origin)) = self.queue.pop() {
            if let Some(suspect) = self.suspects.remove(&origin) {
                return Some((origin, suspect));
            }
        }
        None
    }
}

/// The file `origin` is, in `parent`: at the same path, else (a rename)
/// the file the commit deleted with the same content, or the most alike
/// of them, as git's rename detection pairs them.
async fn parent_version(
    repo: &Repo,
    trees: &mut Trees,
    origin: &Origin,
    blob: &Oid,
    text: &str,
    parent: &Oid,
    parent_tree: &Oid,
) -> Result<Option<(String, Oid)>, Out> {
    match trees
        .entry_at(repo, parent_tree, &origin.path)
        .await
        .map_err(failed)?
    {
        Some((0o100644 | 0o100755, found)) => return Ok(Some((origin.path.clone(), found))),
        // A directory, a link or a submodule there: not this file.
        Some(_) => {}
        None => {}
    }
    let here = repo
        .commit_files(Some(&origin.commit))
        .await
        .map_err(failed)?;
    let there = repo.commit_files(Some(parent)).await.map_err(failed)?;
    let gone: Vec<(&String, &Oid)> = there
        .iter()
        .filter(|(p, b)| !here.contains_key(*p) && matches!(b.mode, 0o100644 | 0o100755))
        .map(|(p, b)| (p, &b.oid))
        .collect();
    if let Some((p, b)) = gone.iter().find(|(_, b)| *b == blob) {
        return Ok(Some(((*p).clone(), (*b).clone())));
    }
    let mut sources = Vec::with_capacity(gone.len());
    for (p, b) in &gone {
        sources.push(((*p).clone(), repo.blob(b).await.map_err(failed)?));
    }
    Ok(super::diff::rename_source(text.as_bytes(), &sources)
        .map(|from| (from.clone(), there[&from].oid.clone())))
}

/// Lines blamed on one origin, consecutive both here and there.
struct Stretch {
    origin: Origin,
    /// First line here and there (from 0), and how many.
    line: usize,
    source: usize,
    count: usize,
}

/// The blamed lines of `ranges` grouped as git's blame entries.
fn runs(owners: &[Option<(Origin, usize)>], ranges: &[std::ops::Range<usize>]) -> Vec<Stretch> {
    let mut runs: Vec<Stretch> = Vec::new();
    for line in ranges.iter().cloned().flatten() {
        let (origin, source) = owners[line]
            .clone()
            .expect("every wanted line has an owner");
        match runs.last_mut() {
            Some(run)
                if run.origin == origin
                    && run.line + run.count == line
                    && run.source + run.count == source =>
            {
                run.count += 1
            }
            _ => runs.push(Stretch {
                origin,
                line,
                source,
                count: 1,
            }),
        }
    }
    runs
}

/// A commit where blame stops: a root (unless `--root`).
fn boundary(commit: &Commit, style: &Style) -> bool {
    commit.parents.is_empty() && !style.root
}

/// A line of the file as printed: a newline at its end.
fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push('\n');
    }
}

/// git's default format: `HASH [PATH] [N] (AUTHOR DATE LINE) text`.
fn human(
    out: &mut String,
    blamed: &Blamed,
    runs: &[Stretch],
    lines: &[&str],
    path: &str,
    abbrev: usize,
    style: &Style,
) {
    let show_name = style.name || runs.iter().any(|run| run.origin.path != path);
    let author = |commit: &Commit| match style.email {
        true => format!("<{}>", commit.author.email),
        false => commit.author.name.clone(),
    };
    let widest = |f: &dyn Fn(&Stretch) -> usize| runs.iter().map(f).max().unwrap_or(0);
    let author_width =
        widest(&|run| text::display_width(&author(&blamed.commits[&run.origin.commit])));
    let path_width = widest(&|run| run.origin.path.len());
    let source_width = widest(&|run| run.source + run.count).to_string().len();
    let line_width = widest(&|run| run.line + run.count).to_string().len();
    for run in runs {
        let commit = &blamed.commits[&run.origin.commit];
        let oid = &run.origin.commit;
        let when = match style.raw_time {
            true => format!("{} {}", commit.author.time, commit.author.zone),
            false => dates::iso_date(commit.author.time, &commit.author.zone),
        };
        for i in 0..run.count {
            let length = if style.long { 40 } else { abbrev };
            if boundary(commit, style) && style.blank_boundary {
                out.push_str(&" ".repeat(length));
            } else if boundary(commit, style) {
                out.push('^');
                out.push_str(&oid[..length - 1]);
            } else {
                out.push_str(&oid[..length]);
            }
            if show_name {
                let _ = write!(out, " {:<path_width$}", run.origin.path);
            }
            if style.number {
                let _ = write!(out, " {:>source_width$}", run.source + 1 + i);
            }
            if !style.no_author {
                let name = author(commit);
                let pad = author_width - text::display_width(&name);
                let _ = write!(out, " ({name}{:pad$} {when:>10}", "");
            }
            let _ = write!(out, " {:>line_width$}) ", run.line + 1 + i);
            push_line(out, lines[run.line + i]);
        }
    }
}

/// `--porcelain`: a header per run (`HASH SOURCE LINE COUNT`), a commit's
/// details the first time it is seen (every line with
/// `--line-porcelain`), each line after a tab.
fn porcelain(out: &mut String, blamed: &Blamed, runs: &[Stretch], lines: &[&str], style: &Style) {
    // A commit whose lines came under more than one name names its file
    // every time.
    let mut paths: HashMap<&Oid, HashSet<&str>> = HashMap::default();
    for run in runs {
        paths
            .entry(&run.origin.commit)
            .or_default()
            .insert(&run.origin.path);
    }
    let mut shown: HashSet<&Oid> = HashSet::default();
    for run in runs {
        let oid = &run.origin.commit;
        let commit = &blamed.commits[oid];
        for i in 0..run.count {
            let _ = write!(out, "{oid} {} {}", run.source + 1 + i, run.line + 1 + i);
            if i == 0 {
                let _ = write!(out, " {}", run.count);
            }
            out.push('\n');
            if i == 0 || style.every_line {
                let first = shown.insert(oid);
                if first || style.every_line {
                    details(out, oid, commit, style);
                }
                if first || style.every_line || paths[oid].len() > 1 {
                    if let Some(before) = blamed.previous.get(&run.origin) {
                        let _ = writeln!(
                            out,
                            "previous {} {}",
                            before.commit,
                            text::quote_path(&before.path, style.quote_high)
                        );
                    }
                    let _ = writeln!(
                        out,
                        "filename {}",
                        text::quote_path(&run.origin.path, style.quote_high)
                    );
                }
            }
            out.push('\t');
            push_line(out, lines[run.line + i]);
        }
    }
}

/// A commit's lines in `--porcelain`.
fn details(out: &mut String, oid: &Oid, commit: &Commit, style: &Style) {
    for (role, who) in [("author", &commit.author), ("committer", &commit.committer)] {
        let _ = write!(
            out,
            "{role} {}\n{role}-mail <{}>\n{role}-time {}\n{role}-tz {}\n",
            who.name, who.email, who.time, who.zone
        );
    }
    // The first line with text: blame's summary, unlike `%s`, does not
    // join the lines of the first paragraph.
    let summary = commit
        .message
        .split_inclusive('\n')
        .find(|line| !line.trim().is_empty())
        .map_or("", |line| line.strip_suffix('\n').unwrap_or(line));
    match summary.is_empty() {
        true => {
            let _ = writeln!(out, "summary ({oid})");
        }
        false => {
            let _ = writeln!(out, "summary {summary}");
        }
    }
    if boundary(commit, style) {
        out.push_str("boundary\n");
    }
}
