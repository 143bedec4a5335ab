//! Commands that read history as a whole: `describe` and `shortlog`,
//! with git's output, and `log --graph`'s lanes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;

use super::commands::{
    failed, flag_list, with_walk_flags, with_walk_values, Args, Ctx, Filter, Spec,
};
use super::odb::Oid;
use super::repo::Signature;
use super::{text, Out, Run};

/// `log --graph`: each entry's lines behind the lanes git draws (`*` the
/// commit, `|` a line of history, `|\` a merge opening a lane, `|/` two
/// lanes meeting). Entries in topological order; `separated` puts a
/// lane-prefixed blank line between them, as the medium format has.
/// A commit queued by date in `describe`'s walk: its date, its name, its
/// parents.
type Queued = (i64, Oid, Vec<Oid>);

pub fn graph(entries: &[String], parents: &[(Oid, Vec<Oid>)], separated: bool) -> String {
    let mut lanes: Vec<Oid> = Vec::new();
    let mut out = String::new();
    let bars = |n: usize| "| ".repeat(n);
    for (i, (entry, (oid, commit_parents))) in entries.iter().zip(parents).enumerate() {
        if separated && i > 0 {
            let _ = writeln!(out, "{}", bars(lanes.len()));
        }
        let col = match lanes.iter().position(|l| l == oid) {
            Some(col) => col,
            None => {
                lanes.push(oid.clone());
                lanes.len() - 1
            }
        };
        let mut next = lanes.clone();
        next.remove(col);
        let mut at = col;
        for parent in commit_parents {
            if at == col || !next.contains(parent) {
                next.insert(at, parent.clone());
                at += 1;
            }
        }
        let width = lanes.len().max(next.len());
        let mut head: String = (0..lanes.len())
            .map(|j| if j == col { "* " } else { "| " })
            .collect();
        while head.len() < 2 * width {
            head.push(' ');
        }
        let mut lines = entry.trim_end_matches('\n').split('\n');
        let _ = writeln!(out, "{head}{}", lines.next().unwrap_or(""));
        let merge = commit_parents.len() > 1 && next.len() > lanes.len();
        let opening = || {
            let mut line: Vec<char> = bars(next.len()).chars().collect();
            line[2 * col + 1] = '\\';
            line[2 * col + 2] = ' ';
            line.into_iter().collect::<String>()
        };
        let mut rest = lines.peekable();
        if merge {
            let _ = writeln!(out, "{}{}", opening(), rest.next().unwrap_or(""));
        }
        for line in rest {
            let _ = writeln!(out, "{}{line}", bars(next.len()));
        }
        // Two lanes waiting for the same commit meet.
        if let Some(dup) = (1..next.len()).find(|&j| next[..j].contains(&next[j])) {
            let mut line: Vec<char> = bars(next.len()).chars().collect();
            for j in dup..next.len() {
                line[2 * j] = ' ';
                line[2 * j - 1] = '/';
            }
            let _ = writeln!(out, "{}", line.into_iter().collect::<String>());
            next.remove(dup);
        }
        lanes = next;
    }
    out
}

