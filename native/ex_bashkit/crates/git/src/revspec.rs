//! Revisions as `gitrevisions(7)` writes them. gitoxide's `gix-revision`
//! reads the syntax into steps; each step is then taken here over this
//! repository, with git's rules where gitoxide leaves them to its caller:
//! a name is a ref before it is `describe`'s output or an abbreviated
//! object name, `@{1}` reads the current branch's reflog, and `A^!`,
//! `A^@` and `A^-N` are read off the end of the argument as git does.

use bstr::{BStr, ByteSlice};
use gix_error::ErrorExt;
use gix_revision::spec::parse::{delegate, Delegate};
use gix_revision::spec::Kind;

use crate::repo::{Head, Oid, Repo};

/// What one revision argument asks of history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevSpec {
    /// `A`: the object `A` names (a tag stays a tag).
    Include(Oid),
    /// `^A`: history reachable from `A` left out.
    Exclude(Oid),
    /// `A..B` (an empty side is `HEAD`), and `A^-N` (`A^N..A`).
    Range { from: Oid, to: Oid },
    /// `A...B`: what either reaches and their merge bases do not.
    Symmetric { left: Oid, right: Oid },
    /// `A^@`: each parent of `A`, not `A` itself.
    Parents(Oid),
    /// `A^!`: `A` with none of its parents' history.
    WithoutParents(Oid),
}

/// A step of a revision, in the order `gix-revision` read it.
#[derive(Clone, Debug)]
enum Step {
    /// A name: a ref, `describe`'s output or an object name's prefix.
    Name(String),
    /// `@{N}` or `@{DATE}`, of the name before it (else the current
    /// branch).
    Reflog(delegate::ReflogLookup),
    /// `@{-N}`.
    CheckedOut(usize),
    /// `@{upstream}` (`false`) or `@{push}` (`true`).
    Sibling(bool),
    /// `^N`.
    Parent(usize),
    /// `~N`.
    Ancestor(usize),
    Peel(Peel),
    /// `:/TEXT` (from every ref) or `^{/TEXT}`: the youngest commit whose
    /// message matches; `!-` negated.
    Find {
        pattern: String,
        negated: bool,
    },
    /// `:PATH`, `:N:PATH`: the index's entry at stage N.
    Index {
        path: String,
        stage: u8,
    },
    Kind(Kind),
}

#[derive(Clone, Debug)]
enum Peel {
    /// `^{commit}`, `^{tree}`, `^{blob}`, `^{tag}`.
    To(&'static str),
    /// `^{object}`.
    Exists,
    /// `^{}`.
    Tags,
    /// `:PATH` after a revision.
    Path(String),
}

/// `gix-revision`'s delegate, writing its calls down to be taken later
/// (the object store is read asynchronously; the parser calls back
/// synchronously). Every object-name prefix is declined, so gitoxide
/// always hands over the whole name and git's order decides.
#[derive(Default)]
struct Steps(Vec<Step>);

type Parsed = gix_error::Result;

impl delegate::Revision for Steps {
    fn find_ref(&mut self, name: &BStr) -> Parsed {
        self.0.push(Step::Name(name.to_str_lossy().into_owned()));
        Ok(())
    }

    fn disambiguate_prefix(
        &mut self,
        _prefix: gix_hash::Prefix,
        _hint: Option<delegate::PrefixHint<'_>>,
    ) -> Parsed {
        Err(gix_error::message("looked up with the whole name").raise())
    }

    fn reflog(&mut self, query: delegate::ReflogLookup) -> Parsed {
        self.0.push(Step::Reflog(query));
        Ok(())
    }

    fn nth_checked_out_branch(&mut self, branch_no: usize) -> Parsed {
        self.0.push(Step::CheckedOut(branch_no));
        Ok(())
    }

    fn sibling_branch(&mut self, kind: delegate::SiblingBranch) -> Parsed {
        self.0
            .push(Step::Sibling(kind == delegate::SiblingBranch::Push));
        Ok(())
    }
}

impl delegate::Navigate for Steps {
    fn traverse(&mut self, kind: delegate::Traversal) -> Parsed {
        self.0.push(match kind {
            delegate::Traversal::NthParent(n) => Step::Parent(n),
            delegate::Traversal::NthAncestor(n) => Step::Ancestor(n),
        });
        Ok(())
    }

