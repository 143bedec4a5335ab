//! git's rules for names in a work tree, as its `verify_path` applies
//! them before it writes the index or a file (`core.protectNTFS` and
//! `core.protectHFS`, which git turns on by default): no `.git` component
//! in any spelling a filesystem might take for it, no `.`, `..` or empty
//! component, no `\` or NUL, `.gitmodules` never a symlink. One place for
//! our git (trees it checks out, packs it receives) and for the mounts'
//! guard (`metadata_guard.rs`, which refuses such names to every writer).

/// Code points HFS+ ignores when it compares names, so `.g\u{200c}it`
/// is `.git` there (git's `is_hfs_dotgit`).
fn hfs_ignorable(c: char) -> bool {
    matches!(c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// `name` as HFS+ and NTFS would compare it with a plain name: ignorable
/// code points dropped, ASCII lowercased, trailing spaces and dots gone.
fn folded(name: &str) -> String {
    let kept: String = name
        .chars()
        .filter(|c| !hfs_ignorable(*c))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    kept.trim_end_matches([' ', '.']).to_string()
}

/// NTFS's spellings of `base`: `base` followed only by spaces and dots,
/// or by an alternate data stream (`.git::$INDEX_ALLOCATION`).
fn ntfs_spelling(lower: &str, base: &str) -> bool {
    let Some(rest) = lower.strip_prefix(base) else {
        return false;
    };
    let before_stream = rest.split(':').next().unwrap_or("");
    before_stream.chars().all(|c| c == ' ' || c == '.')
}

/// Whether a path component names a repository's git directory on some
/// filesystem: `.git` in any case, with HFS+'s ignorable code points,
/// NTFS's trailing dots and spaces, streams, or its short name `git~1`.
pub fn is_dot_git(name: &str) -> bool {
    let lower: String = name
        .chars()
        .filter(|c| !hfs_ignorable(*c))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    folded(name) == ".git" || ntfs_spelling(&lower, ".git") || ntfs_spelling(&lower, "git~1")
}

/// Whether a path component names `.gitmodules` on some filesystem
/// (including NTFS's short names `gitmod~1` and `gi7eba~1`).
pub fn is_dot_gitmodules(name: &str) -> bool {
    let lower = folded(name);
    lower == ".gitmodules"
        || ["gitmod~", "gi7eba~"].iter().any(|short| {
            lower
                .strip_prefix(short)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Why one component of a work-tree path is one git never writes, if it
/// is: fsck's message id and its text.
pub fn bad_component(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "" => Some(("emptyName", "contains empty pathname")),
        "." => Some(("hasDot", "contains '.'")),
        ".." => Some(("hasDotdot", "contains '..'")),
        _ if name.contains('/') => Some(("fullPathname", "contains full pathnames")),
        _ if name.contains('\\') => Some(("hasBackslash", "contains backslash")),
        _ if name.contains('\0') => Some(("hasNul", "contains NUL")),
        _ if is_dot_git(name) => Some(("hasDotgit", "contains '.git'")),
        _ => None,
    }
}

/// Whether git would write `path` (`/`-separated, relative to the work
/// tree) with `mode`: every component good, `.gitmodules` not a link.
pub fn verify_path(path: &str, mode: u32) -> bool {
    let mut parts = path.split('/').peekable();
    while let Some(part) = parts.next() {
        if bad_component(part).is_some() {
            return false;
        }
        if parts.peek().is_none() && mode == 0o120000 && is_dot_gitmodules(part) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_dot_git_is_refused() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git. . ",
            "git~1",
            "GIT~1",
            ".git::$INDEX_ALLOCATION",
            ".git:stream",
            ".g\u{200c}it",
            "\u{feff}.git",
            ".gi\u{206f}T",
        ] {
            assert!(is_dot_git(name), "{name:?}");
            assert!(
                !verify_path(&format!("a/{name}/config"), 0o100644),
                "{name:?}"
            );
        }
        for name in [
            ".github",
            ".gitignore",
            "git",
            ".git-foo",
            "a.git",
            "git~2",
            ".gitx",
        ] {
            assert!(!is_dot_git(name), "{name:?}");
        }
    }

    #[test]
    fn paths_follow_git_rules() {
        assert!(verify_path("src/main.rs", 0o100644));
        assert!(verify_path(".gitmodules", 0o100644));
        assert!(verify_path(".github/workflows/ci.yml", 0o100644));
        for bad in ["", "a//b", "./a", "a/../b", "..", "a\\b", "a\0b", "a/"] {
            assert!(!verify_path(bad, 0o100644), "{bad:?}");
        }
        assert!(!verify_path(".gitmodules", 0o120000));
        assert!(!verify_path("sub/.GITMODULES ", 0o120000));
        assert!(!verify_path("GITMOD~1", 0o120000));
        assert!(verify_path("link", 0o120000));
    }
}
