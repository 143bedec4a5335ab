//! How a file is diffed, as its `diff` attribute says (`.gitattributes`,
//! `.git/info/attributes`): `-diff` (or `binary`) shows it as binary,
//! `diff=NAME` picks one of git's built-in drivers, whose pattern finds
//! the "function" line a hunk header names (git's userdiff.c).

use std::sync::Arc;

use regex::bytes::Regex;

/// One rule of an attributes file: a pattern and what it sets `diff` to.
struct Rule {
    pattern: String,
    /// The directory of the file that holds the rule ("" for the root).
    dir: String,
    diff: Diff,
}

#[derive(Clone)]
enum Diff {
    /// `-diff`, `binary`: never shown as text.
    Binary,
    /// `diff`, `!diff`: text, with git's default function lines.
    Text,
    Driver(String),
}

/// What a file's `diff` attribute makes of it.
#[derive(Clone, Default)]
pub enum Driver {
    #[default]
    Default,
    Binary,
    Funcname(Arc<Funcname>),
}

/// A driver's function-line patterns, tried in order: a match of a
/// negated one (`!`) means the line is none.
pub struct Funcname {
    patterns: Vec<(bool, Regex)>,
}

impl Funcname {
    /// The text a hunk header shows for `line`, if it is a function
    /// line: the pattern's first group (else all it matched), trailing
    /// space trimmed, at most 80 bytes (diff.c's `ff_regexp`).
    pub fn of(&self, line: &[u8]) -> Option<String> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (negated, captures) = self
            .patterns
            .iter()
            .find_map(|(negated, regex)| Some((*negated, regex.captures(line)?)))?;
        if negated {
            return None;
        }
        let found = captures.get(1).or_else(|| captures.get(0))?.as_bytes();
        let mut end = found.len().min(80);
        while end > 0 && found[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        Some(String::from_utf8_lossy(&found[..end]).into_owned())
    }
}

/// The rules of every attributes file that applies, lowest precedence
/// first.
#[derive(Default)]
pub struct Attributes {
    rules: Vec<Rule>,
}

impl Attributes {
    /// Adds the rules of an attributes file in `dir` (relative to the
    /// work tree; `.git/info/attributes` counts as the root's, added last).
    pub fn add(&mut self, text: &str, dir: &str) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let Some(pattern) = words.next() else {
                continue;
            };
            // The last word about `diff` on a line decides.
            let diff = words.fold(None, |found, word| match word {
                "binary" | "-diff" => Some(Diff::Binary),
                "diff" | "!diff" => Some(Diff::Text),
                word => match word.strip_prefix("diff=") {
                    Some(name) => Some(Diff::Driver(name.to_string())),
                    None => found,
                },
            });
            if let Some(diff) = diff {
                self.rules.push(Rule {
                    pattern: pattern.to_string(),
                    dir: dir.to_string(),
                    diff,
                });
            }
        }
    }

    /// How `path` (relative to the work tree) is diffed; an error is the
    /// name of a driver that is none of git's built-in ones this git has.
    pub fn driver(&self, path: &str) -> Result<Driver, String> {
        let found = self
            .rules
            .iter()
            .rev()
            .find(|rule| matches(&rule.pattern, &rule.dir, path));
        match found.map(|rule| &rule.diff) {
            None | Some(Diff::Text) => Ok(Driver::Default),
            Some(Diff::Binary) => Ok(Driver::Binary),
            Some(Diff::Driver(name)) => builtin(name)
                .map(Driver::Funcname)
                .ok_or_else(|| name.clone()),
        }
    }
}

/// Whether an attributes pattern in `dir` matches `path`: without a `/`
/// it matches the name at any depth below `dir`, with one the path
/// relative to `dir` (git's rules, as for `.gitignore`).
fn matches(pattern: &str, dir: &str, path: &str) -> bool {
    let relative = match dir {
        "" => path,
        dir => match path.strip_prefix(dir).and_then(|p| p.strip_prefix('/')) {
            Some(rest) => rest,
            None => return false,
        },
    };
    let pattern = pattern.strip_suffix('/').unwrap_or(pattern);
    if pattern.trim_start_matches('/').contains('/') || pattern.starts_with('/') {
        wildmatch(pattern.trim_start_matches('/'), relative, true)
    } else {
        let name = relative.rsplit('/').next().unwrap_or(relative);
        wildmatch(pattern, name, false)
    }
}

