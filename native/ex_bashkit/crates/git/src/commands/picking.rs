//! `cherry-pick` and `revert` of one commit: its change (or the reverse
//! of it) merged onto `HEAD` as `merge` merges, and committed as git's
//! sequencer commits it. A pick that conflicts, or leaves nothing to
//! commit, stops as git's does (`CHERRY_PICK_HEAD` or `REVERT_HEAD`, the
//! prepared message in `MERGE_MSG`), to be concluded by `--continue` or a
//! commit, or ended by `--skip`, `--abort` or `--quit`.

use super::merging::{with_conflicts, Merged};
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

    /// The file that says this pick is waiting.
    fn head_file(self) -> &'static str {
        match self {
            Pick::CherryPick => "CHERRY_PICK_HEAD",
            Pick::Revert => "REVERT_HEAD",
        }
    }

    fn failed(self, message: &str) -> Out {
        Out::error(
            format!("error: {message}\nfatal: {} failed\n", self.command()),
            128,
        )
    }
}

/// The options both commands take: `--no-edit`, then those that go on
/// with, or end, a pick that stopped.
const FLAGS: [&str; 5] = ["--no-edit", "--continue", "--skip", "--abort", "--quit"];
const CONTROLS: [&str; 4] = [FLAGS[1], FLAGS[2], FLAGS[3], FLAGS[4]];

impl Ctx<'_> {
    /// `git cherry-pick COMMIT`.
    pub(super) async fn cherry_pick(&self, args: &[String]) -> Run {
        let args = Args::parse(
            args,
            &Spec {
                command: "cherry-pick",
                flags: &FLAGS,
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
                flags: &FLAGS,
                valued: &[],
            },
        )?;
        if !args.has(&["--no-edit"]) && !args.has(&CONTROLS) {
            return Err(Out::fatal(
                "not supported by the sandbox's git: revert without --no-edit (no editor runs here)",
            ));
        }
        self.pick(&args, Pick::Revert).await
    }

    async fn pick(&self, args: &Args<'_>, how: Pick) -> Run {
        let command = how.command();
        if let Some(control) = CONTROLS.into_iter().find(|c| args.has(&[c])) {
            if let Some(other) = CONTROLS
                .into_iter()
                .find(|c| *c != control && args.has(&[c]))
            {
                return Err(Out::error(
                    format!("error: {control} is incompatible with {other}\n"),
                    129,
                ));
            }
            if let Some(given) = args.operands.first().or(args.paths.first()) {
                return Err(Out::error(
                    format!("error: {control} does not take arguments ({given})\n"),
                    129,
                ));
            }
            return self.pick_control(control, how).await;
        }
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
        if !repo.unmerged().is_empty() {
            let doing = match how {
                Pick::CherryPick => "Cherry-picking",
                Pick::Revert => "Reverting",
            };
            return Err(Out::error(
                format!(
                    "error: {doing} is not possible because you have unmerged files.\n\
                     hint: Fix them up in the work tree, and then use 'git add/rm <file>'\n\
                     hint: as appropriate to mark resolution and make a commit.\n\
                     fatal: {command} failed\n"
                ),
                128,
            ));
        }
        if repo.state_file("MERGE_HEAD").await.is_some() {
            return Err(Out::fatal(format!(
                "not supported by the sandbox's git: {command} while a merge is in progress (MERGE_HEAD)"
            )));
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
        let merged = self.three_way(base, &ours, theirs, &label).await?;
        let Merged {
            result,
            notes,
            conflicted,
            worktree,
            ..
        } = &merged;
        let touched: Vec<&String> = ours
            .keys()
            .chain(result.keys())
            .chain(worktree.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|p| {
                (ours.get(*p) != result.get(*p) || worktree.contains_key(*p))
                    && state.changed_in_work(p)
            })
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
        if !conflicted.is_empty() {
            // Stopped: the merged paths taken, the conflicted ones left
            // with their markers and stages, the message kept for the
            // commit that concludes it.
            let mut index = state.index.clone();
            self.apply_merged(&mut index, &ours, &merged).await?;
            self.stop_on_conflicts(index, &merged).await?;
            repo.write_state_file(how.head_file(), &format!("{oid}\n"))
                .await
                .map_err(failed)?;
            repo.write_state_file("MERGE_MSG", &with_conflicts(&message, conflicted))
                .await
                .map_err(failed)?;
            let verb = match how {
                Pick::CherryPick => "apply",
                Pick::Revert => "revert",
            };
            let mut err = format!("error: could not {verb} {short}... {first_line}\n");
            if repo.config_bool("advice.mergeconflict", true).await {
                let _ = write!(
                    err,
                    "hint: After resolving the conflicts, mark them with\n\
                     hint: \"git add/rm <pathspec>\", then run\n\
                     hint: \"git {command} --continue\".\n\
                     hint: You can instead skip this commit with \"git {command} --skip\".\n\
                     hint: To abort and get back to the state before \"git {command}\",\n\
                     hint: run \"git {command} --abort\".\n\
                     hint: Disable this message with \"git config advice.mergeConflict false\"\n"
                );
            }
            return Err(Out {
                stdout: notes.clone(),
                stderr: err,
                code: 1,
            });
        }
        if *result == ours {
            // Nothing left to commit: git's sequencer hands over to
            // `commit`, which says so (a cherry-pick waits to be skipped).
            if how == Pick::CherryPick {
                repo.write_state_file("CHERRY_PICK_HEAD", &format!("{oid}\n"))
                    .await
                    .map_err(failed)?;
            }
            repo.write_state_file("MERGE_MSG", &message)
                .await
                .map_err(failed)?;
            self.write_auto_merge(result).await?;
            let Err(refused) = self.commit(&[]).await else {
                return Err(failed("an empty pick was committed".to_string()));
            };
            return Err(Out {
                stdout: format!("{notes}{}", refused.stdout),
                ..refused
            });
        }
        self.move_to(result).await?;
        let tree = repo.write_tree(result).await.map_err(failed)?;
        let new = self
            .write_commit(&tree, std::slice::from_ref(&head), &message, author)
            .await?;
        let written = repo.commit(&new).await.map_err(failed)?;
        repo.advance_head(&new, &format!("{command}: {}", written.subject()))
            .await
            .map_err(failed)?;
        repo.clear_operation_state().await;
        let summary = self.commit_summary(&new, &ours, result, true).await?;
        Ok(Out::ok(format!("{notes}{summary}")))
    }

    /// `--continue`, `--skip`, `--abort`, `--quit` of a pick that stopped
    /// (git's single-pick sequencer: no `.git/sequencer` is ever made).
    async fn pick_control(&self, control: &str, how: Pick) -> Run {
        let repo = &self.repo;
        let waiting = repo.state_file(how.head_file()).await.is_some();
        let either = repo.state_file("CHERRY_PICK_HEAD").await.is_some()
            || repo.state_file("REVERT_HEAD").await.is_some();
        match control {
            "--quit" => {
                repo.clear_operation_state().await;
                Ok(Out::ok(""))
            }
            "--continue" if either => {
                // What git runs: a commit of the prepared message, its
                // comments (the conflicts' list) dropped.
                self.commit(&["--no-edit".to_string(), "--cleanup=strip".to_string()])
                    .await
            }
            "--abort" if either => {
                self.reset_merge_to_head().await?;
                Ok(Out::ok(""))
            }
            "--skip" if waiting => {
                self.reset_merge_to_head().await?;
                Ok(Out::ok(""))
            }
            "--skip" => Err(how.failed(&format!("no {} in progress", how.command()))),
            _ => Err(how.failed("no cherry-pick or revert in progress")),
        }
    }
}
