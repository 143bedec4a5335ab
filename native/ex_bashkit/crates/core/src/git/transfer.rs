//! `clone`, `fetch`, `pull`, `push` and `ls-remote` over smart HTTP
//! (`remote.rs`), with what git writes around them: the pack and its
//! index, `packed-refs`, remote-tracking branches, the upstream config,
//! reflogs, and git's report of what moved.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use super::commands::{Args, Spec};
use super::odb::Oid;
use super::remote::{Advert, Remote};
use super::repo::{Repo, NULL_OID};
use super::{config, resolve, Here, Out, Run};
use crate::network::AllowNet;

fn fatal(message: impl std::fmt::Display) -> Out {
    Out::fatal(message)
}

/// The session's HTTP client for `url`, once `:allow_net` allows it.
fn connect(here: &Here<'_>, url: &str) -> Result<Remote, Out> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(fatal(format!(
            "'{url}': the sandbox's git reaches remotes over http(s) only"
        )));
    }
    let allowed = match &here.git.remotes {
        AllowNet::None => {
            return Err(fatal(format!(
                "remote URL {url} is not allowed: no remote URLs are allowed in this \
                 session (give the session :allow_net for it)"
            )))
        }
        AllowNet::All => true,
        AllowNet::Only(patterns) => patterns.iter().any(|p| url.starts_with(p.as_str())),
    };
    if !allowed {
        return Err(fatal(format!(
            "remote URL {url} is not allowed: it matches no pattern of the session's :allow_net"
        )));
    }
    match &here.http {
        Some(client) => Ok(Remote::new(client.clone(), url)),
        None => Err(fatal(format!(
            "unable to access '{url}': this build of ex_bashkit has no network part"
        ))),
    }
}

/// `branch` set to track the branch of its name on `remote`.
fn track(config_text: &str, branch: &str, remote: &str) -> String {
    let text = config::set(config_text, &format!("branch.{branch}.remote"), remote);
    config::set(
        &text,
        &format!("branch.{branch}.merge"),
        &format!("refs/heads/{branch}"),
    )
}

/// A remote's name or URL as the user gave it → (name, URL).
async fn named_remote(repo: &Repo, given: &str) -> Result<(Option<String>, String), Out> {
    if given.contains("://") {
        return Ok((None, given.to_string()));
    }
    match repo.config_value(&format!("remote.{given}.url")).await {
        Some(url) => Ok((Some(given.to_string()), url)),
        None => Err(Out::error(
            format!(
                "fatal: '{given}' does not appear to be a git repository\n\
                 fatal: Could not read from remote repository.\n\n\
                 Please make sure you have the correct access rights\n\
                 and the repository exists.\n"
            ),
            128,
        )),
    }
}

/// Lines of `git fetch`'s report: `(flag, summary, from, to)`, the
/// names padded to a column as git pads them.
pub fn report(lines: &[(char, String, String, String)]) -> String {
    let width = lines
        .iter()
        .map(|(_, _, from, _)| from.len())
        .max()
        .unwrap_or(0)
        .max(10);
    report_with(lines, width)
}

/// `git push`'s report: the same lines, the names unpadded.
fn push_report(lines: &[(char, String, String, String)]) -> String {
    report_with(lines, 0)
}

fn report_with(lines: &[(char, String, String, String)], width: usize) -> String {
    let mut out = String::new();
    for (flag, summary, from, to) in lines {
        if from.is_empty() {
            let _ = writeln!(out, " {flag} {summary:<17} {to}");
        } else {
            let _ = writeln!(out, " {flag} {summary:<17} {from:<width$} -> {to}");
        }
    }
    out
}

