//! Listings of trees, commits and refs: `ls-tree`, `rev-list`, `show-ref`,
//! `for-each-ref`, and the `--sort`/`--format` of refs that `tag` shares.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use super::*;
use crate::repo::{Commit, Signature};

/// One ref a listing shows, with the object it names read.
pub(super) struct Listed {
    /// The full name, `refs/tags/v1`.
    pub(super) name: String,
    pub(super) oid: Oid,
    kind: String,
    /// A commit's fields, or a tag's (its tagger as committer and author).
    commit: Option<Commit>,
    tagger: Option<Signature>,
    /// What an annotated tag names, peeled to the end.
    peeled: Option<Oid>,
}

impl Ctx<'_> {
    /// `refs` (full names) read for a listing.
    /// Each ref of `refs` with what `format` and the sort `keys` show of
    /// it: its object read only when they need more than names (a plain
    /// `git tag` lists hundreds of tags without reading one); as in git, a
    /// ref whose object is missing is listed by name, and is an error only
    /// where its object is read.
    pub(super) async fn listed(
        &self,
        refs: Vec<String>,
        format: &str,
        keys: &[&str],
    ) -> Result<Vec<Listed>, Out> {
        let by_name = |atom: &str| atom.starts_with("refname") || atom.starts_with("objectname");
        let names_only = format.split("%(").skip(1).all(by_name)
            && keys.iter().all(|key| {
                let key = key.trim_start_matches('-');
                by_name(
                    key.strip_prefix("v:")
                        .or(key.strip_prefix("version:"))
                        .unwrap_or(key),
                )
            });
        let repo = &self.repo;
        let mut items = Vec::with_capacity(refs.len());
        for name in refs {
            let Some(oid) = repo.read_ref(&name).await else {
                continue;
            };
            if names_only {
                items.push(Listed {
                    name,
                    oid,
                    kind: String::new(),
                    commit: None,
                    tagger: None,
                    peeled: None,
                });
                continue;
            }
            if !repo.has_object(&oid).await {
                return Err(Out::fatal(format!("missing object {oid} for {name}")));
            }
            let (kind, body) = repo.read_object(&oid).await.map_err(failed)?;
            let mut item = Listed {
                name,
                oid: oid.clone(),
                kind: kind.clone(),
                commit: None,
                tagger: None,
                peeled: None,
            };
            match kind.as_str() {
                "commit" => item.commit = Some(repo.commit(&oid).await.map_err(failed)?),
                "tag" => {
                    let text = String::from_utf8_lossy(&body);
                    let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
                    item.tagger = headers
                        .lines()
                        .find_map(|l| l.strip_prefix("tagger "))
                        .map(Signature::parse);
                    item.peeled = Some(repo.peel(&oid).await.map_err(failed)?);
                    // The tag's message stands for its subject and body.
                    let mut as_commit = Commit {
                        tree: String::new(),
                        parents: Vec::new(),
                        author: item.tagger.clone().unwrap_or_else(|| Signature::parse("")),
                        committer: item.tagger.clone().unwrap_or_else(|| Signature::parse("")),
                        message: message.to_string(),
                        date: 0,
                    };
                    if item.tagger.is_none() {
                        as_commit.author.time = 0;
                    }
                    item.commit = Some(as_commit);
                }
                _ => {}
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// Sorts by git's `--sort` keys, the last given first; ties by name.
/// The options `branch` and `tag` filter their lists by. Most may be
/// given no commit (then `HEAD`, as git's `PARSE_OPT_LASTARG_DEFAULT`:
/// when nothing or another option follows); `branch --points-at` may not.
pub(super) const REACH_OPTIONS: [&str; 5] = [
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
];

/// `args` with `HEAD` after each of `defaulting` (some of
/// [`REACH_OPTIONS`]) given no value.
pub(super) fn with_default_commits(args: &[String], defaulting: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 1);
    for (at, arg) in args.iter().enumerate() {
        out.push(arg.clone());
        let next = args.get(at + 1);
        if defaulting.contains(&arg.as_str()) && next.is_none_or(|n| n.starts_with('-')) {
            out.push("HEAD".to_string());
        }
    }
    out
}

/// Which refs `--contains`/`--no-contains`/`--merged`/`--no-merged`/
/// `--points-at` keep, as git's ref-filter decides.
pub(super) struct Reach {
    points_at: Vec<Oid>,
    contains: Vec<Oid>,
    no_contains: Vec<Oid>,
    merged: Vec<HashSet<Oid>>,
    no_merged: Vec<HashSet<Oid>>,
    /// For each target of `contains`/`no_contains`: whether a commit
    /// reaches it.
    reaches: HashMap<Oid, HashMap<Oid, bool>>,
}

impl Reach {
    /// The filters `args` give (repeated options: each value).
    pub(super) async fn of(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Option<Reach>, Out> {
        let values = |name: &str| -> Vec<String> {
            args.value(name)
                .map(|v| v.split('\n').map(str::to_string).collect())
                .unwrap_or_default()
        };
        if REACH_OPTIONS.iter().all(|name| args.value(name).is_none()) {
            return Ok(None);
        }
        let mut reach = Reach {
            points_at: Vec::new(),
            contains: Vec::new(),
            no_contains: Vec::new(),
            merged: Vec::new(),
            no_merged: Vec::new(),
            reaches: Default::default(),
        };
        let commit = |name: String| async move {
            ctx.repo
                .resolve_commit(&name)
                .await
                .ok_or_else(|| Out::error(format!("error: malformed object name {name}\n"), 129))
        };
        for name in values("--points-at") {
            reach.points_at.push(ctx.object(&name).await?);
        }
        for name in values("--contains") {
            reach.contains.push(commit(name).await?);
        }
        for name in values("--no-contains") {
            reach.no_contains.push(commit(name).await?);
        }
        for name in values("--merged") {
            reach
                .merged
                .push(ctx.repo.ancestors(&commit(name).await?).await);
        }
        for name in values("--no-merged") {
            reach
                .no_merged
                .push(ctx.repo.ancestors(&commit(name).await?).await);
        }
        Ok(Some(reach))
    }

    /// Whether the ref pointing at `oid` is listed.
    pub(super) async fn keeps(&mut self, repo: &Repo, oid: &str) -> bool {
        if !self.points_at.is_empty() {
            // The ref's own object, or what an annotated tag names.
            let named = repo
                .read_object(oid)
                .await
                .ok()
                .filter(|(kind, _)| kind == "tag")
                .and_then(|(_, body)| {
                    String::from_utf8_lossy(&body)
                        .lines()
                        .next()?
                        .strip_prefix("object ")
                        .map(str::to_string)
                });
            let hit = |o: &String| *o == oid || named.as_ref() == Some(o);
            if !self.points_at.iter().any(hit) {
                return false;
            }
        }
        if self.contains.is_empty()
            && self.no_contains.is_empty()
            && self.merged.is_empty()
            && self.no_merged.is_empty()
        {
            return true;
        }
        // Refs to trees and blobs are no commits: these list none of them.
        let Some(tip) = repo.resolve_commit(oid).await else {
            return false;
        };
        if repo.commit(&tip).await.is_err() {
            return false;
        }
        if self.merged.iter().any(|set| !set.contains(&tip))
            || self.no_merged.iter().any(|set| set.contains(&tip))
        {
            return false;
        }
        let mut any_contains = self.contains.is_empty();
        for target in self.contains.clone() {
            any_contains |= self.reaches(repo, &tip, &target).await;
        }
        let mut none_excluded = true;
        for target in self.no_contains.clone() {
            none_excluded &= !self.reaches(repo, &tip, &target).await;
        }
        any_contains && none_excluded
    }

    /// Whether `target` is `from` or one of its ancestors; what is found
    /// on the way is kept for the next ref, so a list walks each commit
    /// once.
    async fn reaches(&mut self, repo: &Repo, from: &Oid, target: &Oid) -> bool {
        let known = self.reaches.entry(target.clone()).or_default();
        // Each commit with its parents once they are read: read once,
        // looked at again when its parents are settled.
        let mut stack: Vec<(Oid, Option<Vec<Oid>>)> = vec![(from.clone(), None)];
        while let Some((oid, expanded)) = stack.pop() {
            if let Some(parents) = expanded {
                let found = parents.iter().any(|p| known.get(p) == Some(&true));
                known.insert(oid, found);
                continue;
            }
            if known.contains_key(&oid) {
                continue;
            }
            if oid == *target {
                known.insert(oid, true);
                continue;
            }
            let parents = repo
                .commit_links(&oid)
                .await
                .map(|(_, parents)| parents)
                .unwrap_or_default();
            let unsettled: Vec<Oid> = parents
                .iter()
                .filter(|p| !known.contains_key(*p))
                .cloned()
                .collect();
            stack.push((oid, Some(parents)));
            stack.extend(unsettled.into_iter().map(|p| (p, None)));
        }
        known.get(from) == Some(&true)
    }
}

pub(super) fn sort_listed(items: &mut [Listed], keys: &[&str]) -> Result<(), Out> {
    for key in keys {
        check_sort_key(key)?;
    }
    items.sort_by(|a, b| {
        for key in keys.iter().rev() {
            let (reverse, key) = match key.strip_prefix('-') {
                Some(key) => (true, key),
                None => (false, *key),
            };
            let order = compare(a, b, key);
            let order = if reverse { order.reverse() } else { order };
            if order != Ordering::Equal {
                return order;
            }
        }
        a.name.cmp(&b.name)
    });
    Ok(())
}

fn check_sort_key(key: &str) -> Result<(), Out> {
    match key.trim_start_matches('-') {
        "refname" | "version:refname" | "v:refname" | "objectname" | "objecttype"
        | "creatordate" | "committerdate" | "authordate" | "taggerdate" => Ok(()),
        _ => Err(Out::fatal(format!(
            "not supported by the sandbox's git: --sort={key}"
        ))),
    }
}

fn compare(a: &Listed, b: &Listed, key: &str) -> Ordering {
    match key {
        "refname" => a.name.cmp(&b.name),
        "version:refname" | "v:refname" => version_order(&a.name, &b.name),
        "objectname" => a.oid.cmp(&b.oid),
        "objecttype" => a.kind.cmp(&b.kind),
        date => date_of(a, date).cmp(&date_of(b, date)),
    }
}

/// A date field of a ref's object; refs without one sort first.
fn date_of(item: &Listed, field: &str) -> i64 {
    let commit = item.commit.as_ref().filter(|_| item.kind == "commit");
    match field {
        "committerdate" => commit.map_or(0, |c| c.committer.time),
        "authordate" => commit.map_or(0, |c| c.author.time),
        "taggerdate" => item.tagger.as_ref().map_or(0, |t| t.time),
        // creatordate: a tag's tagger, else a commit's committer.
        _ => item
            .tagger
            .as_ref()
            .map(|t| t.time)
            .or(commit.map(|c| c.committer.time))
            .unwrap_or(0),
    }
}

/// git's version order: runs of digits compared as numbers.
fn version_order(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let run = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let (ra, rb) = (run(a), run(b));
                let (na, nb) = (&a[..ra], &b[..rb]);
                let trim = |n: &[u8]| {
                    let zeros = n.iter().take_while(|c| **c == b'0').count();
                    n[zeros.min(n.len().saturating_sub(1))..].to_vec()
                };
                let (ta, tb) = (trim(na), trim(nb));
                let order = ta.len().cmp(&tb.len()).then(ta.cmp(&tb));
                if order != Ordering::Equal {
                    return order;
                }
                a = &a[ra..];
                b = &b[rb..];
            }
            (Some(x), Some(y)) if x != y => return x.cmp(y),
            _ => {
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

/// What a `--format` string prints for one ref: the atoms this git has;
/// another is refused.
pub(super) fn format_listed(
    item: &Listed,
    format: &str,
    shown: &Shown,
    head: Option<&str>,
    upstream: Option<&str>,
) -> Result<String, Out> {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("%%") {
            out.push('%');
            rest = after;
            continue;
        }
        if let Some(inner) = rest.strip_prefix("%(") {
            let Some(end) = inner.find(')') else {
                return Err(Out::fatal(format!("malformed format string {format}")));
            };
            out.push_str(&atom(item, &inner[..end], shown, head, upstream)?);
            rest = &inner[end + 1..];
            continue;
        }
        if let Some(byte) = rest.get(1..3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
            out.push(char::from(byte));
            rest = &rest[3..];
            continue;
        }
        out.push('%');
        rest = &rest[1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `%(contents:lines=N)`: the first N lines of the message (a tag
/// object's, else the commit's; a signature left out), the lines after
/// the first indented by four spaces, as git's `append_lines` writes them.
pub(super) fn contents_lines(item: &Listed, n: usize) -> String {
    let message = item.commit.as_ref().map_or("", |c| c.message.as_str());
    let mut rest = message
        .find("-----BEGIN PGP SIGNATURE-----")
        .map_or(message, |at| &message[..at]);
    let mut out = String::new();
    for i in 0..n {
        if rest.is_empty() {
            break;
        }
        if i > 0 {
            out.push_str("\n    ");
        }
        match rest.split_once('\n') {
            Some((line, after)) => {
                out.push_str(line);
                rest = after;
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

fn atom(
    item: &Listed,
    atom: &str,
    shown: &Shown,
    head: Option<&str>,
    upstream: Option<&str>,
) -> Result<String, Out> {
    let unsupported = || {
        Out::fatal(format!(
            "not supported by the sandbox's git: the format atom %({atom})"
        ))
    };
    let (name, modifier) = match atom.split_once(':') {
        Some((name, modifier)) => (name, Some(modifier)),
        None => (atom, None),
    };
    // As git shortens a name: `origin` for `refs/remotes/origin/HEAD`.
    let short_name = |full: &str| {
        if let Some(remote) = full
            .strip_prefix("refs/remotes/")
            .and_then(|r| r.strip_suffix("/HEAD"))
        {
            return remote.to_string();
        }
        ["refs/heads/", "refs/tags/", "refs/remotes/", "refs/"]
            .iter()
            .find_map(|p| full.strip_prefix(p))
            .unwrap_or(full)
            .to_string()
    };
    let strip = |full: &str, n: usize| full.splitn(n + 1, '/').nth(n).unwrap_or("").to_string();
    let signature = |who: Option<&Signature>, field: &str| -> Result<String, Out> {
        let Some(who) = who else {
            return Ok(String::new());
        };
        Ok(match (field, modifier) {
            ("name", None) => who.name.clone(),
            ("email", None) => format!("<{}>", who.email),
            ("date", None) => shown.date.show(who.time, &who.zone, shown.now),
            ("date", Some(mode)) => DateMode::named(mode)
                .ok_or_else(unsupported)?
                .show(who.time, &who.zone, shown.now),
            _ => return Err(unsupported()),
        })
    };
    let commit = item.commit.as_ref().filter(|_| item.kind == "commit");
    let message = item
        .commit
        .as_ref()
        .map(|c| c.message.as_str())
        .unwrap_or("");
    Ok(match (name, modifier) {
        ("refname", None) => item.name.clone(),
        ("refname", Some("short")) => short_name(&item.name),
        ("refname", Some(m)) if m.starts_with("strip=") || m.starts_with("lstrip=") => {
            let n = m
                .split('=')
                .nth(1)
                .and_then(|n| n.parse().ok())
                .ok_or_else(unsupported)?;
            strip(&item.name, n)
        }
        ("objectname", None) => item.oid.clone(),
        ("objectname", Some("short")) => shown.abbrev.of(&item.oid, None),
        ("objecttype", None) => item.kind.clone(),
        ("*objectname", None) => item.peeled.clone().unwrap_or_default(),
        ("*objecttype", None) => match &item.peeled {
            Some(_) => "commit".to_string(),
            None => String::new(),
        },
        ("subject" | "contents:subject", None) | ("contents", Some("subject")) => {
            message.lines().next().unwrap_or("").to_string()
        }
        ("contents", Some(lines)) if lines.starts_with("lines=") => {
            let n = lines["lines=".len()..].parse().map_err(|_| unsupported())?;
            contents_lines(item, n)
        }
        ("HEAD", None) => match head == Some(item.name.as_str()) {
            true => "*".to_string(),
            false => " ".to_string(),
        },
        ("upstream", None) => upstream
            .map(|u| format!("refs/remotes/{u}"))
            .unwrap_or_default(),
        ("upstream", Some("short")) => upstream.unwrap_or("").to_string(),
        ("authorname", _) => signature(commit.map(|c| &c.author), "name")?,
        ("authoremail", _) => signature(commit.map(|c| &c.author), "email")?,
        ("authordate", _) => signature(commit.map(|c| &c.author), "date")?,
        ("committername", _) => signature(commit.map(|c| &c.committer), "name")?,
        ("committeremail", _) => signature(commit.map(|c| &c.committer), "email")?,
        ("committerdate", _) => signature(commit.map(|c| &c.committer), "date")?,
        ("taggername", _) => signature(item.tagger.as_ref(), "name")?,
        ("taggeremail", _) => signature(item.tagger.as_ref(), "email")?,
        ("taggerdate", _) => signature(item.tagger.as_ref(), "date")?,
        ("creatordate", _) => signature(
            item.tagger.as_ref().or(commit.map(|c| &c.committer)),
            "date",
        )?,
        _ => return Err(unsupported()),
    })
}

impl Ctx<'_> {
    /// `for-each-ref [--format=F] [--sort=K]… [--count=N] [PATTERN…]`.
    pub(super) async fn for_each_ref(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "for-each-ref",
                flags: &[],
                valued: &[&["--format"], &["--sort"], &["--count"]],
            },
        )?;
        let patterns = &args.operands;
        let refs: Vec<String> = self
            .repo
            .all_refs()
            .await
            .into_iter()
            .filter(|name| {
                patterns.is_empty()
                    || patterns.iter().any(|p| {
                        let p = p.trim_end_matches('/');
                        name == p
                            || name.starts_with(&format!("{p}/"))
                            || (p.contains(['*', '?', '[']) && text::glob(p, name))
                    })
            })
            .collect();
        let keys: Vec<&str> = args
            .value("--sort")
            .map_or(Vec::new(), |k| k.split('\n').collect());
        let format = args
            .value("--format")
            .unwrap_or("%(objectname) %(objecttype)\t%(refname)");
        let mut items = self.listed(refs, format, &keys).await?;
        sort_listed(&mut items, &keys)?;
        if let Some(count) = args.value("--count") {
            let count: usize = count
                .parse()
                .map_err(|_| Out::fatal(format!("invalid --count argument: `{count}'")))?;
            items.truncate(count);
        }
        let shown = Shown::of(&self.repo, &args).await?;
        let head = match self.repo.head().await {
            Head::Branch(branch) => Some(format!("refs/heads/{branch}")),
            Head::Detached(_) => None,
        };
        let mut out = String::new();
        for item in &items {
            let upstream = match item.name.strip_prefix("refs/heads/") {
                Some(branch) => self.repo.upstream(branch).await.map(|(u, _)| u),
                None => None,
            };
            let line = format_listed(item, format, &shown, head.as_deref(), upstream.as_deref())?;
            let _ = writeln!(out, "{line}");
        }
        Ok(Out::ok(out))
    }

    /// `show-ref [--head] [--heads|--branches] [--tags] [-d] [-s] [--verify] [-q] [PATTERN…]`.
    pub(super) async fn show_ref(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "show-ref",
                flags: &[
                    "--head",
                    "--heads",
                    "--branches",
                    "--tags",
                    "-d",
                    "--dereference",
                    "-s",
                    "--hash",
                    "--verify",
                    "-q",
                    "--quiet",
                ],
                valued: &[],
            },
        )?;
        let repo = &self.repo;
        let hash_only = args.has(&["-s", "--hash"]);
        let quiet = args.has(&["-q", "--quiet"]);
        let line = |oid: &str, name: &str| match hash_only {
            true => format!("{oid}\n"),
            false => format!("{oid} {name}\n"),
        };
        let mut out = String::new();
        if args.has(&["--verify"]) {
            if args.operands.is_empty() {
                return Err(Out::fatal("--verify requires a reference"));
            }
            for name in &args.operands {
                let oid = match (name.starts_with("refs/") || *name == "HEAD").then_some(()) {
                    Some(()) => repo.read_ref(name).await,
                    None => None,
                };
                let Some(oid) = oid else {
                    return Err(match quiet {
                        true => Out::error("", 1),
                        false => Out::fatal(format!("'{name}' - not a valid ref")),
                    });
                };
                if !quiet {
                    out.push_str(&line(&oid, name));
                }
            }
            return Ok(Out::ok(out));
        }
        let heads = args.has(&["--heads", "--branches"]);
        let tags = args.has(&["--tags"]);
        let mut names = Vec::new();
        if args.has(&["--head"]) {
            names.push("HEAD".to_string());
        }
        names.extend(repo.all_refs().await.into_iter().filter(|name| {
            (!heads && !tags)
                || (heads && name.starts_with("refs/heads/"))
                || (tags && name.starts_with("refs/tags/"))
        }));
        // A pattern matches whole trailing components of the name.
        let matches = |name: &str| {
            args.operands.is_empty()
                || args
                    .operands
                    .iter()
                    .any(|p| name == *p || name.ends_with(&format!("/{p}")))
        };
        let mut found = false;
        for name in names.iter().filter(|n| matches(n)) {
            let Some(oid) = repo.read_ref(name).await else {
                continue;
            };
            found = true;
            if quiet {
                continue;
            }
            out.push_str(&line(&oid, name));
            if args.has(&["-d", "--dereference"]) {
                let (kind, _) = repo.read_object(&oid).await.map_err(failed)?;
                if kind == "tag" {
                    let peeled = repo.peel(&oid).await.map_err(failed)?;
                    out.push_str(&line(&peeled, &format!("{name}^{{}}")));
                }
            }
        }
        match found {
            true => Ok(Out::ok(out)),
            false => Err(Out::error("", 1)),
        }
    }

    /// `rev-list`: the walk `log` makes, one commit name per line, or
    /// `--count` of them.
    pub(super) async fn rev_list(&self, args: &[String]) -> Run {
        let args = Args::parse(args, &REV_LIST)?;
        let count = |key: &str| -> Result<Option<usize>, Out> {
            args.value(key)
                .map(|n| {
                    n.parse()
                        .map_err(|_| Out::fatal(format!("'{n}': not an integer")))
                })
                .transpose()
        };
        let (limit, skip) = (count("-n")?, count("--skip")?.unwrap_or(0));
        if args.operands.is_empty() && !args.has(&["--all", "--branches", "--tags", "--remotes"]) {
            return Err(Out::error(
                "usage: git rev-list [<options>] <commit>... [--] [<path>...]\n",
                129,
            ));
        }
        let mut walk = self.walk_of(&args).await?;
        let filter = super::log::Filter::of(&args)?;
        // `--oneline`: each name abbreviated and the commit's subject.
        let oneline = args.has(&["--oneline"]);
        walk.names_only = filter.is_none() && !oneline;
        let wanted = limit.map(|n| n + skip);
        let steps = Self::walk_until(&self.repo, &walk, filter.as_ref(), wanted).await?;
        let mut steps: Vec<_> = steps
            .into_iter()
            .filter(|s| filter.as_ref().is_none_or(|f| f.passes(&s.commit)))
            .skip(skip)
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        if args.has(&["--count"]) {
            return Ok(Out::ok(format!("{}\n", steps.len())));
        }
        if args.has(&["--reverse"]) {
            steps.reverse();
        }
        let abbrev = self.abbrev(&args).await?;
        let abbreviated = matches!(
            args.last(&["--abbrev-commit", "--no-abbrev-commit", "--oneline"]),
            Some("--abbrev-commit" | "--oneline")
        );
        let mut out = String::new();
        for step in &steps {
            let name = match abbreviated {
                true => abbrev.of(&step.oid, None),
                false => step.oid.clone(),
            };
            let _ = match oneline {
                true => writeln!(out, "{name} {}", step.commit.subject()),
                false => writeln!(out, "{name}"),
            };
        }
        Ok(Out::ok(out))
    }

    /// `ls-tree [-r] [-t] [-d] [-l] [--name-only] [--object-only]
    /// [--full-tree] [--full-name] TREE [PATH…]`.
    pub(super) async fn ls_tree(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "ls-tree",
                flags: &[
                    "-r",
                    "-t",
                    "-d",
                    "-l",
                    "--long",
                    "--name-only",
                    "--name-status",
                    "--object-only",
                    "--full-tree",
                    "--full-name",
                ],
                valued: &[],
            },
        )?;
        let Some((treeish, given_paths)) = args.operands.split_first() else {
            return Err(Out::error(
                "usage: git ls-tree [<options>] <tree-ish> [<path>...]\n",
                129,
            ));
        };
        let repo = &self.repo;
        let object = self.object(treeish).await?;
        let tree = match repo.read_object(&object).await.map_err(failed)?.0.as_str() {
            "tree" => object,
            _ => {
                repo.commit(&object)
                    .await
                    .map_err(|_| Out::fatal("not a tree object"))?
                    .tree
            }
        };
        // Below the top (without `--full-tree`) paths are read from the
        // current directory, which is what is listed when none is given,
        // and names are shown from there (`--full-name`: from the top).
        let prefix = self.pathspec(".");
        let here = !prefix.is_empty() && !args.has(&["--full-tree"]);
        let mut specs: Vec<String> = Vec::new();
        for given in given_paths.iter().chain(&args.paths) {
            if !here {
                specs.push(given.to_string());
                continue;
            }
            // `dir/`, `.` and `..` ask for what the directory holds.
            let opened = given.ends_with('/')
                || [".", ".."].contains(&given.rsplit('/').next().unwrap_or(""));
            match (self.pathspec(given), opened) {
                (full, true) if full.is_empty() => {
                    specs.clear();
                    break;
                }
                (full, true) => specs.push(format!("{full}/")),
                (full, false) => specs.push(full),
            }
        }
        if here && given_paths.is_empty() && args.paths.is_empty() {
            specs.push(format!("{prefix}/"));
        }
        let from_here = here && !args.has(&["--full-name"]);
        let recursive = args.has(&["-r"]);
        let trees_only = args.has(&["-d"]);
        let show_trees = args.has(&["-t"]) || trees_only || !recursive;
        let long = args.has(&["-l", "--long"]);
        let mut out = String::new();
        let mut listed = Vec::new();
        // Depth first, in each tree's order: a subtree's entries come
        // right after the subtree's own line, as git lists them.
        let mut stack = vec![(
            repo.tree_entries(&tree).await.map_err(failed)?,
            0,
            String::new(),
        )];
        while let Some((entries, at, prefix)) = stack.last_mut() {
            let Some((name, mode, oid)) = entries.get(*at).cloned() else {
                stack.pop();
                continue;
            };
            *at += 1;
            let path = format!("{prefix}{name}");
            let is_tree = mode == 0o40000;
            // Whether a path asked for is this entry or inside it, leads
            // into it, or asks for what it holds (`dir/`).
            let named = specs.is_empty()
                || specs.iter().any(|s| {
                    let s = s.trim_end_matches('/');
                    s == path || path.starts_with(&format!("{s}/"))
                });
            let leads = is_tree && specs.iter().any(|s| s.starts_with(&format!("{path}/")));
            let opened = specs
                .iter()
                .any(|s| s.ends_with('/') && s.trim_end_matches('/') == path);
            let descend = is_tree && (leads || (recursive && named));
            let shown = match is_tree {
                true => {
                    // `-t`: every tree on the way too, a `dir/` asked for
                    // included.
                    (named && !opened && (show_trees || !descend))
                        || (args.has(&["-t"]) && (leads || opened))
                }
                false => named && !trees_only,
            };
            if shown {
                listed.push((path.clone(), mode, oid.clone()));
            }
            if descend {
                let children = repo.tree_entries(&oid).await.map_err(failed)?;
                stack.push((children, 0, format!("{path}/")));
            }
        }
        for (path, mode, oid) in listed {
            let path = match from_here {
                true => match self.shown_as(&path, false) {
                    shown if shown.is_empty() => "./".to_string(),
                    shown => shown,
                },
                false => self.quoted(&path).into_owned(),
            };
            let kind = match mode {
                0o40000 => "tree",
                0o160000 => "commit",
                _ => "blob",
            };
            if args.has(&["--name-only", "--name-status"]) {
                let _ = writeln!(out, "{path}");
            } else if args.has(&["--object-only"]) {
                let _ = writeln!(out, "{oid}");
            } else if long {
                let size = match kind {
                    "blob" => repo
                        .read_object(&oid)
                        .await
                        .map_err(failed)?
                        .1
                        .len()
                        .to_string(),
                    _ => "-".to_string(),
                };
                let _ = writeln!(out, "{mode:06o} {kind} {oid} {size:>7}\t{path}");
            } else {
                let _ = writeln!(out, "{mode:06o} {kind} {oid}\t{path}");
            }
        }
        Ok(Out::ok(out))
    }
}

impl Ctx<'_> {
    /// `reflog [show] [REF] [-n N]`: where a ref has been, newest first,
    /// as `HEAD@{0}: commit: subject`.
    pub(super) async fn reflog(&self, args: &[String]) -> Run {
        let args = match args.first().map(String::as_str) {
            Some("show") => &args[1..],
            Some(verb @ ("expire" | "delete" | "exists")) => {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: reflog {verb}"
                )))
            }
            _ => args,
        };
        let args = Args::parse(
            args,
            &Spec {
                command: "reflog",
                flags: &["-<n>"],
                valued: &[&["-n", "--max-count"]],
            },
        )?;
        let limit: usize = match args.value("-n") {
            Some(n) => n
                .parse()
                .map_err(|_| Out::fatal(format!("'{n}': not an integer")))?,
            None => usize::MAX,
        };
        let shown = args.operands.first().copied().unwrap_or("HEAD");
        if args.operands.len() > 1 {
            return Err(Out::fatal(
                "not supported by the sandbox's git: reflog of more than one ref",
            ));
        }
        let file = match shown {
            "HEAD" => "HEAD".to_string(),
            name => match self.repo.ref_named(name).await {
                Some((full, _)) => full,
                None => {
                    return Err(Out::fatal(format!(
                        "ambiguous argument '{name}': unknown revision or path not in the working tree."
                    )))
                }
            },
        };
        let log = self
            .repo
            .state_file(&format!("logs/{file}"))
            .await
            .unwrap_or_default();
        let abbrev = self.repo.abbrev().await;
        let mut out = String::new();
        for (n, line) in log.lines().rev().take(limit).enumerate() {
            let Some((head, message)) = line.split_once('\t') else {
                continue;
            };
            let new = head.split(' ').nth(1).unwrap_or_default();
            let _ = writeln!(out, "{} {shown}@{{{n}}}: {message}", abbrev.of(new, None));
        }
        Ok(Out::ok(out))
    }
}

const REV_LIST: Spec = Spec {
    command: "rev-list",
    flags: with_walk_flags!(
        flag_list;
        "--count",
        "--reverse",
        "-<n>",
        "--oneline",
        "--abbrev-commit",
        "--no-abbrev-commit",
        "--abbrev",
        "--abbrev=",
    ),
    valued: with_walk_values![&["-n", "--max-count"], &["--skip"]],
};

#[cfg(test)]
mod tests {
    use super::version_order;
    use std::cmp::Ordering;

    #[test]
    fn versions_order_by_their_numbers() {
        assert_eq!(version_order("v1.10.0", "v1.9.0"), Ordering::Greater);
        assert_eq!(version_order("v1.2", "v1.2.1"), Ordering::Less);
        assert_eq!(version_order("v2.0", "v2.0"), Ordering::Equal);
        assert_eq!(version_order("a", "b"), Ordering::Less);
    }
}