/// git's wildmatch for the forms attributes use: `*` (not across `/`
/// when `pathname`), `**` (across), `?`, and `[…]` sets.
fn wildmatch(pattern: &str, text: &str, pathname: bool) -> bool {
    let mut source = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**/` matches any number of directories, `**` anything.
                if chars.get(i + 2) == Some(&'/') {
                    source.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    source.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => source.push_str(if pathname { "[^/]*" } else { ".*" }),
            '?' => source.push_str(if pathname { "[^/]" } else { "." }),
            '[' => match chars[i..].iter().position(|&c| c == ']') {
                Some(close) if close > 1 => {
                    let set: String = chars[i + 1..i + close].iter().collect();
                    let set = set.replacen('!', "^", usize::from(set.starts_with('!')));
                    source.push('[');
                    source.push_str(&set.replace('\\', "\\\\"));
                    source.push(']');
                    i += close + 1;
                    continue;
                }
                _ => source.push_str("\\["),
            },
            c => source.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    source.push('$');
    regex::Regex::new(&source).is_ok_and(|r| r.is_match(text))
}

/// git's built-in drivers' function patterns (userdiff.c), compiled
/// once; `None` for a name git has no driver of.
fn builtin(name: &str) -> Option<Arc<Funcname>> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static DRIVERS: OnceLock<HashMap<&'static str, Arc<Funcname>>> = OnceLock::new();
    DRIVERS
        .get_or_init(|| {
            BUILTIN
                .iter()
                .filter_map(|(name, ignore_case, source)| {
                    let patterns = source
                        .split('\n')
                        .map(|pattern| {
                            let (negated, pattern) = match pattern.strip_prefix('!') {
                                Some(rest) => (true, rest),
                                None => (false, pattern),
                            };
                            regex::bytes::RegexBuilder::new(pattern)
                                .case_insensitive(*ignore_case)
                                .build()
                                .ok()
                                .map(|r| (negated, r))
                        })
                        .collect::<Option<Vec<_>>>()?;
                    Some((*name, Arc::new(Funcname { patterns })))
                })
                .collect()
        })
        .get(name)
        .cloned()
}

/// git's built-in drivers this git has not built (their patterns need a
/// regex dialect the regex crate does not read).
pub const NOT_BUILT: &[&str] = &["csharp"];

/// (name, case-insensitive, patterns separated by newlines), as git's
/// userdiff.c has them. A driver whose patterns the regex crate cannot
/// read is left out, and so refused rather than shown wrongly.
const BUILTIN: &[(&str, bool, &str)] = &[
    (
        "ada",
        true,
        "!^(.*[ \t])?(is[ \t]+new|renames|is[ \t]+separate)([ \t].*)?$\n!^[ \t]*with[ \t].*$\n^[ \t]*((procedure|function)[ \t]+.*)$\n^[ \t]*((package|protected|task)[ \t]+.*)$",
    ),
    (
        "bash",
        false,
        "^[ \t]*(([a-zA-Z_][a-zA-Z0-9_]*[ \t]*\\([ \t]*\\))|(function[ \t]+[a-zA-Z_][a-zA-Z0-9_]*(([ \t]*\\([ \t]*\\))|([ \t]+))))[ \t]*(\\{|\\(\\(?|\\[\\[)",
    ),
    (
        "bibtex",
        false,
        "(@[a-zA-Z]{1,}[ \t]*\\{{0,1}[ \t]*[^ \t\"@',\\#}{~%]*).*$",
    ),
    (
        "cpp",
        false,
        "!^[ \t]*[A-Za-z_][A-Za-z_0-9]*:[[:space:]]*($|/[/*])\n^((::[[:space:]]*)?[A-Za-z_].*)$",
    ),
    ("css", true, "![:;][[:space:]]*$\n^[:\\[@.#]?[_a-z0-9].*$"),
    (
        "dts",
        false,
        "!;\n!=\n^[ \t]*((/[ \t]*\\{|&?[a-zA-Z_]).*)",
    ),
    (
        "elixir",
        false,
        "^[ \t]*((def(macro|module|impl|protocol|p)?|test)[ \t].*)$",
    ),
    (
        "fortran",
        true,
        "!^([C*]|[ \t]*!)\n!^[ \t]*MODULE[ \t]+PROCEDURE[ \t]\n^[ \t]*((END[ \t]+)?(PROGRAM|MODULE|BLOCK[ \t]+DATA|([^!'\" \t]+[ \t]+)*(SUBROUTINE|FUNCTION))[ \t]+[A-Z].*)$",
    ),
    (
        "fountain",
        true,
        "^((\\.[^.]|(int|ext|est|int\\.?/ext|i/e)[. ]).*)$",
    ),
    (
        "golang",
        false,
        "^[ \t]*(func[ \t]*.*(\\{[ \t]*)?)\n^[ \t]*(type[ \t].*(struct|interface)[ \t]*(\\{[ \t]*)?)",
    ),
    ("html", false, "^[ \t]*(<[Hh][1-6]([ \t].*)?>.*)$"),
    (
        "java",
        false,
        "!^[ \t]*(catch|do|for|if|instanceof|new|return|switch|throw|while)\n^[ \t]*(([a-z-]+[ \t]+)*(class|enum|interface|record)[ \t]+.*)$\n^[ \t]*(([A-Za-z_<>&][\\]\\[?&<>.,A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$",
    ),
    (
        "kotlin",
        false,
        "^[ \t]*(([a-z]+[ \t]+)*(fun|class|interface)[ \t]+.*)$",
    ),
    ("markdown", false, "^ {0,3}#{1,6}[ \t].*"),
    (
        "matlab",
        false,
        "^[[:space:]]*((classdef|function)[[:space:]].*)$|^(%%%?|##)[[:space:]].*$",
    ),
    (
        "objc",
        false,
        "!^[ \t]*(do|for|if|else|return|switch|while)\n^[ \t]*([-+][ \t]*\\([ \t]*[A-Za-z_][A-Za-z_0-9* \t]*\\)[ \t]*[A-Za-z_].*)$\n^[ \t]*(([A-Za-z_][A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$\n^(@(implementation|interface|protocol)[ \t].*)$",
    ),
    (
        "pascal",
        false,
        "^(((class[ \t]+)?(procedure|function)|constructor|destructor|interface|implementation|initialization|finalization)[ \t]*.*)$\n^(.*=[ \t]*(class|record).*)$",
    ),
    (
        "perl",
        false,
        "^package .*\n^sub [[:alnum:]_':]+[ \t]*(\\([^)]*\\)[ \t]*)?(:[^;#]*)?(\\{[ \t]*)?(#.*)?$\n^(BEGIN|END|INIT|CHECK|UNITCHECK|AUTOLOAD|DESTROY)[ \t]*(\\{[ \t]*)?(#.*)?$\n^=head[0-9] .*",
    ),
    (
        "php",
        false,
        "^[\t ]*(((public|protected|private|static|abstract|final)[\t ]+)*function.*)$\n^[\t ]*((((final|abstract)[\t ]+)?class|enum|interface|trait).*)$",
    ),
    ("python", false, "^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"),
    ("ruby", false, "^[ \t]*((class|module|def)[ \t].*)$"),
    (
        "rust",
        false,
        "^[\t ]*((pub(\\([^\\)]+\\))?[\t ]+)?((async|const|unsafe|extern([\t ]+\"[^\"]+\"))[\t ]+)?(struct|enum|union|mod|trait|fn|impl|macro_rules!)[< \t]+[^;]*)$",
    ),
    (
        "scheme",
        false,
        "^[\t ]*(\\(((define|def(struct|syntax|class|method|rules|record|proto|alias)?)[-*/ \t]|(library|module|struct|class)[*+ \t]).*)$",
    ),
    ("tex", false, "^(\\\\((sub)*section|chapter|part)\\*{0,1}\\{.*)$"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_driver_compiles() {
        for (name, _, _) in BUILTIN {
            assert!(builtin(name).is_some(), "{name}");
        }
        assert!(builtin("csharp").is_none());
    }

    #[test]
    fn drivers_name_function_lines_as_git_does() {
        let elixir = builtin("elixir").unwrap();
        assert_eq!(
            elixir.of(b"  defp group(clauses) do  \n").as_deref(),
            Some("defp group(clauses) do")
        );
        assert_eq!(elixir.of(b"  x = 1\n"), None);
        let cpp = builtin("cpp").unwrap();
        assert_eq!(cpp.of(b"label:\n"), None);
        assert_eq!(
            cpp.of(b"int main(void)\n").as_deref(),
            Some("int main(void)")
        );
    }

    #[test]
    fn attributes_pick_the_last_matching_rule() {
        let mut attributes = Attributes::default();
        attributes.add("*.ex diff=elixir\n*.png binary\ndocs/*.md -diff\n", "");
        attributes.add("*.ex diff\n", "vendor");
        assert!(matches!(
            attributes.driver("lib/a.ex"),
            Ok(Driver::Funcname(_))
        ));
        assert!(matches!(
            attributes.driver("vendor/x/a.ex"),
            Ok(Driver::Default)
        ));
        assert!(matches!(attributes.driver("img/a.png"), Ok(Driver::Binary)));
        assert!(matches!(attributes.driver("docs/a.md"), Ok(Driver::Binary)));
        assert!(matches!(
            attributes.driver("docs/deep/a.md"),
            Ok(Driver::Default)
        ));
        attributes.add("*.cs diff=csharp\n", "");
        assert!(attributes.driver("a.cs").is_err());
    }
}