    fn peel_until(&mut self, kind: delegate::PeelTo<'_>) -> Parsed {
        use gix_object::Kind as Object;
        self.0.push(Step::Peel(match kind {
            delegate::PeelTo::ObjectKind(Object::Commit) => Peel::To("commit"),
            delegate::PeelTo::ObjectKind(Object::Tree) => Peel::To("tree"),
            delegate::PeelTo::ObjectKind(Object::Blob) => Peel::To("blob"),
            delegate::PeelTo::ObjectKind(Object::Tag) => Peel::To("tag"),
            delegate::PeelTo::ValidObject => Peel::Exists,
            delegate::PeelTo::RecursiveTagObject => Peel::Tags,
            delegate::PeelTo::Path(path) => Peel::Path(path.to_str_lossy().into_owned()),
        }));
        Ok(())
    }

    fn find(&mut self, regex: &BStr, negated: bool) -> Parsed {
        self.0.push(Step::Find {
            pattern: regex.to_str_lossy().into_owned(),
            negated,
        });
        Ok(())
    }

    fn index_lookup(&mut self, path: &BStr, stage: u8) -> Parsed {
        self.0.push(Step::Index {
            path: path.to_str_lossy().into_owned(),
            stage,
        });
        Ok(())
    }
}

impl delegate::Kind for Steps {
    fn kind(&mut self, kind: Kind) -> Parsed {
        self.0.push(Step::Kind(kind));
        Ok(())
    }
}

impl Delegate for Steps {
    fn done(&mut self) -> Parsed {
        Ok(())
    }
}

/// Where a revision's steps have got to: the object, and the ref it was
/// named by while no step has moved away from it (`main@{1}` needs it).
#[derive(Default)]
struct Place {
    oid: Option<Oid>,
    name: Option<String>,
    /// Why git would stop reading the revision (`@{upstream}` of a branch
    /// that has none).
    fatal: Option<String>,
}

/// `A^!`, `A^@`, `A^-N`: git reads these off the argument's last `^`
/// before anything else.
fn parent_shorthand(text: &str) -> Option<(&str, Shorthand)> {
    let at = text.rfind('^')?;
    let (base, mark) = (&text[..at], &text[at + 1..]);
    let shorthand = match mark {
        "!" => Shorthand::WithoutParents,
        "@" => Shorthand::Parents,
        "-" => Shorthand::Minus(1),
        _ => {
            let digits = mark.strip_prefix('-')?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Shorthand::Minus(digits.parse().ok().filter(|n| *n > 0)?)
        }
    };
    Some((base, shorthand))
}

enum Shorthand {
    WithoutParents,
    Parents,
    Minus(usize),
}

impl Repo {
    /// What the revision argument `text` names, `prefix` being where it
    /// is given (`:./PATH` and `REV:./PATH` are read from there); `None`
    /// when it names nothing.
    /// `Err` carries git's message where git stops instead (`@{upstream}`
    /// of a branch that has none).
    pub async fn revspec(&self, text: &str, prefix: &str) -> Result<Option<RevSpec>, String> {
        let mut fatal = None;
        let spec = self.read_revspec(text, prefix, &mut fatal).await;
        match fatal {
            Some(message) => Err(message),
            None => Ok(spec),
        }
    }

    async fn read_revspec(
        &self,
        text: &str,
        prefix: &str,
        fatal: &mut Option<String>,
    ) -> Option<RevSpec> {
        if let Some((base, shorthand)) = parent_shorthand(text) {
            // `A^!` names nothing for a base that is itself a range.
            let RevSpec::Include(oid) = Box::pin(self.read_revspec(base, prefix, fatal)).await?
            else {
                return None;
            };
            let commit = self.peel(&oid).await.ok()?;
            return Some(match shorthand {
                Shorthand::WithoutParents => RevSpec::WithoutParents(commit),
                Shorthand::Parents => RevSpec::Parents(commit),
                Shorthand::Minus(n) => {
                    let parents = self.commit(&commit).await.ok()?.parents;
                    RevSpec::Range {
                        from: parents.get(n - 1)?.clone(),
                        to: commit,
                    }
                }
            });
        }
        let mut steps = Steps::default();
        if gix_revision::spec::parse(text.into(), &mut steps).is_err() {
            // gitoxide refuses a few names git takes as refs (`a@b`).
            return self
                .ref_named(text)
                .await
                .map(|(_, oid)| RevSpec::Include(oid));
        }
        let mut sides: Vec<Oid> = Vec::new();
        let mut kind = None;
        let mut place = Place::default();
        for step in steps.0 {
            if let Step::Kind(k) = step {
                if k != Kind::ExcludeReachable {
                    sides.push(place.oid.take()?);
                    place = Place::default();
                }
                kind = Some(k);
                continue;
            }
            if self.take(&mut place, step, prefix).await.is_none() {
                *fatal = place.fatal;
                return None;
            }
        }
        let last = place.oid?;
        // Each side of a range must be a commit, or a tag of one; it is
        // given as named (`rev-parse v1..v2` prints the tags).
        for side in sides.iter().chain([&last]) {
            if kind.is_some_and(|k| k != Kind::ExcludeReachable) {
                self.commit_shape(&self.peel(side).await.ok()?).await.ok()?;
            }
        }
        Some(match (kind, sides.pop()) {
            (None, None) => RevSpec::Include(last),
            (Some(Kind::ExcludeReachable), None) => RevSpec::Exclude(last),
            (Some(Kind::RangeBetween), Some(from)) => RevSpec::Range { from, to: last },
            (Some(Kind::ReachableToMergeBase), Some(left)) => {
                RevSpec::Symmetric { left, right: last }
            }
            _ => return None,
        })
    }

