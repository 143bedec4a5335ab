//! What git's `transfer.fsckObjects` checks of each tree a fetch or clone
//! receives, before any of it is kept: entry names git would never check
//! out (`git_paths.rs`: `.git` in any spelling, `.`, `..`, empty, with `/`
//! or `\`), the same name twice, `.gitmodules` as a symlink, and modes
//! of no kind git knows. Old tools' `100664` and zero-padded `040000`
//! pass, as git checks them out.

use std::collections::HashSet;

use crate::git_paths::{bad_component, is_dot_gitmodules};

/// The first problem of a tree's body, as fsck names it: its message id
/// and text.
pub fn check_tree(body: &[u8]) -> Result<(), (&'static str, String)> {
    let mut seen = HashSet::new();
    let mut rest = body;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ');
        let nul = rest.iter().position(|&b| b == 0);
        let (Some(space), Some(nul)) = (space, nul) else {
            return Err(("badTree", "cannot be parsed as a tree".into()));
        };
        if nul < space || rest.len() < nul + 21 {
            return Err(("badTree", "cannot be parsed as a tree".into()));
        }
        let mode = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or(("badFilemode", "contains bad file modes".to_string()))?;
        let name = String::from_utf8_lossy(&rest[space + 1..nul]);
        if !matches!(mode & 0o170000, 0o100000 | 0o120000 | 0o040000 | 0o160000) {
            return Err(("badFilemode", "contains bad file modes".into()));
        }
        if let Some((id, text)) = bad_component(&name) {
            return Err((id, text.into()));
        }
        if mode & 0o170000 == 0o120000 && is_dot_gitmodules(&name) {
            return Err(("gitmodulesSymlink", ".gitmodules is a symbolic link".into()));
        }
        if !seen.insert(name.into_owned()) {
            return Err(("duplicateEntries", "contains duplicate file entries".into()));
        }
        rest = &rest[nul + 21..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (mode, name) in entries {
            body.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            body.extend_from_slice(&[7u8; 20]);
        }
        body
    }

    #[test]
    fn hostile_trees_are_refused_and_real_ones_pass() {
        let id = |entries: &[(&str, &str)]| check_tree(&tree(entries)).err().map(|e| e.0);
        assert_eq!(
            id(&[("100644", "a"), ("40000", "src"), ("120000", "l")]),
            None
        );
        assert_eq!(
            id(&[("100664", "old"), ("040000", "padded"), ("160000", "sub")]),
            None
        );
        assert_eq!(id(&[("40000", ".git")]), Some("hasDotgit"));
        assert_eq!(id(&[("40000", ".GIT")]), Some("hasDotgit"));
        assert_eq!(id(&[("40000", "git~1")]), Some("hasDotgit"));
        assert_eq!(id(&[("40000", "..")]), Some("hasDotdot"));
        assert_eq!(id(&[("40000", ".")]), Some("hasDot"));
        assert_eq!(id(&[("100644", "")]), Some("emptyName"));
        assert_eq!(id(&[("100644", "a/b")]), Some("fullPathname"));
        assert_eq!(
            id(&[("100644", "a"), ("40000", "a")]),
            Some("duplicateEntries")
        );
        assert_eq!(id(&[("120000", ".gitmodules")]), Some("gitmodulesSymlink"));
        assert_eq!(id(&[("777", "x")]), Some("badFilemode"));
        assert_eq!(check_tree(b"100644 x").err().map(|e| e.0), Some("badTree"));
    }
}