pub async fn clone(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "clone",
            flags: &["-q", "--quiet"],
            valued: &[&["-b", "--branch"], &["-o", "--origin"], &["--depth"]],
        },
    )?;
    if let Some(depth) = args.value("--depth") {
        return Err(fatal(format!(
            "the sandbox's git makes full clones only (--depth {depth} was given)"
        )));
    }
    let quiet = args.has(&["-q", "--quiet"]);
    let given: Vec<&str> = args.operands.iter().chain(&args.paths).copied().collect();
    let Some(url) = given.first().copied() else {
        return Err(Out::error(
            "fatal: You must specify a repository to clone.\n",
            129,
        ));
    };
    let origin = args.value("-o").unwrap_or("origin");
    let name = match given.get(1) {
        Some(dir) => dir.to_string(),
        None => url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("repo")
            .trim_end_matches(".git")
            .to_string(),
    };
    let root = resolve(&here.cwd, &name);
    Repo::outside_git_dirs(&root).map_err(fatal)?;
    let remote = connect(here, url)?;
    if let Ok(entries) = here.fs.read_dir(&root).await {
        if !entries.is_empty() {
            return Err(fatal(format!(
                "destination path '{name}' already exists and is not an empty directory."
            )));
        }
    }
    let advert = remote.discover("git-upload-pack").await.map_err(fatal)?;
    let mut err = String::new();
    if !quiet {
        let _ = writeln!(err, "Cloning into '{name}'...");
    }
    let existed = here.fs.exists(&root).await.unwrap_or(false);
    here.fs
        .mkdir(&root, true)
        .await
        .map_err(|e| fatal(e.to_string()))?;
    let source = Source {
        url,
        origin,
        remote: &remote,
        advert: &advert,
    };
    let cloned = clone_into(here, args.value("-b"), &root, source, err).await;
    // A clone that fails leaves nothing behind, as git's does.
    if cloned.is_err() {
        let _ = match existed {
            true => remove_contents(here, &root).await,
            false => here.fs.remove(&root, true).await,
        };
    }
    cloned
}

/// Empties a directory the clone was asked to fill.
async fn remove_contents(here: &Here<'_>, dir: &std::path::Path) -> bashkit::Result<()> {
    for entry in here.fs.read_dir(dir).await? {
        here.fs.remove(&dir.join(&entry.name), true).await?;
    }
    Ok(())
}

/// What a clone fetches from: the URL, the remote's name for it, and
/// what the server advertised.
struct Source<'a> {
    url: &'a str,
    origin: &'a str,
    remote: &'a Remote,
    advert: &'a Advert,
}