    /// One step of a revision from `place`.
    async fn take(&self, place: &mut Place, step: Step, prefix: &str) -> Option<()> {
        let named = place.name.take();
        let oid = match step {
            Step::Name(name) => {
                let oid = self.named_object(&name).await?;
                place.name = Some(name);
                oid
            }
            Step::Reflog(lookup) => {
                let name = named.unwrap_or_default();
                match lookup {
                    delegate::ReflogLookup::Entry(n) => self.reflog_entry(&name, n).await?,
                    delegate::ReflogLookup::Date(time) => {
                        self.reflog_at_time(&name, time.seconds).await?
                    }
                }
            }
            Step::CheckedOut(n) => {
                let previous = self.previous_checkout(n).await?;
                Box::pin(self.named_object(&previous)).await?
            }
            Step::Sibling(push) => match self.sibling(named.as_deref(), push).await {
                Ok(oid) => oid?,
                // git stops here rather than saying the name names nothing.
                Err(message) => {
                    place.fatal = Some(message);
                    return None;
                }
            },
            Step::Parent(n) => {
                let commit = self.peel(place.oid.as_ref()?).await.ok()?;
                self.commit(&commit).await.ok()?.parents.get(n - 1)?.clone()
            }
            Step::Ancestor(n) => {
                let mut commit = self.peel(place.oid.as_ref()?).await.ok()?;
                for _ in 0..n {
                    commit = self.commit(&commit).await.ok()?.parents.first()?.clone();
                }
                commit
            }
            Step::Peel(peel) => {
                let oid = place.oid.as_ref()?;
                match peel {
                    Peel::To("tree") => match self.read_object(oid).await.ok()?.0.as_str() {
                        "tree" => oid.clone(),
                        _ => self.commit(&self.peel(oid).await.ok()?).await.ok()?.tree,
                    },
                    Peel::To(kind) => self.peeled_to(oid, kind).await?,
                    Peel::Exists => self.has_object(oid).await.then(|| oid.clone())?,
                    Peel::Tags => self.peel(oid).await.ok()?,
                    Peel::Path(path) => self.tree_path(oid, &from_prefix(prefix, &path)?).await?,
                }
            }
            Step::Find { pattern, negated } => {
                let starts = match &place.oid {
                    Some(oid) => {
                        let commit = self.peel(oid).await.ok()?;
                        vec![(self.commit_shape(&commit).await.ok()?.date, commit)]
                    }
                    None => self.every_tip().await,
                };
                self.youngest_matching(starts, &pattern, negated).await?
            }
            Step::Index { path, stage } => {
                let path = from_prefix(prefix, &path)?;
                let index = self.index().await.ok()?;
                match stage {
                    0 => index.get(&path)?.blob.oid.clone(),
                    stage => {
                        self.unmerged_blobs(&path)
                            .into_iter()
                            .find(|(s, _)| *s == stage)?
                            .1
                            .oid
                    }
                }
            }
            Step::Kind(_) => unreachable!("ranges are split by the caller"),
        };
        place.oid = Some(oid);
        Some(())
    }

