//! Small text forms of git's: commit messages, pathspec globs, and the
//! basic regular expressions `git grep` takes by default.

/// A commit message as git's `whitespace` clean-up leaves it (the mode
/// for `-m` and `-F`): trailing spaces cut, blank lines at either end
/// dropped and runs of them folded into one, a final newline.
pub fn clean_message(message: &str) -> String {
    let mut out = String::new();
    let mut blank_run = false;
    for line in message.lines().map(str::trim_end) {
        if line.is_empty() {
            blank_run = !out.is_empty();
            continue;
        }
        if blank_run {
            out.push('\n');
            blank_run = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// How `commit --cleanup=` leaves a message (no editor runs here).
#[derive(Clone, Copy)]
pub enum Cleanup {
    /// As given, ended by a newline.
    Verbatim,
    /// [`clean_message`]'s.
    Whitespace,
    /// `whitespace`, and lines starting with `#` dropped.
    Strip,
}

impl Cleanup {
    pub fn apply(self, message: &str) -> String {
        match self {
            Cleanup::Verbatim if message.is_empty() || message.ends_with('\n') => {
                message.to_string()
            }
            Cleanup::Verbatim => format!("{message}\n"),
            Cleanup::Whitespace => clean_message(message),
            Cleanup::Strip => {
                let kept: Vec<&str> = message.lines().filter(|l| !l.starts_with('#')).collect();
                clean_message(&kept.join("\n"))
            }
        }
    }
}

/// A pathspec glob: `*` and `?` match any characters, `/` included, as
/// git's do.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// A POSIX basic regular expression in the `regex` crate's syntax: `\(`,
/// `\)`, `\{`, `\}`, `\|`, `\+`, `\?` are the operators, their bare
/// characters literal.
pub fn basic_regex(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(op @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => out.push(op),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_clean_up_as_git_cleans_them() {
        assert_eq!(
            clean_message("\n\n  subject  \n\n\n\nbody \n\n"),
            "  subject\n\nbody\n"
        );
        assert_eq!(clean_message("  \n"), "");
    }

    #[test]
    fn globs_cross_slashes() {
        assert!(glob("*.txt", "a/b.txt"));
        assert!(glob("src/?.rs", "src/a.rs"));
        assert!(!glob("*.rs", "a.txt"));
    }

    #[test]
    fn basic_regexes_swap_escaped_and_bare_operators() {
        assert_eq!(basic_regex(r"a\(b\)\+"), "a(b)+");
        assert_eq!(basic_regex("f(x)"), r"f\(x\)");
        assert_eq!(basic_regex(r"\."), r"\.");
    }
}