async fn clone_into(
    here: &Here<'_>,
    branch: Option<&str>,
    root: &std::path::Path,
    source: Source<'_>,
    mut err: String,
) -> Run {
    let Source {
        url,
        origin,
        remote,
        advert,
    } = source;
    let (repo, _) = Repo::init(here, root).await.map_err(fatal)?;
    let mut text = repo.config_text().await;
    text = config::add(&text, &format!("remote.{origin}.url"), url);
    text = config::add(
        &text,
        &format!("remote.{origin}.fetch"),
        &format!("+refs/heads/*:refs/remotes/{origin}/*"),
    );
    let heads: Vec<&(String, Oid)> = advert
        .refs
        .iter()
        .filter(|(n, _)| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"))
        .collect();
    if heads.is_empty() {
        repo.save_config_text(&text).await.map_err(fatal)?;
        err.push_str("warning: You appear to have cloned an empty repository.\n");
        return Ok(Out::ok("").with_stderr(err));
    }
    let mut wants: Vec<Oid> = heads.iter().map(|(_, o)| o.clone()).collect();
    wants.sort();
    wants.dedup();
    let pack = remote
        .fetch_pack(advert, &wants, &[])
        .await
        .map_err(fatal)?;
    repo.add_pack(&pack).await.map_err(fatal)?;
    // The branch to check out: -b, else the one the server's HEAD names.
    let branch = match branch {
        Some(b) => b.to_string(),
        None => advert
            .head_branch()
            .and_then(|r| r.strip_prefix("refs/heads/"))
            .map(str::to_string)
            .or_else(|| {
                advert
                    .refs
                    .iter()
                    .find_map(|(n, _)| n.strip_prefix("refs/heads/").map(str::to_string))
            })
            .unwrap_or_else(|| "master".to_string()),
    };
    let Some(head) = advert.get(&format!("refs/heads/{branch}")).cloned() else {
        return Err(fatal(format!(
            "Remote branch {branch} not found in upstream {origin}"
        )));
    };
    let mut packed = Vec::new();
    for (name, oid) in &advert.refs {
        if let Some(b) = name.strip_prefix("refs/heads/") {
            packed.push((format!("refs/remotes/{origin}/{b}"), oid.clone()));
        } else if name.starts_with("refs/tags/") {
            packed.push((name.clone(), oid.clone()));
        }
    }
    repo.write_packed_refs(packed).await.map_err(fatal)?;
    repo.write_symref(
        &format!("refs/remotes/{origin}/HEAD"),
        &format!("refs/remotes/{origin}/{branch}"),
    )
    .await
    .map_err(fatal)?;
    text = track(&text, &branch, origin);
    repo.save_config_text(&text).await.map_err(fatal)?;
    repo.set_ref("heads", &branch, &head).await.map_err(fatal)?;
    repo.set_head_branch(&branch).await.map_err(fatal)?;
    let message = format!("clone: from {url}");
    for name in ["HEAD".to_string(), format!("refs/heads/{branch}")] {
        repo.log_update(&name, None, &head, &message)
            .await
            .map_err(fatal)?;
    }
    let files = repo.commit_files(Some(&head)).await.map_err(fatal)?;
    let mut index = BTreeMap::new();
    for (path, blob) in &files {
        if blob.mode == 0o160000 {
            continue;
        }
        let entry = repo.checkout_file(path, blob).await.map_err(fatal)?;
        index.insert(path.clone(), entry);
    }
    repo.save_index(&index).await.map_err(fatal)?;
    Ok(Out::ok("").with_stderr(err))
}

/// What a fetch brought: the report's lines, and the remote's refs.
pub struct Fetched {
    pub lines: Vec<(char, String, String, String)>,
    pub url: String,
}

pub async fn fetch_into(
    here: &Here<'_>,
    repo: &Repo,
    given: &str,
    prune: bool,
) -> Result<Fetched, Out> {
    let (name, url) = named_remote(repo, given).await?;
    let remote = connect(here, &url)?;
    let advert = remote.discover("git-upload-pack").await.map_err(fatal)?;
    let tracking = |branch: &str| name.as_ref().map(|n| format!("refs/remotes/{n}/{branch}"));
    let mut wants = Vec::new();
    for (ref_name, oid) in &advert.refs {
        let wanted = ref_name.starts_with("refs/heads/") || ref_name.starts_with("refs/tags/");
        if wanted && !repo.has_object(oid).await {
            wants.push(oid.clone());
        }
    }
    wants.sort();
    wants.dedup();
    if !wants.is_empty() {
        let mut haves = Vec::new();
        for kind in ["heads", "remotes", "tags"] {
            for name in repo.refs(kind).await {
                if let Some(oid) = repo.read_ref(&format!("refs/{kind}/{name}")).await {
                    haves.push(oid);
                }
            }
        }
        haves.sort();
        haves.dedup();
        let pack = remote
            .fetch_pack(&advert, &wants, &haves)
            .await
            .map_err(fatal)?;
        repo.add_pack(&pack).await.map_err(fatal)?;
    }
    let mut lines = Vec::new();
    let mut seen = HashSet::new();
    for (ref_name, oid) in &advert.refs {
        if let Some(branch) = ref_name.strip_prefix("refs/heads/") {
            let Some(local) = tracking(branch) else {
                continue;
            };
            seen.insert(local.clone());
            let shown = local.trim_start_matches("refs/remotes/").to_string();
            let old = repo.read_ref(&local).await;
            let line = match &old {
                None => ('*', "[new branch]".to_string()),
                Some(old) if old == oid => continue,
                Some(old) if repo.ancestors(oid).await.contains(old) => (
                    ' ',
                    format!("{}..{}", repo.short(old).await, repo.short(oid).await),
                ),
                Some(old) => (
                    '+',
                    format!("{}...{}", repo.short(old).await, repo.short(oid).await),
                ),
            };
            let (kind, rest) = local
                .strip_prefix("refs/")
                .and_then(|r| r.split_once('/'))
                .unwrap_or(("remotes", &shown));
            repo.set_ref(kind, rest, oid).await.map_err(fatal)?;
            repo.log_update(
                &local,
                old.as_deref(),
                oid,
                &format!("fetch {given}: fast-forward"),
            )
            .await
            .map_err(fatal)?;
            let summary = if line.0 == '+' {
                format!("{} (forced update)", line.1)
            } else {
                line.1
            };
            lines.push((line.0, summary, branch.to_string(), shown));
        } else if let Some(tag) = ref_name.strip_prefix("refs/tags/") {
            if repo.tag(tag).await.is_none() {
                repo.set_ref("tags", tag, oid).await.map_err(fatal)?;
                lines.push((
                    '*',
                    "[new tag]".to_string(),
                    tag.to_string(),
                    tag.to_string(),
                ));
            }
        }
    }
    if let (true, Some(name)) = (prune, &name) {
        for branch in repo.refs(&format!("remotes/{name}")).await {
            let local = format!("refs/remotes/{name}/{branch}");
            if branch != "HEAD" && !seen.contains(&local) {
                repo.delete_ref(&format!("remotes/{name}"), &branch)
                    .await
                    .map_err(fatal)?;
                lines.push((
                    '-',
                    "[deleted]".to_string(),
                    "(none)".to_string(),
                    format!("{name}/{branch}"),
                ));
            }
        }
    }
    Ok(Fetched { lines, url })
}

async fn upstream_remote(repo: &Repo) -> String {
    if let super::repo::Head::Branch(branch) = repo.head().await {
        if let Some(remote) = repo.config_value(&format!("branch.{branch}.remote")).await {
            return remote;
        }
    }
    "origin".to_string()
}

pub async fn fetch(here: &Here<'_>, repo: &Repo, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "fetch",
            flags: &["-q", "--quiet", "-p", "--prune"],
            valued: &[],
        },
    )?;
    let given = match args.operands.first() {
        Some(given) => given.to_string(),
        None => upstream_remote(repo).await,
    };
    let fetched = fetch_into(here, repo, &given, args.has(&["-p", "--prune"])).await?;
    let mut err = String::new();
    if !fetched.lines.is_empty() && !args.has(&["-q", "--quiet"]) {
        let _ = writeln!(err, "From {}", fetched.url);
        err.push_str(&report(&fetched.lines));
    }
    Ok(Out::ok("").with_stderr(err))
}