    /// `NAME@{upstream}` or, `push`, `NAME@{push}` (`NAME` absent or
    /// `HEAD`: the current branch); `Err` with git's message where git
    /// stops, `Ok(None)` where the ref it names does not exist.
    async fn sibling(&self, name: Option<&str>, push: bool) -> Result<Option<Oid>, String> {
        let branch = match name {
            None | Some("HEAD") => match self.head().await {
                Head::Branch(branch) => branch,
                Head::Detached(_) => return Err("HEAD does not point to a branch".into()),
            },
            Some(name) => name.strip_prefix("refs/heads/").unwrap_or(name).to_string(),
        };
        let tracking = match push {
            true => self.push_destination(&branch).await?,
            false => self.upstream_ref(&branch).await?,
        };
        Ok(self.read_ref(&tracking).await)
    }

    /// The remote-tracking ref `branch` tracks, as git's
    /// `branch_get_upstream` names it.
    async fn upstream_ref(&self, branch: &str) -> Result<String, String> {
        let merge = self.config_value(&format!("branch.{branch}.merge")).await;
        let remote = self.config_value(&format!("branch.{branch}.remote")).await;
        let (Some(merge), Some(remote)) = (merge, remote) else {
            return Err(match self.branch(branch).await {
                Some(_) => format!("no upstream configured for branch '{branch}'"),
                None => format!("no such branch: '{branch}'"),
            });
        };
        if remote == "." {
            return Ok(merge);
        }
        self.tracking_for(&remote, &merge).await.ok_or_else(|| {
            format!("upstream branch '{merge}' not stored as a remote-tracking branch")
        })
    }

    /// Where `remote`'s fetch refspecs store its ref `name`; only the
    /// standard refspec is read (others are refused).
    async fn tracking_for(&self, remote: &str, name: &str) -> Option<String> {
        let fetch = self.config_values(&format!("remote.{remote}.fetch")).await;
        let standard = format!("+refs/heads/*:refs/remotes/{remote}/*");
        let branch = name.strip_prefix("refs/heads/")?;
        fetch
            .contains(&standard)
            .then(|| format!("refs/remotes/{remote}/{branch}"))
    }

    /// `BRANCH@{push}`: the remote-tracking ref of where `git push` would
    /// send `branch`, as git's `branch_get_push` decides it, for remotes
    /// with the standard fetch refspec and no push refspecs (others are
    /// refused).
    async fn push_destination(&self, branch: &str) -> Result<String, String> {
        let mut remote = self
            .config_value(&format!("branch.{branch}.pushRemote"))
            .await;
        if remote.is_none() {
            remote = self.config_value("remote.pushDefault").await;
        }
        if remote.is_none() {
            remote = self.config_value(&format!("branch.{branch}.remote")).await;
        }
        let remote = remote.unwrap_or_else(|| "origin".to_string());
        if self
            .config_value(&format!("remote.{remote}.url"))
            .await
            .is_none()
        {
            return Err(format!("branch '{branch}' has no remote for pushing"));
        }
        let refused =
            |what: &str| format!("not supported by the sandbox's git: @{{push}} with {what}");
        if !self
            .config_values(&format!("remote.{remote}.push"))
            .await
            .is_empty()
        {
            return Err(refused(&format!("remote.{remote}.push")));
        }
        let current = self
            .tracking_for(&remote, &format!("refs/heads/{branch}"))
            .await
            .ok_or_else(|| refused(&format!("remote.{remote}.fetch other than git's default")))?;
        let mode = self.config_value("push.default").await;
        match mode.as_deref().unwrap_or("simple") {
            "current" | "matching" => Ok(current),
            "upstream" | "tracking" => self.upstream_ref(branch).await,
            "simple" => match self.upstream_ref(branch).await? {
                upstream if upstream == current => Ok(current),
                _ => Err("cannot resolve 'simple' push to a single destination".into()),
            },
            "nothing" => Err("push has no destination (push.default is 'nothing')".into()),
            other => Err(format!("malformed value for push.default: {other}")),
        }
    }