impl Ctx<'_> {
    /// `git describe`: the nearest tag, `TAG-N-gHASH` when `HEAD` is N
    /// commits past it.
    pub(super) async fn describe(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "describe",
                flags: &["--tags", "--long", "--always", "--dirty", "--dirty="],
                valued: &[&["--abbrev"], &["--match"]],
            },
        )?;
        let repo = &self.repo;
        let target = args.operands.first().copied().unwrap_or("HEAD");
        let oid = self.revision(target).await?;
        let all_tags = args.has(&["--tags"]);
        let abbrev: Option<usize> = match args.value("--abbrev") {
            Some(given) => Some(given.parse().map_err(|_| {
                Out::error(
                    "error: option `abbrev' expects a numerical value\n".to_string(),
                    129,
                )
            })?),
            None => None,
        };
        let names = repo.abbrev().await;
        let (best, unannotated, any_names) = self
            .nearest_tag(&oid, all_tags, args.value("--match"))
            .await?;
        let dirty = match args.flags_like("--dirty") {
            Some(flag) => {
                let state = self.state().await?;
                let changed = !state.staged().is_empty() || !state.unstaged().is_empty();
                changed.then(|| {
                    flag.strip_prefix("--dirty=")
                        .unwrap_or("-dirty")
                        .to_string()
                })
            }
            None => None,
        };
        let dirty = dirty.unwrap_or_default();
        let described = match best {
            Some((0, name)) if !args.has(&["--long"]) => name,
            // `--abbrev=0`: the closest tag alone.
            Some((_, name)) if abbrev == Some(0) => name,
            Some((depth, name)) => format!("{name}-{depth}-g{}", names.of(&oid, abbrev)),
            None if args.has(&["--always"]) => names.of(&oid, abbrev),
            None if !any_names => {
                return Err(Out::fatal("No names found, cannot describe anything."))
            }
            None if unannotated => {
                return Err(Out::fatal(format!(
                    "No annotated tags can describe '{oid}'.\nHowever, there were unannotated tags: try --tags."
                )))
            }
            None => {
                return Err(Out::fatal(format!(
                    "No tags can describe '{oid}'.\nTry --always, or create some tags."
                )))
            }
        };
        Ok(Out::ok(format!("{described}{dirty}\n")))
    }

    /// `git name-rev REV…`: each commit named after a ref that reaches it
    /// (`tags/v1.0~3`, `main~2^2`), chosen as git's name-rev chooses: a
    /// tag over a branch, then the fewest steps (a merge's other parent
    /// counting 65,535), then the older tag; commits older than the
    /// oldest asked for, less a day, never walked.
    pub(super) async fn name_rev(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "name-rev",
                flags: &[
                    "--name-only",
                    "--tags",
                    "--undefined",
                    "--no-undefined",
                    "--always",
                    "--no-always",
                ],
                valued: &[&["--refs"], &["--exclude"]],
            },
        )?;
        if args.operands.is_empty() {
            return Err(Out::error(
                "usage: git name-rev [<options>] <commit>...\n",
                129,
            ));
        }
        let repo = &self.repo;
        let name_only = args.has(&["--name-only"]);
        let tags_only = args.has(&["--tags"]);
        let last = |yes: &str, no: &str| args.last(&[yes, no]).map(|f| f == yes);
        let undefined_ok = last("--undefined", "--no-undefined").unwrap_or(true);
        let always = last("--always", "--no-always").unwrap_or(false);
        let lines = |key: &str| -> Vec<String> {
            args.value(key)
                .map_or(Vec::new(), |v| v.split('\n').map(String::from).collect())
        };
        let (filters, excludes) = (lines("--refs"), lines("--exclude"));
        let mut graph = Parents::default();
        // What was asked for: (as given, the object, its commit).
        let mut asked = Vec::new();
        let mut stderr = String::new();
        let mut cutoff = i64::MAX;
        for given in &args.operands {
            let Some(object) = repo.resolve(given).await else {
                stderr.push_str(&format!("Could not get sha1 for {given}. Skipping.\n"));
                continue;
            };
            let commit = match repo.peel(&object).await {
                Ok(commit) if repo.commit(&commit).await.is_ok() => Some(commit),
                _ => None,
            };
            if let Some(commit) = &commit {
                cutoff = cutoff.min(graph.read(repo, commit).await?.0);
            }
            asked.push((*given, object, commit));
        }
        let cutoff = cutoff.saturating_sub(86_400);
        // The refs that name: tags first, older first (a branch's date is
        // its commit's), in name order on a tie.
        let mut tips: Vec<Tip> = Vec::new();
        let all_refs = repo.all_refs().await;
        for (full, oid) in repo.refs_with_objects().await {
            if tags_only && !full.starts_with("refs/tags/") {
                continue;
            }
            let subpath = |pattern: &str| -> Option<usize> {
                let mut at = 0;
                loop {
                    if text::glob(pattern, &full[at..]) {
                        return Some(at);
                    }
                    at += full[at..].find('/')? + 1;
                }
            };
            if excludes.iter().any(|p| subpath(p).is_some()) {
                continue;
            }
            let mut short = tags_only && name_only;
            if !filters.is_empty() {
                let matches: Vec<usize> = filters.iter().filter_map(|p| subpath(p)).collect();
                if matches.is_empty() {
                    continue;
                }
                short |= matches.iter().any(|&at| at > 0);
            }
            let (mut object, mut tagger, mut peeled) = (oid.clone(), None, false);
            while let Ok(("tag", body)) = repo
                .read_object(&object)
                .await
                .as_ref()
                .map(|(k, b)| (k.as_str(), b.clone()))
            {
                let text = String::from_utf8_lossy(&body).into_owned();
                tagger = Some(tagger_time(&text));
                peeled = true;
                match text.lines().next().and_then(|l| l.strip_prefix("object ")) {
                    Some(next) => object = next.to_string(),
                    None => break,
                }
            }
            let commit = match repo.commit(&object).await {
                Ok(commit) => Some((object, commit.committer.time)),
                Err(_) => None,
            };
            let name = if short {
                super::refs::shortest_unambiguous(&full, &all_refs)
            } else {
                full.strip_prefix("refs/heads/")
                    .or_else(|| full.strip_prefix("refs/"))
                    .unwrap_or(&full)
                    .to_string()
            };
            let from_tag = commit.is_some() && full.starts_with("refs/tags/");
            let date = tagger.or(commit.as_ref().map(|c| c.1)).unwrap_or(i64::MAX);
            tips.push(Tip {
                oid,
                name,
                commit: commit.map(|c| c.0),
                date,
                from_tag,
                peeled,
            });
        }
        tips.sort_by(|a, b| b.from_tag.cmp(&a.from_tag).then(a.date.cmp(&b.date)));
        let mut names: HashMap<Oid, RevName> = HashMap::new();
        for tip in &tips {
            if let Some(commit) = &tip.commit {
                name_from(repo, &mut graph, &mut names, commit, tip, cutoff).await?;
            }
        }
        let mut out = String::new();
        for (given, object, commit) in asked {
            let name = match &commit {
                Some(commit) if *commit == object => names.get(commit).map(RevName::shown),
                _ => tips
                    .iter()
                    .find(|t| t.oid == object)
                    .map(|t| t.name.clone()),
            };
            if !name_only {
                out.push_str(given);
                out.push(' ');
            }
            match name {
                Some(name) => out.push_str(&name),
                None if undefined_ok => out.push_str("undefined"),
                None if always => out.push_str(&repo.abbrev().await.of(&object, None)),
                None => {
                    let mut failure =
                        Out::error(format!("{stderr}fatal: cannot describe '{object}'\n"), 128);
                    failure.stdout = out;
                    return Err(failure);
                }
            }
            out.push('\n');
        }
        Ok(Out::ok(out).with_stderr(stderr))
    }

    /// The tag `describe` names `target` after, and how many commits
    /// `target` has that it has not, found as git's describe finds it: a
    /// walk from `target`, newest commit first, taking up to ten tagged
    /// commits as candidates, each counting the commits it does not reach;
    /// the fewest wins (the first found on a tie). Also whether tags were
    /// left out for being lightweight, and whether there were any.
    async fn nearest_tag(
        &self,
        target: &str,
        all_tags: bool,
        pattern: Option<&str>,
    ) -> Result<(Option<(usize, String)>, bool, bool), Out> {
        const CANDIDATES: usize = 10;
        const SEEN: u32 = 1;
        let repo = &self.repo;
        // Each tagged commit's best name: annotated over lightweight, the
        // newer of two annotated tags, else the first by name.
        let mut named: HashMap<Oid, (u8, i64, String)> = HashMap::new();
        for name in repo.refs("tags").await {
            if pattern.is_some_and(|p| !text::glob(p, &name)) {
                continue;
            }
            let Some(tag) = repo.tag(&name).await else {
                continue;
            };
            let Ok((kind, body)) = repo.read_object(&tag).await else {
                continue;
            };
            let (prio, date) = match kind.as_str() {
                "tag" => (2, tagger_time(&String::from_utf8_lossy(&body))),
                _ => (1, 0),
            };
            let Ok(commit) = repo.peel(&tag).await else {
                continue;
            };
            if repo.commit(&commit).await.is_err() {
                continue;
            }
            let replace = match named.get(&commit) {
                None => true,
                Some((p, d, _)) => *p < prio || (*p == 2 && prio == 2 && *d < date),
            };
            if replace {
                named.insert(commit, (prio, date, name));
            }
        }
        let usable = |prio: u8| all_tags || prio == 2;
        if let Some((prio, _, name)) = named.get(target) {
            if usable(*prio) {
                return Ok((Some((0, name.clone())), false, true));
            }
        }
        if named.is_empty() {
            return Ok((None, false, false));
        }
        let mut flags: HashMap<Oid, u32> = HashMap::new();
        // Newest first; equal dates in the order they came. Each commit
        // with its parents, read once, when it is queued.
        let mut list: VecDeque<Queued> = VecDeque::new();
        let insert = |list: &mut VecDeque<Queued>, queued: Queued| {
            let at = list
                .iter()
                .position(|(d, _, _)| *d < queued.0)
                .unwrap_or(list.len());
            list.insert(at, queued);
        };
        let queued = |oid: Oid| async move {
            let (date, parents) = repo.commit_links(&oid).await.map_err(failed)?;
            Ok::<_, Out>((date, oid, parents))
        };
        flags.insert(target.to_string(), SEEN);
        insert(&mut list, queued(target.to_string()).await?);
        // (name, depth, flag, found order)
        let mut matches: Vec<(String, usize, u32, usize)> = Vec::new();
        let (mut annotated, mut unannotated) = (0, false);
        let mut seen_commits = 0usize;
        let mut gave_up_on = None;
        while let Some((date, oid, parents)) = list.pop_front() {
            seen_commits += 1;
            if let Some((prio, _, name)) = named.get(&oid) {
                if !usable(*prio) {
                    unannotated = true;
                } else if matches.len() < CANDIDATES {
                    let flag = 1 << (matches.len() + 1);
                    matches.push((name.clone(), seen_commits - 1, flag, matches.len()));
                    *flags.entry(oid.clone()).or_default() |= flag;
                    if *prio == 2 {
                        annotated += 1;
                    }
                } else {
                    gave_up_on = Some((date, oid, parents));
                    break;
                }
            }
            let here = flags.get(&oid).copied().unwrap_or(0);
            for (_, depth, flag, _) in &mut matches {
                if here & *flag == 0 {
                    *depth += 1;
                }
            }
            if annotated > 0 && list.is_empty() {
                break;
            }
            for parent in parents {
                let mark = flags.entry(parent.clone()).or_default();
                let fresh = *mark & SEEN == 0;
                *mark |= here | SEEN;
                if fresh {
                    insert(&mut list, queued(parent).await?);
                }
            }
        }
        if matches.is_empty() {
            return Ok((None, unannotated, true));
        }
        matches.sort_by_key(|(_, depth, _, order)| (*depth, *order));
        let (name, mut depth, flag, _) = matches.swap_remove(0);
        if let Some(queued) = gave_up_on {
            insert(&mut list, queued);
        }
        // The rest of the count: commits still queued that the best
        // candidate does not reach.
        while let Some((_, oid, parents)) = list.pop_front() {
            let here = flags.get(&oid).copied().unwrap_or(0);
            if here & flag != 0 {
                if list
                    .iter()
                    .all(|(_, o, _)| flags.get(o).copied().unwrap_or(0) & flag != 0)
                {
                    break;
                }
            } else {
                depth += 1;
            }
            for parent in parents {
                let mark = flags.entry(parent.clone()).or_default();
                let fresh = *mark & SEEN == 0;
                *mark |= here | SEEN;
                if fresh {
                    insert(&mut list, queued(parent).await?);
                }
            }
        }
        Ok((Some((depth, name)), unannotated, true))
    }

    /// `git shortlog`: commits grouped by author, or counted (`-s`).
    pub(super) async fn shortlog(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "shortlog",
                flags: with_walk_flags!(
                    flag_list;
                    "-e",
                    "--email",
                    "-n",
                    "--numbered",
                    "-s",
                    "--summary",
                ),
                valued: with_walk_values![],
            },
        )?;
        // Without a revision git summarizes a log read from its standard
        // input, which is never a terminal here.
        let mut revision = args.has(&["--all", "--branches", "--tags", "--remotes"]);
        for operand in &args.operands {
            revision |= operand.contains("..")
                || operand.starts_with('^')
                || self.repo.resolve(operand).await.is_some();
        }
        if !revision {
            return Err(Out::fatal(
                "not supported by the sandbox's git: shortlog without a revision (git reads a log from its standard input when that is not a terminal); name one: git shortlog HEAD",
            ));
        }
        let walk = self.walk_of(&args).await?;
        let filter = Filter::of(&args)?;
        let mut steps = walk.run(&self.repo, |_| true).await.map_err(failed)?;
        steps.retain(|step| filter.as_ref().is_none_or(|f| f.passes(&step.commit)));
        let email = args.has(&["-e", "--email"]);
        let mailmap = self.repo.mailmap().await.map_err(Out::fatal)?;
        let mut by_author: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for step in steps.iter().rev() {
            let commit = &step.commit;
            let author = mailmap.map(&commit.author);
            let who = if email {
                format!("{} <{}>", author.name, author.email)
            } else {
                author.name
            };
            by_author.entry(who).or_default().push(commit.subject());
        }
        let mut groups: Vec<(String, Vec<String>)> = by_author.into_iter().collect();
        if args.has(&["-n", "--numbered"]) {
            groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        }
        let mut out = String::new();
        for (who, subjects) in groups {
            if args.has(&["-s", "--summary"]) {
                let _ = writeln!(out, "{:>6}\t{who}", subjects.len());
            } else {
                let _ = writeln!(out, "{who} ({}):", subjects.len());
                for subject in subjects {
                    let _ = writeln!(out, "      {subject}");
                }
                out.push('\n');
            }
        }
        Ok(Out::ok(out))
    }
}

