//! What git's `transfer.fsckObjects` checks of each tree a fetch or clone
//! receives, before any of it is kept: entry names git would never check
//! out (`paths.rs`: `.git` in any spelling, `.`, `..`, empty, with `/`
//! or `\`), the same name twice, `.gitmodules` as a symlink, and modes
//! of no kind git knows. Old tools' `100664` and zero-padded `040000`
//! pass, as git checks them out.

use std::collections::HashSet;

use crate::paths::{bad_component, is_dot_gitmodules};

/// A problem as fsck names it: its message id and text.
pub type Problem = (&'static str, String);

/// The first problem of a tree's body; else the objects it names as
/// `.gitmodules`, to be checked in turn.
pub fn check_tree(body: &[u8]) -> Result<Vec<[u8; 20]>, Problem> {
    let mut seen = HashSet::new();
    let mut gitmodules = Vec::new();
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
        if is_dot_gitmodules(&name) {
            gitmodules.push(rest[nul + 1..nul + 21].try_into().expect("20 bytes"));
        }
        if !seen.insert(name.into_owned()) {
            return Err(("duplicateEntries", "contains duplicate file entries".into()));
        }
        rest = &rest[nul + 21..];
    }
    Ok(gitmodules)
}

/// A `.gitmodules` blob's submodules: names that could lead out of
/// `.git/modules/` (`..`, absolute), and paths or URLs git would take
/// for options (a leading `-`).
pub fn check_gitmodules(body: &[u8]) -> Result<(), Problem> {
    let text = String::from_utf8_lossy(body);
    for (key, value) in super::config::parse(&text) {
        let key = super::config::canonical(&key);
        let Some(rest) = key.strip_prefix("submodule.") else {
            continue;
        };
        let Some((name, field)) = rest.rsplit_once('.') else {
            continue;
        };
        let bad_name = name.starts_with('/') || name.split(['/', '\\']).any(|part| part == "..");
        if bad_name {
            return Err((
                "gitmodulesName",
                format!("disallowed submodule name: {name}"),
            ));
        }
        if field == "path" && value.starts_with('-') {
            return Err((
                "gitmodulesPath",
                format!("disallowed submodule path: {value}"),
            ));
        }
        if field == "url" && value.starts_with('-') {
            return Err((
                "gitmodulesUrl",
                format!("disallowed submodule url: {value}"),
            ));
        }
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
        assert_eq!(
            check_tree(&tree(&[("100644", ".gitmodules")])).unwrap(),
            vec![[7u8; 20]]
        );
    }

    #[test]
    fn submodules_that_could_lead_out_are_refused() {
        let id = |text: &str| check_gitmodules(text.as_bytes()).err().map(|e| e.0);
        let good = "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n";
        assert_eq!(id(good), None);
        assert_eq!(
            id("[submodule \"../../modules/evil\"]\n\tpath = x\n"),
            Some("gitmodulesName")
        );
        assert_eq!(
            id("[submodule \"a\\\\..\"]\n\tpath = x\n"),
            Some("gitmodulesName")
        );
        assert_eq!(
            id("[submodule \"a\"]\n\tpath = -x\n"),
            Some("gitmodulesPath")
        );
        assert_eq!(
            id("[submodule \"a\"]\n\turl = --upload-pack=x\n"),
            Some("gitmodulesUrl")
        );
    }
}