    /// A name as git reads one: a whole object name; a ref (itself, under
    /// `refs/`, tags, heads, remotes, a remote's `HEAD`); `describe`'s
    /// output (`v1.2-3-gabc1234`: the commit it ends with); an object
    /// name's unambiguous prefix of at least 4 digits.
    async fn named_object(&self, name: &str) -> Option<Oid> {
        if name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            let oid = name.to_ascii_lowercase();
            return self.has_object(&oid).await.then_some(oid);
        }
        if matches!(name, "HEAD" | "@") {
            return self.head_commit().await;
        }
        if let Some((_, oid)) = self.ref_named(name).await {
            return Some(oid);
        }
        if let Some((_, hex)) = name.rsplit_once("-g") {
            if hex.len() >= 4 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return self.commit_with_prefix(&hex.to_ascii_lowercase()).await;
            }
        }
        if name.len() >= 4 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self.expand(&name.to_ascii_lowercase()).await;
        }
        None
    }

    /// The one commit whose name begins with `hex` (other objects that
    /// do are no rivals: git looks for a commit there).
    async fn commit_with_prefix(&self, hex: &str) -> Option<Oid> {
        let mut found = None;
        for oid in self.object_names_with(hex).await {
            if self.commit_shape(&oid).await.is_ok() {
                if found.is_some() {
                    return None;
                }
                found = Some(oid);
            }
        }
        found
    }

    /// The reflog of `name` (`HEAD`, a ref; empty: the current branch,
    /// else `HEAD`) as its file and its entries, newest last.
    async fn reflog_lines(&self, name: &str) -> Option<Vec<(Oid, Oid, i64)>> {
        let file = match name {
            "HEAD" => "HEAD".to_string(),
            "" => match self.head().await {
                Head::Branch(branch) => format!("refs/heads/{branch}"),
                Head::Detached(_) => "HEAD".to_string(),
            },
            name => self.ref_named(name).await?.0,
        };
        let log = self.read_text(&self.git.join("logs").join(file)).await?;
        Some(
            log.lines()
                .filter_map(|line| {
                    let (head, _) = line.split_once('\t').unwrap_or((line, ""));
                    let mut words = head.split(' ');
                    let (old, new) = (words.next()?, words.next()?);
                    let time = head.rsplit(' ').nth(1)?.parse().ok()?;
                    Some((old.to_string(), new.to_string(), time))
                })
                .collect(),
        )
    }

    /// `NAME@{N}`: where `NAME` was N moves ago.
    async fn reflog_entry(&self, name: &str, n: usize) -> Option<Oid> {
        let lines = self.reflog_lines(name).await?;
        let new = &lines.iter().rev().nth(n)?.1;
        (new.as_str() != crate::repo::NULL_OID).then(|| new.clone())
    }

    /// `NAME@{DATE}`: where `NAME` was at that time: the newest entry
    /// made then or before; before its first entry, where that one moved
    /// it from (git warns that the log goes back no further).
    async fn reflog_at_time(&self, name: &str, time: i64) -> Option<Oid> {
        let lines = self.reflog_lines(name).await?;
        if let Some((_, new, _)) = lines.iter().rev().find(|(_, _, t)| *t <= time) {
            return Some(new.clone());
        }
        let (old, new, _) = lines.first()?;
        Some(
            if old.as_str() == crate::repo::NULL_OID {
                new
            } else {
                old
            }
            .clone(),
        )
    }

    /// Where every ref and `HEAD` point, as commits, in the order git
    /// 2.47 starts `:/TEXT` from: listed (refs by name, then `HEAD`),
    /// sorted newest first, then taken from the back, so the oldest tip
    /// is looked at first.
    async fn every_tip(&self) -> Vec<(i64, Oid)> {
        let mut names: Vec<Option<String>> = self.all_refs().await.into_iter().map(Some).collect();
        names.push(None);
        let mut tips: Vec<(i64, Oid)> = Vec::new();
        for name in names.into_iter().rev() {
            let oid = match name {
                Some(name) => self.read_ref(&name).await,
                None => self.head_commit().await,
            };
            let Some(Ok(commit)) = (match oid {
                Some(oid) => Some(self.peel(&oid).await),
                None => None,
            }) else {
                continue;
            };
            if let Ok(shape) = self.commit_shape(&commit).await {
                if !tips.iter().any(|(_, seen)| *seen == commit) {
                    tips.push((shape.date, commit));
                }
            }
        }
        tips.sort_by_key(|(date, _)| std::cmp::Reverse(*date));
        tips.reverse();
        tips
    }

    /// The first commit whose message matches `pattern` (an extended
    /// regular expression, `.` matching newlines as POSIX's does; or,
    /// `negated`, does not) as git walks from `queue`: the front taken
    /// each time, its parents put in before the first older entry.
    async fn youngest_matching(
        &self,
        mut queue: Vec<(i64, Oid)>,
        pattern: &str,
        negated: bool,
    ) -> Option<Oid> {
        let regex = regex::Regex::new(&format!("(?s){pattern}")).ok()?;
        let mut seen: std::collections::HashSet<Oid> =
            queue.iter().map(|(_, oid)| oid.clone()).collect();
        while !queue.is_empty() {
            let (_, oid) = queue.remove(0);
            let commit = self.commit(&oid).await.ok()?;
            if regex.is_match(&commit.message) != negated {
                return Some(oid);
            }
            for parent in commit.parents {
                if seen.insert(parent.clone()) {
                    let date = self.commit_shape(&parent).await.ok()?.date;
                    insert_by_date(&mut queue, (date, parent));
                }
            }
        }
        None
    }
}