/// When a tag object says it was made (0 without a tagger).
fn tagger_time(tag: &str) -> i64 {
    tag.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("tagger "))
        .map_or(0, |t| Signature::parse(t).time)
}

/// A ref `name-rev` names commits after.
struct Tip {
    /// What the ref holds (a tag object, for an annotated tag).
    oid: Oid,
    name: String,
    commit: Option<Oid>,
    /// The tagger's date, else the commit's.
    date: i64,
    from_tag: bool,
    /// Reached through a tag object: named `NAME^0` at the commit.
    peeled: bool,
}

/// A commit's name in `name-rev`: the tip's name, how many first parents
/// from it (since the last other parent), and its cost.
#[derive(Clone)]
struct RevName {
    tip: String,
    generation: u32,
    distance: u32,
    date: i64,
    from_tag: bool,
}

/// How many first-parent steps one step to another parent outweighs.
const MERGE_TRAVERSAL_WEIGHT: u32 = 65_535;

impl RevName {
    fn effective(&self) -> u32 {
        self.distance.saturating_add(if self.generation > 0 {
            MERGE_TRAVERSAL_WEIGHT
        } else {
            0
        })
    }

    /// Whether `self` names a commit better than `old`, as git decides.
    fn better_than(&self, old: &RevName) -> bool {
        let (new_cost, old_cost) = (self.effective(), old.effective());
        if self.from_tag && old.from_tag {
            return old_cost > new_cost;
        }
        if self.from_tag != old.from_tag {
            return self.from_tag;
        }
        if old_cost != new_cost {
            return old_cost > new_cost;
        }
        old.date > self.date
    }

