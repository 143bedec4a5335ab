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

/// A path as git prints it (`core.quotePath`): in double quotes with C
/// escapes when it holds a control character, `"` or `\\`, or (`high`,
/// git's default) a byte past ASCII, as octal.
pub fn quote_path(path: &str, high: bool) -> std::borrow::Cow<'_, str> {
    let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f || (high && b >= 0x80);
    if !path.bytes().any(needs) {
        return std::borrow::Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 8);
    out.push('"');
    for c in path.chars() {
        let mut bytes = [0u8; 4];
        for &b in c.encode_utf8(&mut bytes).as_bytes() {
            match b {
                b'\x07' => out.push_str("\\a"),
                b'\x08' => out.push_str("\\b"),
                b'\t' => out.push_str("\\t"),
                b'\n' => out.push_str("\\n"),
                b'\x0b' => out.push_str("\\v"),
                b'\x0c' => out.push_str("\\f"),
                b'\r' => out.push_str("\\r"),
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                b if needs(b) => out.push_str(&format!("\\{b:03o}")),
                _ => {
                    out.push(c);
                    break;
                }
            }
        }
    }
    out.push('"');
    std::borrow::Cow::Owned(out)
}

/// `prefix` and `path` as git's diff headers print them: quoted whole
/// (`"a/caf\303\251"`) when the path needs quoting.
pub fn quote_prefixed(prefix: &str, path: &str, high: bool) -> String {
    match quote_path(path, high) {
        std::borrow::Cow::Borrowed(_) => format!("{prefix}{path}"),
        std::borrow::Cow::Owned(_) => quote_path(&format!("{prefix}{path}"), high).into_owned(),
    }
}

/// [`quote_path`], and in quotes too when it holds a space (`git status
/// --short`'s rule).
pub fn quote_spaced(path: &str, high: bool) -> std::borrow::Cow<'_, str> {
    match quote_path(path, high) {
        std::borrow::Cow::Borrowed(plain) if plain.contains(' ') => {
            std::borrow::Cow::Owned(format!("\"{plain}\""))
        }
        quoted => quoted,
    }
}

/// How many columns `text` takes in a terminal, as git's
/// `utf8_strwidth` counts (a character each; wide ones two).
pub fn display_width(text: &str) -> usize {
    text.chars()
        .map(|c| match c as u32 {
            0x1100..=0x115F
            | 0x2E80..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFF60
            | 0xFFE0..=0xFFE6
            | 0x1F300..=0x1F64F
            | 0x1F900..=0x1F9FF
            | 0x20000..=0x3FFFD => 2,
            0x0300..=0x036F | 0x200B..=0x200F => 0,
            _ => 1,
        })
        .sum()
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

    #[test]
    fn paths_are_quoted_as_git_quotes_them() {
        assert_eq!(quote_path("plain/file.txt", true), "plain/file.txt");
        assert_eq!(quote_path("caf\u{e9}.txt", true), "\"caf\\303\\251.txt\"");
        assert_eq!(quote_path("caf\u{e9}.txt", false), "caf\u{e9}.txt");
        assert_eq!(quote_path("a\tb\"c\\", false), "\"a\\tb\\\"c\\\\\"");
        assert_eq!(display_width("caf\u{e9}"), 4);
        assert_eq!(display_width("\u{65e5}\u{672c}"), 4);
    }
}
