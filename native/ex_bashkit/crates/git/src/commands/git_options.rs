//! The options real git has, per command (`git_options.txt`, written by
//! `scripts/git_options.exs` from git's own help): what tells an option
//! the sandbox's git has not built from one git does not have at all.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

const TABLE: &str = include_str!("git_options.txt");

fn table() -> &'static BTreeMap<&'static str, BTreeSet<&'static str>> {
    static PARSED: OnceLock<BTreeMap<&'static str, BTreeSet<&'static str>>> = OnceLock::new();
    PARSED.get_or_init(|| {
        TABLE
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.split_once(": "))
            .map(|(command, options)| (command, options.split(' ').collect()))
            .collect()
    })
}

/// Whether git's `command` has the option `name` (without its value).
pub(super) fn git_has(command: &str, name: &str) -> bool {
    table()
        .get(command)
        .is_some_and(|options| options.contains(name))
}

/// Whether real git has the command `name` (its `--list-cmds=main`).
pub(super) fn git_has_command(name: &str) -> bool {
    git_has("(commands)", name)
}

#[cfg(test)]
mod tests {
    use super::git_has;

    #[test]
    fn reads_the_table() {
        assert!(git_has("add", "--dry-run"));
        assert!(git_has("add", "-N"));
        assert!(git_has("stash push", "--keep-index"));
        assert!(git_has("log", "--since"));
        assert!(!git_has("add", "--bogus"));
        assert!(!git_has("frobnicate", "-n"));
        assert!(super::git_has_command("bisect"));
        assert!(!super::git_has_command("frobnicate"));
    }
}