    fn shown(&self) -> String {
        match self.generation {
            0 => self.tip.clone(),
            n => format!("{}~{n}", self.tip.strip_suffix("^0").unwrap_or(&self.tip)),
        }
    }
}

/// Commits' dates and parents, each read once.
#[derive(Default)]
struct Parents(HashMap<Oid, (i64, Vec<Oid>)>);

impl Parents {
    async fn read(&mut self, repo: &super::repo::Repo, oid: &Oid) -> Result<(i64, Vec<Oid>), Out> {
        if let Some(known) = self.0.get(oid) {
            return Ok(known.clone());
        }
        let commit = repo.commit(oid).await.map_err(failed)?;
        let known = (commit.date, commit.parents);
        self.0.insert(oid.clone(), known.clone());
        Ok(known)
    }
}

/// Names the commits `tip` reaches, depth first along first parents, each
/// where the name beats the one it has (git's `name_rev`).
async fn name_from(
    repo: &super::repo::Repo,
    graph: &mut Parents,
    names: &mut HashMap<Oid, RevName>,
    start: &Oid,
    tip: &Tip,
    cutoff: i64,
) -> Result<(), Out> {
    if graph.read(repo, start).await?.0 < cutoff {
        return Ok(());
    }
    let first = RevName {
        tip: match tip.peeled {
            true => format!("{}^0", tip.name),
            false => tip.name.clone(),
        },
        generation: 0,
        distance: 0,
        date: tip.date,
        from_tag: tip.from_tag,
    };
    if names.get(start).is_some_and(|old| !first.better_than(old)) {
        return Ok(());
    }
    names.insert(start.clone(), first);
    let mut stack = vec![start.clone()];
    while let Some(oid) = stack.pop() {
        let name = names[&oid].clone();
        let (_, parents) = graph.read(repo, &oid).await?;
        let mut next = Vec::new();
        for (i, parent) in parents.iter().enumerate() {
            if graph.read(repo, parent).await?.0 < cutoff {
                continue;
            }
            let candidate = match i {
                0 => RevName {
                    generation: name.generation + 1,
                    distance: name.distance + 1,
                    ..name.clone()
                },
                _ => RevName {
                    tip: {
                        let base = name.tip.strip_suffix("^0").unwrap_or(&name.tip);
                        match name.generation {
                            0 => format!("{base}^{}", i + 1),
                            n => format!("{base}~{n}^{}", i + 1),
                        }
                    },
                    generation: 0,
                    distance: name.distance.saturating_add(MERGE_TRAVERSAL_WEIGHT),
                    ..name.clone()
                },
            };
            if names
                .get(parent)
                .is_some_and(|old| !candidate.better_than(old))
            {
                continue;
            }
            names.insert(parent.clone(), candidate);
            next.push(parent.clone());
        }
        // The first parent comes off the stack first.
        stack.extend(next.into_iter().rev());
    }
    Ok(())
}