pub async fn ls_remote(here: &Here<'_>, repo: Option<&Repo>, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "ls-remote",
            flags: &["--heads", "-h", "--branches", "-b", "--tags", "-t"],
            valued: &[],
        },
    )?;
    if let Some(pattern) = args.operands.get(1) {
        return Err(fatal(format!(
            "not supported by the sandbox's git: ls-remote with patterns ({pattern})"
        )));
    }
    let given = args
        .operands
        .first()
        .map_or_else(|| "origin".to_string(), |r| r.to_string());
    let url = match repo {
        Some(repo) => named_remote(repo, &given).await?.1,
        None if given.contains("://") => given,
        None => {
            return Err(fatal(
                "not a git repository (or any of the parent directories): .git",
            ))
        }
    };
    let remote = connect(here, &url)?;
    let advert = remote.discover("git-upload-pack").await.map_err(fatal)?;
    let heads_only = args.has(&["--heads", "-h", "--branches", "-b"]);
    let tags_only = args.has(&["--tags", "-t"]);
    let mut out = String::new();
    for (name, oid) in &advert.refs {
        let keep = match (heads_only, tags_only) {
            (true, _) => name.starts_with("refs/heads/"),
            (_, true) => name.starts_with("refs/tags/"),
            _ => true,
        };
        if keep {
            let _ = writeln!(out, "{oid}\t{name}");
        }
    }
    Ok(Out::ok(out))
}

