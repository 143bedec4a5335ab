//! `cherry-pick` and `revert` of one commit: its change (or the reverse
//! of it) merged onto `HEAD` as `merge` merges, and committed as git's
//! sequencer commits it. A pick that would stop (a conflict, nothing left
//! to commit) is refused before anything changes.

use super::merging::Merged;
use super::*;

/// Which way a commit's change is taken.
#[derive(Clone, Copy, PartialEq)]
enum Pick {
    CherryPick,
    Revert,
}

impl Pick {
    fn command(self) -> &'static str {
        match self {
            Pick::CherryPick => "cherry-pick",
            Pick::Revert => "revert",
        }
    }
}

impl Ctx<'_> {
    /// `git cherry-pick COMMIT`.
    pub(super) async fn cherry_pick(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "cherry-pick",
                flags: &["--no-edit"],
                valued: &[],
            },
        )?;
        self.pick(&args, Pick::CherryPick).await
    }

    /// `git revert --no-edit COMMIT` (no editor runs here to write its
    /// message, so `--no-edit` is required).
    pub(super) async fn revert(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "revert",
                flags: &["--no-edit"],
                valued: &[],
            },
        )?;
        if !args.has(&["--no-edit"]) {
            return Err(Out::fatal(
                "not supported by the sandbox's git: revert without --no-edit (no editor runs here)",
            ));
        }
        self.pick(&args, Pick::Revert).await
    }

    async fn pick(&self, args: &Args<'_>, how: Pick) -> Run {
        let command = how.command();
        let given = match (args.operands.as_slice(), args.paths.is_empty()) {
            ([one], true) => *one,
            ([], true) => {
                return Err(Out::error(
                    format!("usage: git {command} [<options>] <commit-ish>...\n"),
                    129,
                ))
            }
            _ => {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: {command} of more than one commit"
                )))
            }
        };
        let repo = &self.repo;
        for state in ["MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"] {
            if repo.state_file(state).await.is_some() {
                return Err(Out::fatal(format!(
                    "not supported by the sandbox's git: {command} while a merge, cherry-pick or revert is in progress ({state})"
                )));
            }
        }
        let oid = self.revision(given).await?;
        let commit = repo.commit(&oid).await.map_err(failed)?;
        if commit.parents.len() > 1 {
            return Err(Out::error(
                format!(
                    "error: commit {oid} is a merge but no -m option was given.\nfatal: {command} failed\n"
                ),
                128,
            ));
        }
        let Some(head) = repo.head_commit().await else {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: {command} onto a branch with no commits"
            )));
        };
        let parent = commit.parents.first().cloned();
        let picked = repo.commit_files(Some(&oid)).await.map_err(failed)?;
        let before_it = repo.commit_files(parent.as_deref()).await.map_err(failed)?;
        let ours = repo.commit_files(Some(&head)).await.map_err(failed)?;
        let short = repo.short(&oid).await;
        let first_line = commit
            .message
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        // Theirs is the commit (a pick) or its parent (a revert), each
        // against the other as the base; labelled as git labels them.
        let (base, theirs, label) = match how {
            Pick::CherryPick => (&before_it, &picked, format!("{short} ({first_line})")),
            Pick::Revert => (
                &picked,
                &before_it,
                format!("parent of {short} ({first_line})"),
            ),
        };
        self.refuse_renames_that_matter(base, &ours, theirs).await?;
        let state = self.state().await?;
        if state
            .index
            .iter()
            .map(|(p, e)| (p, &e.blob))
            .ne(ours.iter())
        {
            return Err(Out::error(
                format!(
                    "error: your local changes would be overwritten by {command}.\n\
                     hint: commit your changes or stash them to proceed.\nfatal: {command} failed\n"
                ),
                128,
            ));
        }
        let Merged {
            result,
            notes,
            conflicted,
            ..
        } = self.three_way(base, &ours, theirs, &label).await?;
        if !conflicted.is_empty() {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: a {command} that conflicts ({}); nothing was changed",
                conflicted.join(", ")
            )));
        }
        if result == ours {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: a {command} that leaves nothing to commit; nothing was changed"
            )));
        }
        let touched: Vec<&String> = ours
            .keys()
            .chain(result.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|p| ours.get(*p) != result.get(*p) && state.changed_in_work(p))
            .collect();
        if !touched.is_empty() {
            let list: String = touched.iter().map(|p| format!("\t{p}\n")).collect();
            return Err(Out::error(
                format!(
                    "error: Your local changes to the following files would be overwritten by merge:\n{list}\
                     Please commit your changes or stash them before you merge.\nAborting\nfatal: {command} failed\n"
                ),
                128,
            ));
        }
        self.move_to(&result).await?;
        let tree = repo.write_tree(&result).await.map_err(failed)?;
        let (message, author) = match how {
            // The commit's message from its subject on, and its author.
            Pick::CherryPick => {
                // From the first line with text, as git's sequencer takes it.
                let skipped: usize = commit
                    .message
                    .split_inclusive('\n')
                    .take_while(|line| line.trim().is_empty())
                    .map(str::len)
                    .sum();
                let message = &commit.message[skipped..];
                let author = &commit.author;
                (
                    message.to_string(),
                    Some((
                        format!("{} <{}>", author.name, author.email),
                        format!("{} {}", author.time, author.zone),
                    )),
                )
            }
            Pick::Revert => {
                let subject = first_line;
                let title = match subject.strip_prefix("Revert \"") {
                    Some(inner) if !inner.starts_with("Revert \"") => format!("Reapply \"{inner}"),
                    _ => format!("Revert \"{subject}\""),
                };
                (format!("{title}\n\nThis reverts commit {oid}.\n"), None)
            }
        };
        let new = self
            .write_commit(&tree, std::slice::from_ref(&head), &message, author)
            .await?;
        let written = repo.commit(&new).await.map_err(failed)?;
        repo.advance_head(&new, &format!("{command}: {}", written.subject()))
            .await
            .map_err(failed)?;
        let summary = self.commit_summary(&new, &ours, &result, true).await?;
        Ok(Out::ok(format!("{notes}{summary}")))
    }
}