/// Before the first entry older than `entry` (git's
/// `commit_list_insert_by_date`, on a list that need not be sorted).
fn insert_by_date(queue: &mut Vec<(i64, Oid)>, entry: (i64, Oid)) {
    let at = queue
        .iter()
        .position(|(date, _)| *date < entry.0)
        .unwrap_or(queue.len());
    queue.insert(at, entry);
}

/// A path given in a revision as one from the work tree's top: from
/// `prefix` where it starts `./` or `../`; `None` above the top.
fn from_prefix(prefix: &str, path: &str) -> Option<String> {
    if !(path.starts_with("./") || path.starts_with("../") || path == "." || path == "..") {
        return Some(path.to_string());
    }
    let mut parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(text: &str) -> Vec<String> {
        let mut steps = Steps::default();
        gix_revision::spec::parse(text.into(), &mut steps).unwrap();
        steps.0.iter().map(|s| format!("{s:?}")).collect()
    }

    #[test]
    fn names_reach_the_store_whole_and_in_git_s_order() {
        // An object-name prefix, describe's output and a branch named
        // like either are all looked up by the whole name.
        assert_eq!(steps("abcd"), [r#"Name("abcd")"#]);
        assert_eq!(steps("v1.2-3-gabc1234"), [r#"Name("v1.2-3-gabc1234")"#]);
        assert_eq!(
            steps("HEAD~2..@{u}"),
            [
                r#"Name("HEAD")"#,
                "Ancestor(2)",
                "Kind(RangeBetween)",
                "Sibling(false)"
            ]
        );
        assert_eq!(
            steps(":/fix it"),
            [r#"Find { pattern: "fix it", negated: false }"#]
        );
        assert_eq!(steps(":2:a/b"), [r#"Index { path: "a/b", stage: 2 }"#]);
    }

    #[test]
    fn parent_shorthands_are_read_off_the_last_caret() {
        assert!(matches!(
            parent_shorthand("HEAD~2^!"),
            Some(("HEAD~2", Shorthand::WithoutParents))
        ));
        assert!(matches!(
            parent_shorthand("v1^@"),
            Some(("v1", Shorthand::Parents))
        ));
        assert!(matches!(
            parent_shorthand("x^-"),
            Some(("x", Shorthand::Minus(1)))
        ));
        assert!(matches!(
            parent_shorthand("x^-2"),
            Some(("x", Shorthand::Minus(2)))
        ));
        assert!(parent_shorthand("x^-0").is_none());
        assert!(parent_shorthand("x^2").is_none());
        assert!(parent_shorthand("x^@~1").is_none());
    }

    #[test]
    fn relative_paths_start_where_the_revision_is_given() {
        assert_eq!(
            from_prefix("lib/a", "./x.ex").as_deref(),
            Some("lib/a/x.ex")
        );
        assert_eq!(from_prefix("lib/a", "../x.ex").as_deref(), Some("lib/x.ex"));
        assert_eq!(from_prefix("lib", "x.ex").as_deref(), Some("x.ex"));
        assert_eq!(from_prefix("", ".."), None);
    }

    #[test]
    fn a_commit_goes_in_before_the_first_older_one() {
        let mut queue = Vec::new();
        for (date, name) in [(5, "a"), (9, "b"), (5, "c"), (7, "d")] {
            insert_by_date(&mut queue, (date, name.to_string()));
        }
        let order: Vec<&str> = queue.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(order, ["b", "d", "a", "c"]);
        // Oldest first, as git 2.47's `:/` starts: a newer one goes in
        // at the front, an older one before the first it is younger than.
        let mut queue = vec![(1, "x".to_string()), (3, "y".to_string())];
        insert_by_date(&mut queue, (2, "z".to_string()));
        assert_eq!(queue[0].1, "z");
    }
}