/// The commits and their trees and blobs that `tips` reach and the
/// remote, which has `theirs`, lacks.
async fn objects_to_send(
    repo: &Repo,
    tips: &[Oid],
    theirs: &[Oid],
) -> Result<Vec<(String, Arc<Vec<u8>>)>, String> {
    let mut known = HashSet::new();
    for oid in theirs {
        if repo.has_object(oid).await {
            known.extend(repo.ancestors(oid).await);
        }
    }
    let mut commits = Vec::new();
    let mut boundary = HashSet::new();
    let mut seen = HashSet::new();
    let mut pending: Vec<Oid> = tips.to_vec();
    let mut tags = Vec::new();
    while let Some(oid) = pending.pop() {
        if !seen.insert(oid.clone()) {
            continue;
        }
        let (kind, body) = repo.read_object(&oid).await?;
        if kind == "tag" {
            let target = repo.peel(&oid).await?;
            tags.push((oid.clone(), body));
            pending.push(target);
            continue;
        }
        if known.contains(&oid) {
            boundary.insert(oid);
            continue;
        }
        let commit = repo.commit(&oid).await?;
        pending.extend(commit.parents.iter().cloned());
        commits.push((oid, body, commit.tree));
    }
    // What the remote's commits at the boundary hold is theirs already.
    let mut excluded = HashSet::new();
    for oid in &boundary {
        let tree = repo.commit(oid).await?.tree;
        collect_tree(repo, &tree, &mut excluded, None).await?;
    }
    let mut objects: Vec<(String, Arc<Vec<u8>>)> = Vec::new();
    let mut added = HashSet::new();
    for (_, body, tree) in &commits {
        objects.push(("commit".to_string(), Arc::new(body.clone())));
        collect_tree(repo, tree, &mut added, Some((&excluded, &mut objects))).await?;
    }
    for (_, body) in tags {
        objects.push(("tag".to_string(), Arc::new(body)));
    }
    Ok(objects)
}

type Sink<'a> = Option<(&'a HashSet<Oid>, &'a mut Vec<(String, Arc<Vec<u8>>)>)>;

