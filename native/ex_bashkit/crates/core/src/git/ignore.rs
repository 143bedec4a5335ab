//! Which untracked files git leaves out: `.gitignore` in each directory,
//! `.git/info/exclude` and `core.excludesFile`, matched by `gix-ignore`
//! (git's own wildmatch rules, on buffers).

use std::path::Path;

use gix_ignore::glob::pattern::Case;
use gix_ignore::search::Ignore as Parse;

#[derive(Default)]
pub struct Ignores {
    search: gix_ignore::Search,
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
        let _ = self
            .search
            .add_patterns_buffer(bytes, source, Some(root), Parse::default());
    }

    /// Whether `path` (relative to the work tree) is ignored by a pattern
    /// of its own; a caller walking the tree handles ignored parents.
    pub fn ignored(&self, path: &str, is_dir: bool) -> bool {
        self.search
            .pattern_matching_relative_path(path.into(), Some(is_dir), Case::Sensitive)
            .is_some_and(|found| !found.pattern.is_negative())
    }
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
