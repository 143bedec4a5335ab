//! `clone`, `fetch`, `pull`, `push` and `ls-remote` over smart HTTP
//! (`remote.rs`), with what git writes around them: the pack and its
//! index, `packed-refs`, remote-tracking branches, the upstream config,
//! reflogs, and git's report of what moved.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use super::commands::{Args, Spec};
use super::error::Error;
use super::odb::Oid;
use super::remote::{Advert, Remote, Want};
use super::repo::{Repo, NULL_OID};
use super::{config, resolve, Here, Out, Run};

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
    crate::check_allowed(here.git, url)?;
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

/// git's words for a remote that names no repository.
fn not_a_repository(given: &str) -> Out {
    Out::error(
        format!(
            "fatal: '{given}' does not appear to be a git repository\n\
             fatal: Could not read from remote repository.\n\n\
             Please make sure you have the correct access rights\n\
             and the repository exists.\n"
        ),
        128,
    )
}

/// A remote's name or URL as the user gave it → (name, URL).
async fn named_remote(repo: &Repo, given: &str) -> Result<(Option<String>, String), Out> {
    if given.contains("://") {
        return Ok((None, given.to_string()));
    }
    match repo.config_value(&format!("remote.{given}.url")).await {
        Some(url) => Ok((Some(given.to_string()), url)),
        None if super::is_path_remote(given) => Err(super::path_remote_refused(given)),
        None => Err(not_a_repository(given)),
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

/// Which tags a clone or fetch brings: by default those that point into
/// what it fetched (git's tag following), `--no-tags` none, `--tags` all.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    Follow,
    None,
    All,
}

/// `--depth N`: a positive number, as git requires.
fn depth(args: &Args<'_>) -> Result<Option<u32>, Out> {
    let Some(text) = args.value("--depth") else {
        return Ok(None);
    };
    match text.parse::<u32>() {
        Ok(n) if n > 0 && n < UNSHALLOW => Ok(Some(n)),
        _ => Err(fatal(format!("depth {text} is not a positive number"))),
    }
}

/// The depth git asks for to undo a shallow clone.
const UNSHALLOW: u32 = i32::MAX as u32;

pub async fn clone(here: &Here<'_>, args: &[String]) -> Run {
    let args = Args::parse(
        args,
        &Spec {
            command: "clone",
            flags: &[
                "-q",
                "--quiet",
                "--single-branch",
                "--no-single-branch",
                "--no-tags",
            ],
            valued: &[&["-b", "--branch"], &["-o", "--origin"], &["--depth"]],
        },
    )?;
    let depth = depth(&args)?;
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
    if super::is_path_remote(url) {
        return Err(super::path_remote_refused(url));
    }
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
    // --depth implies --single-branch unless --no-single-branch comes after.
    let single = match args.last(&["--single-branch", "--no-single-branch"]) {
        Some(flag) => flag == "--single-branch",
        None => depth.is_some(),
    };
    let source = Source {
        url,
        origin,
        remote: &remote,
        advert: &advert,
    };
    let asked = Asked {
        branch: args.value("-b"),
        single,
        depth,
        tags: if args.has(&["--no-tags"]) {
            Tags::None
        } else {
            Tags::Follow
        },
    };
    let cloned = clone_into(here, asked, &root, source, err.clone())
        .await
        .map_err(|failed| Out {
            stderr: err + &failed.stderr,
            ..failed
        });
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

/// What a clone was asked for: `-b`, `--single-branch`, `--depth`,
/// `--no-tags`.
struct Asked<'a> {
    branch: Option<&'a str>,
    single: bool,
    depth: Option<u32>,
    tags: Tags,
}

const DETACHED_ADVICE: &str =
    "\nYou are in 'detached HEAD' state. You can look around, make experimental\n\
changes and commit them, and you can discard any commits you make in this\n\
state without impacting any branches by switching back to a branch.\n\n\
If you want to create a new branch to retain commits you create, you may\n\
do so (now or later) by using -c with the switch command. Example:\n\n  \
git switch -c <new-branch-name>\n\n\
Or undo this operation with:\n\n  \
git switch -\n\n\
Turn off this advice by setting config variable advice.detachedHead to false\n\n";

async fn clone_into(
    here: &Here<'_>,
    asked: Asked<'_>,
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
    if asked.tags == Tags::None {
        text = config::add(&text, &format!("remote.{origin}.tagOpt"), "--no-tags");
    }
    let empty = !advert
        .refs
        .iter()
        .any(|(n, _)| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"));
    if empty {
        text = config::add(
            &text,
            &format!("remote.{origin}.fetch"),
            &format!("+refs/heads/*:refs/remotes/{origin}/*"),
        );
        if let Some(b) = asked.branch {
            return Err(fatal(format!(
                "Remote branch {b} not found in upstream {origin}"
            )));
        }
        // A server that speaks protocol v2 says what its unborn HEAD
        // names; the clone's HEAD names the same and tracks it.
        // Else git names it as `init` would, advising even when quiet.
        let (branch, advice) = match advert
            .head_branch()
            .and_then(|r| r.strip_prefix("refs/heads/"))
        {
            Some(branch) => (branch.to_string(), None),
            None => Repo::initial_branch(here),
        };
        text = track(&text, &branch, origin);
        repo.set_head_branch(&branch).await.map_err(fatal)?;
        repo.save_config_text(&text).await.map_err(fatal)?;
        err.push_str("warning: You appear to have cloned an empty repository.\n");
        err.push_str(advice.unwrap_or_default());
        return Ok(Out::ok("").with_stderr(err));
    }
    // What to check out: -b (a branch, else a tag), or the server's HEAD.
    let remote_head = advert
        .head_branch()
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .map(str::to_string)
        .or_else(|| {
            advert
                .refs
                .iter()
                .find_map(|(n, _)| n.strip_prefix("refs/heads/").map(str::to_string))
        });
    let checkout = match asked.branch {
        Some(b) if advert.get(&format!("refs/heads/{b}")).is_some() => format!("refs/heads/{b}"),
        Some(b) if advert.get(&format!("refs/tags/{b}")).is_some() => format!("refs/tags/{b}"),
        Some(b) => {
            return Err(fatal(format!(
                "Remote branch {b} not found in upstream {origin}"
            )))
        }
        None => format!(
            "refs/heads/{}",
            remote_head.clone().unwrap_or_else(|| "master".into())
        ),
    };
    let Some(head) = advert.peeled(&checkout).cloned() else {
        return Err(fatal(format!(
            "Remote branch {} not found in upstream {origin}",
            checkout.rsplit('/').next().unwrap_or_default()
        )));
    };
    let refspec = match (asked.single, checkout.strip_prefix("refs/heads/")) {
        (false, _) => format!("+refs/heads/*:refs/remotes/{origin}/*"),
        (true, Some(b)) => format!("+refs/heads/{b}:refs/remotes/{origin}/{b}"),
        (true, None) => format!("+{checkout}:{checkout}"),
    };
    text = config::add(&text, &format!("remote.{origin}.fetch"), &refspec);
    let refspec = Refspec::parse(&refspec).map_err(fatal)?;
    // The refs the clone maps (written packed), then the tags it takes.
    let mut mapped: Vec<(String, Oid)> = advert
        .refs
        .iter()
        .filter_map(|(n, o)| refspec.map(n).map(|local| (local, o.clone())))
        .collect();
    if !asked.single && asked.tags != Tags::None {
        mapped.extend(
            advert
                .refs
                .iter()
                .filter(|(n, _)| n.starts_with("refs/tags/"))
                .cloned(),
        );
    }
    let mut wants: Vec<Oid> = mapped.iter().map(|(_, o)| o.clone()).collect();
    let follow = asked.single && asked.tags == Tags::Follow;
    if follow {
        let fetched: HashSet<&Oid> = wants.iter().collect();
        let tips: Vec<Oid> = tags_to_follow(advert, |peeled| fetched.contains(peeled))
            .map(|(_, oid)| oid.clone())
            .collect();
        wants.extend(tips);
    }
    wants.sort();
    wants.dedup();
    let want = Want {
        depth: asked.depth,
        shallow: &[],
        include_tag: follow,
    };
    fetch_and_store(&repo, remote, advert, &wants, &[], &want).await?;
    repo.write_packed_refs(mapped.clone())
        .await
        .map_err(fatal)?;
    if follow {
        for (name, oid) in followed_tags(&repo, advert).await {
            repo.set_ref("tags", &name, &oid).await.map_err(fatal)?;
        }
    }
    // origin/HEAD when the server's HEAD branch is among those mapped.
    if let Some(b) = &remote_head {
        let tracking = format!("refs/remotes/{origin}/{b}");
        if mapped.iter().any(|(n, _)| *n == tracking) {
            repo.write_symref(&format!("refs/remotes/{origin}/HEAD"), &tracking)
                .await
                .map_err(fatal)?;
        }
    }
    let message = format!("clone: from {url}");
    match checkout.strip_prefix("refs/heads/") {
        Some(branch) => {
            text = track(&text, branch, origin);
            repo.save_config_text(&text).await.map_err(fatal)?;
            repo.set_ref("heads", branch, &head).await.map_err(fatal)?;
            repo.set_head_branch(branch).await.map_err(fatal)?;
            for name in ["HEAD".to_string(), checkout.clone()] {
                repo.log_update(&name, None, &head, &message)
                    .await
                    .map_err(fatal)?;
            }
        }
        None => {
            repo.save_config_text(&text).await.map_err(fatal)?;
            repo.set_head_detached(&head).await.map_err(fatal)?;
            repo.log_update("HEAD", None, &head, &message)
                .await
                .map_err(fatal)?;
            let _ = write!(err, "Note: switching to '{head}'.\n{DETACHED_ADVICE}");
        }
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

/// Fetches the pack of what `wants` reaches beyond `haves` into storage
/// as it arrives, keeps it indexed beside its `.idx`, and records where the
/// server cut history. Nothing of a refused pack is left.
async fn fetch_and_store(
    repo: &Repo,
    remote: &Remote,
    advert: &Advert,
    wants: &[Oid],
    haves: &[Oid],
    want: &Want<'_>,
) -> Result<(), Out> {
    let too_large = |e: Error| match e.to_string().contains("file too large") {
        true => fatal(
            "the pack is larger than one file of the session may be \
             (:max_file_bytes; raise it in :limits)",
        ),
        false => fatal(e),
    };
    let mut incoming = repo.incoming_pack().await.map_err(fatal)?;
    let cut = match remote
        .fetch_pack(advert, wants, haves, want, &mut incoming)
        .await
    {
        Ok(cut) => cut,
        Err(e) => {
            incoming.discard().await;
            return Err(too_large(e));
        }
    };
    incoming.keep().await.map_err(too_large)?;
    repo.update_shallow(&cut.shallow, &cut.unshallow)
        .await
        .map_err(fatal)
}

/// One `remote.<name>.fetch` refspec, `+src:dst`, each side with at most
/// one `*`.
struct Refspec {
    src: String,
    dst: String,
}

impl Refspec {
    fn parse(text: &str) -> Result<Self, String> {
        let refused = || format!("not supported by the sandbox's git: the refspec '{text}'");
        let forced = text.strip_prefix('+').ok_or_else(refused)?;
        let (src, dst) = forced.split_once(':').ok_or_else(refused)?;
        let stars = (src.matches('*').count(), dst.matches('*').count());
        if !matches!(stars, (0, 0) | (1, 1)) || !src.starts_with("refs/") {
            return Err(refused());
        }
        Ok(Self {
            src: src.to_string(),
            dst: dst.to_string(),
        })
    }

    /// The local ref the remote's `name` goes to, if this maps it.
    fn map(&self, name: &str) -> Option<String> {
        match self.src.split_once('*') {
            Some((before, after)) => {
                let middle = name.strip_prefix(before)?.strip_suffix(after)?;
                Some(self.dst.replacen('*', middle, 1))
            }
            None => (name == self.src).then(|| self.dst.clone()),
        }
    }
}

/// The advertised tags git follows into a fetch: those whose object (what
/// an annotated tag peels to) is `wanted` or already here.
fn tags_to_follow<'a>(
    advert: &'a Advert,
    wanted: impl Fn(&Oid) -> bool + 'a,
) -> impl Iterator<Item = &'a (String, Oid)> + 'a {
    advert.refs.iter().filter(move |(name, _)| {
        name.starts_with("refs/tags/") && advert.peeled(name).is_some_and(&wanted)
    })
}

/// The advertised tags not yet here whose objects now are: what git's tag
/// following (and `include-tag`) brought.
async fn followed_tags(repo: &Repo, advert: &Advert) -> Vec<(String, Oid)> {
    let mut tags = Vec::new();
    for (name, oid) in &advert.refs {
        if let Some(tag) = name.strip_prefix("refs/tags/") {
            if repo.tag(tag).await.is_none() && repo.has_object(oid).await {
                tags.push((tag.to_string(), oid.clone()));
            }
        }
    }
    tags
}

/// What a fetch brought: the report's lines, and the remote's refs.
pub struct Fetched {
    pub lines: Vec<(char, String, String, String)>,
    pub url: String,
}

/// What a fetch was asked for beyond the remote.
#[derive(Default)]
pub struct Fetching {
    pub prune: bool,
    /// `--depth N`, or `UNSHALLOW`.
    pub depth: Option<u32>,
    /// `--tags`/`--no-tags`; else the remote's `tagOpt`, else following.
    pub tags: Option<Tags>,
    /// Refs named after the remote (`fetch origin main`): fetched into
    /// `FETCH_HEAD` alone, without following tags.
    pub named: Vec<String>,
}

pub async fn fetch_into(
    here: &Here<'_>,
    repo: &Repo,
    given: &str,
    fetching: Fetching,
) -> Result<Fetched, Out> {
    let (Some(name), url) = named_remote(repo, given).await? else {
        return Err(fatal(format!(
            "not supported by the sandbox's git: fetching from a URL that is no remote's \
             ({given}); add it with git remote add NAME URL"
        )));
    };
    let mut refspecs = Vec::new();
    for (key, value) in repo.config().await {
        if key == format!("remote.{name}.fetch") {
            refspecs.push(Refspec::parse(&value).map_err(fatal)?);
        }
    }
    let tags = match fetching.tags {
        Some(tags) => tags,
        None => match repo
            .config_value(&format!("remote.{name}.tagOpt"))
            .await
            .as_deref()
        {
            Some("--no-tags") => Tags::None,
            Some("--tags") => Tags::All,
            _ => Tags::Follow,
        },
    };
    let shallow = repo.shallow().await;
    if fetching.depth == Some(UNSHALLOW) && shallow.is_empty() {
        return Err(fatal(
            "--unshallow on a complete repository does not make sense",
        ));
    }
    let remote = connect(here, &url)?;
    let advert = remote.discover("git-upload-pack").await.map_err(fatal)?;
    // The refs named, as git finds a name among the remote's refs.
    let mut named: Vec<&(String, Oid)> = Vec::new();
    for given in &fetching.named {
        let found = ["", "refs/", "refs/tags/", "refs/heads/"]
            .iter()
            .find_map(|prefix| {
                let full = format!("{prefix}{given}");
                advert.refs.iter().find(|(n, _)| *n == full)
            });
        match found {
            Some(found) => named.push(found),
            None => return Err(fatal(format!("couldn't find remote ref {given}"))),
        }
    }
    // Remote ref → the local ref it updates (for named refs, the
    // remote-tracking ref the refspecs map them to, if any).
    let mut mapped: Vec<(&String, String, &Oid)> = Vec::new();
    for (remote_ref, oid) in &advert.refs {
        let asked = named.is_empty() || named.iter().any(|(n, _)| n == remote_ref);
        if let Some(local) = refspecs
            .iter()
            .find_map(|r| r.map(remote_ref))
            .filter(|_| asked)
        {
            mapped.push((remote_ref, local, oid));
        } else if tags == Tags::All && remote_ref.starts_with("refs/tags/") {
            mapped.push((remote_ref, remote_ref.clone(), oid));
        }
    }
    // A deepening fetch asks for tips it has: the server cuts anew below them.
    let mut wants = Vec::new();
    let fetched = mapped.iter().map(|(_, _, oid)| *oid);
    for oid in fetched.chain(named.iter().map(|(_, oid)| oid)) {
        if fetching.depth.is_some() || !repo.has_object(oid).await {
            wants.push(oid.clone());
        }
    }
    // Tags pointing at what is fetched or already here, not yet here.
    let follow = tags == Tags::Follow && named.is_empty();
    if follow {
        for (tag, oid) in tags_to_follow(&advert, |_| true) {
            let peeled = advert.peeled(tag).unwrap_or(oid);
            let reached = mapped.iter().any(|(_, _, o)| *o == peeled);
            if !repo.has_object(oid).await
                && repo.tag(&tag["refs/tags/".len()..]).await.is_none()
                && (reached || repo.has_object(peeled).await)
            {
                wants.push(oid.clone());
            }
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
        let mut shallow: Vec<Oid> = shallow.iter().cloned().collect();
        shallow.sort();
        let want = Want {
            depth: fetching.depth,
            shallow: &shallow,
            include_tag: follow,
        };
        fetch_and_store(repo, &remote, &advert, &wants, &haves, &want).await?;
    }
    let mut lines = Vec::new();
    let mut seen = HashSet::new();
    for (remote_ref, _) in &named {
        let (kind, short) = describe_ref(remote_ref);
        lines.push((
            '*',
            kind.to_string(),
            short.to_string(),
            "FETCH_HEAD".into(),
        ));
    }
    for (remote_ref, local, oid) in &mapped {
        seen.insert(local.clone());
        if let Some(tag) = local.strip_prefix("refs/tags/") {
            if repo.tag(tag).await.is_none() {
                repo.set_ref("tags", tag, oid).await.map_err(fatal)?;
                let from = remote_ref.trim_start_matches("refs/tags/").to_string();
                lines.push(('*', "[new tag]".to_string(), from, tag.to_string()));
            }
            continue;
        }
        let shown = local
            .strip_prefix("refs/remotes/")
            .or_else(|| local.strip_prefix("refs/heads/"))
            .unwrap_or(local)
            .to_string();
        let old = repo.read_ref(local).await;
        let line = match &old {
            None => ('*', "[new branch]".to_string()),
            Some(old) if old == *oid => continue,
            Some(old) if repo.ancestors(oid).await.contains(old) => (
                ' ',
                format!("{}..{}", repo.short(old).await, repo.short(oid).await),
            ),
            Some(old) => (
                '+',
                format!(
                    "{}...{} (forced update)",
                    repo.short(old).await,
                    repo.short(oid).await
                ),
            ),
        };
        let Some((kind, rest)) = local.strip_prefix("refs/").and_then(|r| r.split_once('/')) else {
            continue;
        };
        repo.set_ref(kind, rest, oid).await.map_err(fatal)?;
        repo.log_update(
            local,
            old.as_deref(),
            oid,
            &format!("fetch {given}: fast-forward"),
        )
        .await
        .map_err(fatal)?;
        let from = remote_ref.trim_start_matches("refs/heads/").to_string();
        lines.push((line.0, line.1, from, shown));
    }
    let mut followed = Vec::new();
    if follow {
        for (tag, oid) in followed_tags(repo, &advert).await {
            repo.set_ref("tags", &tag, &oid).await.map_err(fatal)?;
            lines.push(('*', "[new tag]".to_string(), tag.clone(), tag.clone()));
            followed.push((format!("refs/tags/{tag}"), oid));
        }
    }
    // FETCH_HEAD: the refs named, else what the refspecs fetched (the
    // current branch's upstream marked for merge, listed first) and the
    // tags followed.
    let shown = shown_url(&url);
    let merge = upstream_of(repo, &name).await;
    let entries: Vec<(&str, &Oid, bool)> = match named.is_empty() {
        false => named.iter().map(|(r, o)| (r.as_str(), o, true)).collect(),
        true => mapped
            .iter()
            .map(|(r, _, o)| (r.as_str(), *o, merge.as_deref() == Some(r.as_str())))
            .chain(followed.iter().map(|(r, o)| (r.as_str(), o, false)))
            .collect(),
    };
    let mut fetch_head = String::new();
    for for_merge in [true, false] {
        for (remote_ref, oid, merged) in &entries {
            if *merged == for_merge {
                let (kind, short) = describe_ref(remote_ref);
                let mark = if for_merge { "" } else { "not-for-merge" };
                let what = match kind {
                    "branch" | "tag" => format!("{kind} '{short}'"),
                    _ => format!("'{remote_ref}'"),
                };
                let _ = writeln!(fetch_head, "{oid}\t{mark}\t{what} of {shown}");
            }
        }
    }
    repo.write(&repo.git.join("FETCH_HEAD"), fetch_head.as_bytes())
        .await
        .map_err(fatal)?;
    if fetching.prune {
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
    Ok(Fetched { lines, url: shown })
}

/// How git's report and `FETCH_HEAD` name a remote ref: `branch main`,
/// `tag v1`, or the ref itself.
fn describe_ref(remote_ref: &str) -> (&'static str, &str) {
    if let Some(branch) = remote_ref.strip_prefix("refs/heads/") {
        ("branch", branch)
    } else if let Some(tag) = remote_ref.strip_prefix("refs/tags/") {
        ("tag", tag)
    } else {
        ("ref", remote_ref)
    }
}

/// The remote ref the current branch merges from `remote`, if it has one.
async fn upstream_of(repo: &Repo, remote: &str) -> Option<String> {
    let super::repo::Head::Branch(branch) = repo.head().await else {
        return None;
    };
    let from = repo
        .config_value(&format!("branch.{branch}.remote"))
        .await?;
    if from != remote {
        return None;
    }
    repo.config_value(&format!("branch.{branch}.merge")).await
}

/// The URL as git's report shows it: no credentials, no trailing `/` or
/// `.git`.
fn shown_url(url: &str) -> String {
    let mut shown = url.to_string();
    if let Some(scheme) = shown.find("://") {
        let host = scheme + 3;
        let end = shown[host..].find('/').map_or(shown.len(), |i| host + i);
        if let Some(at) = shown[host..end].rfind('@') {
            shown.replace_range(host..host + at + 1, "");
        }
    }
    let trimmed = shown.trim_end_matches('/');
    trimmed.strip_suffix(".git").unwrap_or(trimmed).to_string()
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
            flags: &[
                "-q",
                "--quiet",
                "-p",
                "--prune",
                "-t",
                "--tags",
                "-n",
                "--no-tags",
                "--unshallow",
            ],
            valued: &[&["--depth"]],
        },
    )?;
    let depth = depth(&args)?;
    if depth.is_some() && args.has(&["--unshallow"]) {
        return Err(fatal(
            "options '--depth' and '--unshallow' cannot be used together",
        ));
    }
    for refspec in args.operands.iter().skip(1) {
        if refspec.contains(':') || refspec.starts_with(['+', '^']) {
            return Err(fatal(format!(
                "not supported by the sandbox's git: the refspec '{refspec}' \
                 (name refs to fetch into FETCH_HEAD, as in git fetch origin main)"
            )));
        }
    }
    let given = match args.operands.first() {
        Some(given) => given.to_string(),
        None => upstream_remote(repo).await,
    };
    let tags = match args.last(&["-t", "--tags", "-n", "--no-tags"]) {
        Some("-t" | "--tags") => Some(Tags::All),
        Some(_) => Some(Tags::None),
        None => None,
    };
    let fetching = Fetching {
        prune: args.has(&["-p", "--prune"]),
        depth: depth.or(args.has(&["--unshallow"]).then_some(UNSHALLOW)),
        tags,
        named: args
            .operands
            .iter()
            .skip(1)
            .map(|r| r.to_string())
            .collect(),
    };
    let fetched = fetch_into(here, repo, &given, fetching).await?;
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
            flags: &[
                "--heads",
                "-h",
                "--branches",
                "-b",
                "--tags",
                "-t",
                "--refs",
                "--quiet",
                "-q",
                "--exit-code",
            ],
            valued: &[],
        },
    )?;
    let given = args.operands.first();
    let named: &str = given.map_or("origin", |g| g);
    let none_configured = || fatal("No remote configured to list refs from.");
    // A remote's name, else (as git takes it) a URL or a path.
    let url = match repo {
        _ if super::is_path_remote(named) || named.contains("://") => named.to_string(),
        Some(repo) => match repo.config_value(&format!("remote.{named}.url")).await {
            Some(url) => url,
            None if given.is_none() => return Err(none_configured()),
            None => named.to_string(),
        },
        None if given.is_none() => return Err(none_configured()),
        None => named.to_string(),
    };
    let listed = match url.contains("://") && !url.starts_with("file://") {
        true => advertised(here, &url).await?,
        false => local_refs(here, url.trim_start_matches("file://")).await?,
    };
    let heads = args.has(&["--heads", "-h", "--branches", "-b"]);
    let tags = args.has(&["--tags", "-t"]);
    let refs_only = args.has(&["--refs"]);
    // A ref is kept as git's `check_ref` keeps it, then if it ends as a
    // pattern does (`git ls-remote origin main` is every `*/main`).
    let patterns: Vec<String> = args
        .operands
        .iter()
        .skip(1)
        .map(|p| format!("*/{p}"))
        .collect();
    let kept = |name: &str| {
        let typed = match (heads || tags || refs_only, name.strip_prefix("refs/")) {
            (false, _) => true,
            (true, None) => false,
            (true, Some(rest)) => {
                if refs_only && !valid_refname(rest) {
                    false
                } else if (heads && rest.starts_with("heads/"))
                    || (tags && rest.starts_with("tags/"))
                {
                    true
                } else {
                    !(heads || tags)
                }
            }
        };
        let slashed = format!("/{name}");
        typed
            && (patterns.is_empty()
                || patterns.iter().any(|p| {
                    gix_glob::wildmatch(
                        p.as_str().into(),
                        slashed.as_str().into(),
                        Default::default(),
                    )
                }))
    };
    let mut out = String::new();
    for (name, oid) in listed.iter().filter(|(name, _)| kept(name)) {
        let _ = writeln!(out, "{oid}\t{name}");
    }
    let code = match out.is_empty() && args.has(&["--exit-code"]) {
        true => 2,
        false => 0,
    };
    let from = match given.is_none() && !args.has(&["--quiet", "-q"]) {
        true => format!("From {url}\n"),
        false => String::new(),
    };
    Ok(Out {
        stdout: out,
        stderr: from,
        code,
    })
}

/// A name git's `check_refname_format` accepts (below `refs/`): at least
/// two levels, no component starting with `.` or ending with `.lock`, none
/// of `..`, `@{`, control characters, spaces or `~^:?*[\`, no trailing
/// `/` or `.`. The peeled `^{}` lines are not.
fn valid_refname(name: &str) -> bool {
    name.contains('/')
        && !name.contains("..")
        && !name.contains("@{")
        && name != "@"
        && !name.ends_with(['/', '.'])
        && !name
            .chars()
            .any(|c| c.is_control() || " ~^:?*[\\".contains(c))
        && name
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
}

/// What a server over HTTP advertises: each ref in its order, an annotated
/// tag followed by what it peels to (`name^{}`).
async fn advertised(here: &Here<'_>, url: &str) -> Result<Vec<(String, Oid)>, Out> {
    let remote = connect(here, url)?;
    let advert = remote.discover("git-upload-pack").await.map_err(fatal)?;
    let peeled: std::collections::HashMap<&str, &Oid> =
        advert.peeled.iter().map(|(n, o)| (n.as_str(), o)).collect();
    let mut listed = Vec::new();
    for (name, oid) in &advert.refs {
        listed.push((name.clone(), oid.clone()));
        if let Some(target) = peeled.get(name.as_str()) {
            listed.push((format!("{name}^{{}}"), (*target).clone()));
        }
    }
    Ok(listed)
}

/// What `git upload-pack` advertises of the repository at `path` (its
/// work tree or, bare, itself): `HEAD`, then every ref by name, each one
/// whose object is a tag followed by what it peels to.
async fn local_refs(here: &Here<'_>, path: &str) -> Result<Vec<(String, Oid)>, Out> {
    let dir = resolve(&here.cwd, path);
    let Some(repo) = Repo::at(here, &dir).await else {
        return Err(not_a_repository(path));
    };
    let mut refs = Vec::new();
    if let Some(head) = repo.read_ref("HEAD").await {
        refs.push(("HEAD".to_string(), head));
    }
    refs.extend(repo.refs_with_objects().await);
    let mut listed = Vec::new();
    for (name, oid) in refs {
        let peeled = match repo.read_object(&oid).await {
            Ok((kind, _)) if kind == "tag" => Some(repo.peel(&oid).await.map_err(fatal)?),
            _ => None,
        };
        listed.push((name.clone(), oid));
        if let Some(target) = peeled {
            listed.push((format!("{name}^{{}}"), target));
        }
    }
    Ok(listed)
}

/// The commits and their trees and blobs that `tips` reach and the
/// remote, which has `theirs`, lacks.
async fn objects_to_send(
    repo: &Repo,
    tips: &[Oid],
    theirs: &[Oid],
) -> Result<Vec<(String, Arc<Vec<u8>>)>, Error> {
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
) -> Result<(), Error> {
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