/// Walks a tree, recording every tree and blob in `seen`; with a sink,
/// also reading those not excluded into it.
async fn collect_tree(
    repo: &Repo,
    tree: &str,
    seen: &mut HashSet<Oid>,
    mut sink: Sink<'_>,
) -> Result<(), String> {
    let mut pending = vec![tree.to_string()];
    while let Some(oid) = pending.pop() {
        if let Some((excluded, _)) = &sink {
            if excluded.contains(&oid) {
                continue;
            }
        }
        if !seen.insert(oid.clone()) {
            continue;
        }
        if let Some((_, objects)) = sink.as_mut() {
            let (kind, body) = repo.read_object(&oid).await?;
            objects.push((kind, Arc::new(body)));
        }
        for (_, mode, child) in repo.tree_entries(&oid).await? {
            match mode {
                0o40000 => pending.push(child),
                0o160000 => {}
                _ => {
                    let skip = sink
                        .as_ref()
                        .is_some_and(|(excluded, _)| excluded.contains(&child));
                    if !skip && seen.insert(child.clone()) {
                        if let Some((_, objects)) = sink.as_mut() {
                            let (kind, body) = repo.read_object(&child).await?;
                            objects.push((kind, Arc::new(body)));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

pub async fn push(here: &Here<'_>, repo: &Repo, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "push",
            flags: &[
                "-f",
                "--force",
                "-u",
                "--set-upstream",
                "-q",
                "--quiet",
                "--tags",
            ],
            valued: &[],
        },
    )?;
    let force = args.has(&["-f", "--force"]);
    let set_upstream = args.has(&["-u", "--set-upstream"]);
    let quiet = args.has(&["-q", "--quiet"]);
    let given: Vec<String> = args.operands.iter().map(|s| s.to_string()).collect();
    let current = match repo.head().await {
        super::repo::Head::Branch(b) => Some(b),
        super::repo::Head::Detached(_) => None,
    };
    let remote_name = match given.first() {
        Some(r) => r.clone(),
        None => upstream_remote(repo).await,
    };
    // (local ref, remote ref)
    let mut specs: Vec<(String, String)> = Vec::new();
    for spec in given.iter().skip(1) {
        let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
        let full = |name: &str| -> String {
            if name.starts_with("refs/") {
                name.to_string()
            } else {
                format!("refs/heads/{name}")
            }
        };
        let src_ref = if src.is_empty() {
            String::new()
        } else if repo.tag(src).await.is_some() && repo.branch(src).await.is_none() {
            format!("refs/tags/{src}")
        } else {
            full(src)
        };
        let dst_ref = if src_ref.starts_with("refs/tags/") && !dst.starts_with("refs/") {
            format!("refs/tags/{dst}")
        } else {
            full(dst)
        };
        specs.push((src_ref, dst_ref));
    }
    if args.has(&["--tags"]) {
        for tag in repo.refs("tags").await {
            specs.push((format!("refs/tags/{tag}"), format!("refs/tags/{tag}")));
        }
    }
    if specs.is_empty() {
        let Some(branch) = current.clone() else {
            return Err(fatal(
                "You are not currently on a branch.\nTo push the history leading to the current (detached HEAD)\nstate now, use\n\n    git push origin HEAD:<name-of-remote-branch>\n",
            ));
        };
        let merge = repo.config_value(&format!("branch.{branch}.merge")).await;
        match merge {
            Some(merge) => specs.push((format!("refs/heads/{branch}"), merge)),
            None if given.is_empty() || set_upstream => {
                if !set_upstream {
                    return Err(fatal(format!(
                        "The current branch {branch} has no upstream branch.\n\
                         To push the current branch and set the remote as upstream, use\n\n    \
                         git push --set-upstream {remote_name} {branch}\n\n\
                         To have this happen automatically for branches without a tracking\n\
                         upstream, see 'push.autoSetupRemote' in 'git help config'.\n"
                    )));
                }
                specs.push((
                    format!("refs/heads/{branch}"),
                    format!("refs/heads/{branch}"),
                ));
            }
            None => specs.push((
                format!("refs/heads/{branch}"),
                format!("refs/heads/{branch}"),
            )),
        }
    }
    let (name, url) = named_remote(repo, &remote_name).await?;
    let remote = connect(here, &url)?;
    let advert = remote.discover("git-receive-pack").await.map_err(fatal)?;
    let mut updates = Vec::new();
    let mut lines = Vec::new();
    let mut rejected = Vec::new();
    let mut tips = Vec::new();
    let shown = |r: &str| {
        r.strip_prefix("refs/heads/")
            .or_else(|| r.strip_prefix("refs/tags/"))
            .unwrap_or(r)
            .to_string()
    };
    for (src, dst) in &specs {
        let old = advert
            .get(dst)
            .cloned()
            .unwrap_or_else(|| NULL_OID.to_string());
        if src.is_empty() {
            if old != NULL_OID {
                updates.push((old, NULL_OID.to_string(), dst.clone()));
                lines.push(('-', "[deleted]".to_string(), String::new(), shown(dst)));
            }
            continue;
        }
        let Some(new) = repo.read_ref(src).await else {
            return Err(Out::error(
                format!(
                    "error: src refspec {} does not match any\nerror: failed to push some refs to '{url}'\n",
                    shown(src)
                ),
                1,
            ));
        };
        if old == new {
            lines.push(('=', "[up to date]".to_string(), shown(src), shown(dst)));
            continue;
        }
        let fast_forward = old == NULL_OID
            || (repo.has_object(&old).await
                && repo
                    .ancestors(&repo.peel(&new).await.map_err(fatal)?)
                    .await
                    .contains(&old));
        if !fast_forward && !force {
            let why = if repo.has_object(&old).await {
                "non-fast-forward"
            } else {
                "fetch first"
            };
            rejected.push(why);
            lines.push((
                '!',
                "[rejected]".to_string(),
                shown(src),
                format!("{} ({why})", shown(dst)),
            ));
            continue;
        }
        let summary = match (old == NULL_OID, fast_forward) {
            (true, _) if dst.starts_with("refs/tags/") => ('*', "[new tag]".to_string()),
            (true, _) => ('*', "[new branch]".to_string()),
            (false, true) => (
                ' ',
                format!("{}..{}", repo.short(&old).await, repo.short(&new).await),
            ),
            (false, false) => (
                '+',
                format!(
                    "{}...{} (forced update)",
                    repo.short(&old).await,
                    repo.short(&new).await
                ),
            ),
        };
        lines.push((summary.0, summary.1, shown(src), shown(dst)));
        tips.push(new.clone());
        updates.push((old, new, dst.clone()));
    }
    let mut err = String::new();
    if !quiet || !rejected.is_empty() {
        let _ = writeln!(err, "To {url}");
    }
    if updates.is_empty() {
        if rejected.is_empty() {
            return Ok(Out::ok("").with_stderr("Everything up-to-date\n"));
        }
    } else {
        let theirs: Vec<Oid> = advert.refs.iter().map(|(_, o)| o.clone()).collect();
        let objects = objects_to_send(repo, &tips, &theirs).await.map_err(fatal)?;
        let pack = (!tips.is_empty()).then(|| super::pack::build(&objects));
        let outcomes = remote.push(&advert, &updates, pack).await.map_err(fatal)?;
        for (dst, outcome) in &outcomes {
            if let Err(why) = outcome {
                rejected.push("remote rejected");
                if let Some(line) = lines.iter_mut().find(|l| l.3 == shown(dst)) {
                    *line = (
                        '!',
                        "[remote rejected]".to_string(),
                        line.2.clone(),
                        format!("{} ({why})", line.3),
                    );
                }
            }
        }
        // Remote-tracking refs follow what the remote took.
        if let Some(name) = &name {
            for (_, new, dst) in &updates {
                let accepted = outcomes.iter().any(|(d, o)| d == dst && o.is_ok());
                if let (true, Some(branch)) = (accepted, dst.strip_prefix("refs/heads/")) {
                    if new == NULL_OID {
                        repo.delete_ref(&format!("remotes/{name}"), branch)
                            .await
                            .map_err(fatal)?;
                    } else {
                        repo.set_ref(&format!("remotes/{name}"), branch, new)
                            .await
                            .map_err(fatal)?;
                    }
                }
            }
        }
    }
    if !quiet || !rejected.is_empty() {
        err.push_str(&push_report(&lines));
    }
    if set_upstream && rejected.is_empty() {
        if let (Some(name), Some(branch)) = (&name, &current) {
            let text = track(&repo.config_text().await, branch, name);
            repo.save_config_text(&text).await.map_err(fatal)?;
            let _ = writeln!(err, "branch '{branch}' set up to track '{name}/{branch}'.");
        }
    }
    if rejected.is_empty() {
        return Ok(Out::ok("").with_stderr(err));
    }
    let _ = writeln!(err, "error: failed to push some refs to '{url}'");
    if rejected.contains(&"fetch first") {
        err.push_str(
            "hint: Updates were rejected because the remote contains work that you do not\n\
             hint: have locally. This is usually caused by another repository pushing to\n\
             hint: the same ref. If you want to integrate the remote changes, use\n\
             hint: 'git pull' before pushing again.\n\
             hint: See the 'Note about fast-forwards' in 'git push --help' for details.\n",
        );
    } else if rejected.contains(&"non-fast-forward") {
        err.push_str(
            "hint: Updates were rejected because the tip of your current branch is behind\n\
             hint: its remote counterpart. If you want to integrate the remote changes,\n\
             hint: use 'git pull' before pushing again.\n\
             hint: See the 'Note about fast-forwards' in 'git push --help' for details.\n",
        );
    }
    Err(Out::error(err, 1))
}
