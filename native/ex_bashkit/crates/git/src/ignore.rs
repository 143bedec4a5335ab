//! Which untracked files git leaves out: `.gitignore` in each directory,
//! `.git/info/exclude` and `core.excludesFile`, matched by `gix-ignore`
//! (git's own wildmatch rules, on buffers).

use std::path::Path;

use gix_ignore::glob::pattern::Case;
use gix_ignore::search::Ignore as Parse;

#[derive(Default)]
pub struct Ignores {
    search: gix_ignore::Search,
    /// Where each `.gitignore` was added from (`/DIR/.gitignore`).
    gitignores: std::collections::HashSet<std::path::PathBuf>,
}

impl Ignores {
    /// Patterns that apply to the whole work tree (`info/exclude`,
    /// `core.excludesFile`), lowest precedence first.
    pub fn add_global(&mut self, bytes: &[u8], source: &Path) {
        let _ = self
            .search
            .add_patterns_buffer(bytes, source, None, Parse::default());
    }

    /// A `.gitignore` at `dir` (relative to the work tree, `""` for its
    /// root). Add a directory's after its parent's: the last added wins.
    pub fn add_gitignore(&mut self, bytes: &[u8], dir: &str) {
        let root = Path::new("/");
        let source = root.join(dir).join(".gitignore");
        self.gitignores.insert(source.clone());
        let _ = self
            .search
            .add_patterns_buffer(bytes, source, Some(root), Parse::default());
    }

    /// Whether `path` (relative to the work tree) is ignored by a pattern
    /// of its own; a caller walking the tree handles ignored parents.
    pub fn ignored(&self, path: &str, is_dir: bool) -> bool {
        self.matching(path, is_dir)
            .is_some_and(|found| !found.negative)
    }

    /// The last pattern that matches `path`, negated or not.
    pub fn matching(&self, path: &str, is_dir: bool) -> Option<Matched> {
        let found = self.search.pattern_matching_relative_path(
            path.into(),
            Some(is_dir),
            Case::Sensitive,
        )?;
        // A `.gitignore` by its path in the work tree, others as given.
        let source = found
            .source
            .map(|source| match self.gitignores.contains(source) {
                true => source.strip_prefix("/").unwrap_or(source).to_path_buf(),
                false => source.to_path_buf(),
            });
        Some(Matched {
            source,
            line: found.sequence_number,
            pattern: found.pattern.to_string(),
            negative: found.pattern.is_negative(),
        })
    }
}

/// A pattern that matched, as `check-ignore -v` names it.
pub struct Matched {
    /// The file it came from: a `.gitignore` relative to the work tree,
    /// `info/exclude` and `core.excludesFile` as read.
    pub source: Option<std::path::PathBuf>,
    pub line: usize,
    /// As git prints it: `!` for a negation, `/` for a directory's.
    pub pattern: String,
    pub negative: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_rules() {
        let mut ignores = Ignores::default();
        ignores.add_global(b"*.swp\n", Path::new("/repo/.git/info/exclude"));
        ignores.add_gitignore(b"*.log\n!keep.log\nbuild/\n/top.txt\ndoc/**/*.tmp\n", "");
        ignores.add_gitignore(b"local.txt\n", "src");
        assert!(ignores.ignored("a.log", false));
        assert!(ignores.ignored("deep/b.log", false));
        assert!(!ignores.ignored("keep.log", false));
        assert!(ignores.ignored("build", true));
        assert!(!ignores.ignored("build", false));
        assert!(ignores.ignored("top.txt", false));
        assert!(!ignores.ignored("sub/top.txt", false));
        assert!(ignores.ignored("doc/a/b/c.tmp", false));
        assert!(ignores.ignored("src/local.txt", false));
        assert!(!ignores.ignored("local.txt", false));
        assert!(ignores.ignored("x.swp", false));
    }
}
