//! A linear pre-scan that refuses absurdly nested scripts before bashkit
//! parses them.
//!
//! bashkit's own AST depth limit does not cover every construct: 100,000
//! nested extglob groups took 70 s, 100,000 nested `$((` 29 s, and a
//! megabyte of `{` hundreds of megabytes in its parser, none of it
//! interruptible. Worse, its parser recurses once per `time` prefix with no
//! depth limit at all (0.20.2, `parse_time`), so 30,000 of them in a 150 KB
//! script overflowed a 64 MiB stack and aborted the VM. Real scripts nest a
//! handful of levels. So before parsing, the scan counts how deep a script
//! nests, and a script nesting deeper than the limit is refused at once.
//!
//! A level is an open `(` or `{` (outside single quotes and comments), a
//! compound command (`if`, `while`, `until`, `for`, `select`, `case`, up to
//! its `fi`, `done` or `esac`), or a `time`/`coproc` prefix (up to the end
//! of its pipeline: `;`, `&`, `&&`, `||`, a newline, or the bracket that
//! encloses it). Keywords count only where a command starts, and unquoted.
//! Heredoc bodies are skipped.
//!
//! The scan is deliberately simple, and wrong only in the safe direction
//! where it can be: a closer it cannot match pops whatever level is open,
//! and closing never goes below zero, so text it misreads mostly hides
//! nesting from it (bashkit's own limits still apply), rather than refuse
//! a script that nests less than the limit.

use crate::error::SessionError;

/// What opened a level.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Bracket,
    /// The inner `(` of `((` or `$((`: there `<<` is a shift, no heredoc.
    Arithmetic,
    Compound,
    /// `time` or `coproc`: open until its pipeline ends.
    Prefix,
}

/// A heredoc whose body starts at the next newline.
struct Heredoc {
    delimiter: Vec<u8>,
    strip_tabs: bool,
}

/// What the next word is, after `<`, `>` or `<<`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Word,
    RedirectTarget,
    HeredocDelimiter { strip_tabs: bool },
}

struct Scan<'s> {
    bytes: &'s [u8],
    at: usize,
    max_depth: usize,
    levels: Vec<Level>,
    /// The word being read: its bytes (with quotes removed), and whether
    /// any of it was quoted or escaped (a quoted word is no keyword).
    word: Vec<u8>,
    quoted: bool,
    in_word: bool,
    /// Whether the next word starts a command.
    command: bool,
    /// After `time`: its options (`-p`) keep the command position.
    after_time: bool,
    expect: Expect,
    heredocs: Vec<Heredoc>,
}

/// Refuses a `script` that nests more than `max_depth` levels deep.
pub fn check(script: &str, max_depth: usize) -> Result<(), SessionError> {
    let mut scan = Scan {
        bytes: script.as_bytes(),
        at: 0,
        max_depth,
        levels: Vec::new(),
        word: Vec::new(),
        quoted: false,
        in_word: false,
        command: true,
        after_time: false,
        expect: Expect::Word,
        heredocs: Vec::new(),
    };
    scan.run()
}

impl Scan<'_> {
    fn run(&mut self) -> Result<(), SessionError> {
        let mut double = false;
        while let Some(&byte) = self.bytes.get(self.at) {
            self.at += 1;
            if double {
                match byte {
                    b'"' => double = false,
                    b'\\' => {
                        if let Some(&escaped) = self.bytes.get(self.at) {
                            self.at += 1;
                            self.word_byte(escaped, true);
                        }
                    }
                    // "$(( … ))" and "${ … }" nest inside double quotes.
                    b'(' => self.open_paren()?,
                    b'{' => self.open(Level::Bracket)?,
                    b')' | b'}' => self.close_bracket(),
                    _ => self.word_byte(byte, true),
                }
                continue;
            }
            match byte {
                b'\\' => {
                    let escaped = self.bytes.get(self.at).copied();
                    self.at += 1;
                    match escaped {
                        Some(b'\n') => continue, // a line continuation
                        Some(escaped) => self.word_byte(escaped, true),
                        None => {}
                    }
                }
                b'\'' => self.single_quoted(),
                b'"' => {
                    double = true;
                    self.in_word = true;
                    self.quoted = true;
                }
                b'#' if !self.in_word => self.skip_comment(),
                b' ' | b'\t' | b'\r' => self.end_word()?,
                b'\n' => {
                    self.end_word()?;
                    self.end_pipeline();
                    self.skip_heredoc_bodies();
                }
                b';' => {
                    self.end_word()?;
                    self.end_pipeline();
                }
                b'&' => {
                    self.end_word()?;
                    if self.bytes.get(self.at) == Some(&b'>') {
                        self.at += 1; // `&>`: a redirection
                        self.expect = Expect::RedirectTarget;
                    } else {
                        self.end_pipeline();
                    }
                }
                b'|' => {
                    self.end_word()?;
                    if self.bytes.get(self.at) == Some(&b'|') {
                        self.at += 1;
                        self.end_pipeline();
                    } else {
                        // `time` covers the whole pipeline: its level stays.
                        self.command = true;
                    }
                }
                b'(' => {
                    self.end_word()?;
                    self.open_paren()?;
                    self.command = true;
                }
                b'{' => {
                    self.end_word()?;
                    self.open(Level::Bracket)?;
                    self.command = true;
                }
                b')' | b'}' => {
                    self.end_word()?;
                    self.close_bracket();
                    // `(x) done`, `a) cmd` in a case: a command may follow.
                    self.command = true;
                }
                b'<' | b'>' => {
                    self.end_word()?;
                    self.redirection(byte);
                }
                _ => self.word_byte(byte, false),
            }
        }
        Ok(())
    }

    /// Adds `byte` to the word; a quoted or escaped byte makes the word no
    /// keyword (it still spells a heredoc delimiter).
    fn word_byte(&mut self, byte: u8, quoted: bool) {
        self.in_word = true;
        self.quoted |= quoted;
        // Only short words can be keywords; delimiters are kept whole.
        if self.word.len() < 64 || self.expect != Expect::Word {
            self.word.push(byte);
        }
    }

    /// `(`, or the inner `(` of `((`.
    fn open_paren(&mut self) -> Result<(), SessionError> {
        let arithmetic = self.at >= 2 && self.bytes[self.at - 2] == b'(';
        self.open(if arithmetic {
            Level::Arithmetic
        } else {
            Level::Bracket
        })
    }

    fn redirection(&mut self, byte: u8) {
        let next = self.bytes.get(self.at).copied();
        if byte == b'<' && next == Some(b'<') && self.levels.contains(&Level::Arithmetic) {
            self.at += 1; // a shift
            return;
        }
        if byte == b'<' && next == Some(b'<') {
            self.at += 1;
            match self.bytes.get(self.at) {
                Some(b'<') => {
                    self.at += 1; // `<<<`: a here-string
                    self.expect = Expect::RedirectTarget;
                }
                Some(b'-') => {
                    self.at += 1;
                    self.expect = Expect::HeredocDelimiter { strip_tabs: true };
                }
                _ => self.expect = Expect::HeredocDelimiter { strip_tabs: false },
            }
            return;
        }
        if matches!(next, Some(b'>' | b'&' | b'|')) {
            self.at += 1;
        }
        // `<(` and `>(` are process substitutions: the `(` opens a level.
        if self.bytes.get(self.at) != Some(&b'(') {
            self.expect = Expect::RedirectTarget;
        }
    }

    fn end_word(&mut self) -> Result<(), SessionError> {
        if !self.in_word {
            return Ok(());
        }
        let word = std::mem::take(&mut self.word);
        let quoted = std::mem::replace(&mut self.quoted, false);
        self.in_word = false;
        match std::mem::replace(&mut self.expect, Expect::Word) {
            Expect::HeredocDelimiter { strip_tabs } => {
                self.heredocs.push(Heredoc {
                    delimiter: word,
                    strip_tabs,
                });
                return Ok(());
            }
            Expect::RedirectTarget => return Ok(()),
            Expect::Word => {}
        }
        if !self.command {
            return Ok(());
        }
        if quoted {
            self.command = false;
            return Ok(());
        }
        let after_time = std::mem::replace(&mut self.after_time, false);
        match word.as_slice() {
            b"time" | b"coproc" => {
                self.open(Level::Prefix)?;
                self.after_time = true;
            }
            b"if" | b"while" | b"until" => self.open(Level::Compound)?,
            b"for" | b"select" | b"case" => {
                self.open(Level::Compound)?;
                self.command = false;
            }
            b"fi" | b"done" | b"esac" => {
                self.pop_prefixes();
                self.levels.pop();
            }
            b"!" | b"then" | b"do" | b"else" | b"elif" => {}
            option if after_time && option.starts_with(b"-") => self.after_time = true,
            _ => self.command = false,
        }
        Ok(())
    }

    fn open(&mut self, level: Level) -> Result<(), SessionError> {
        self.levels.push(level);
        if self.levels.len() > self.max_depth {
            return Err(SessionError::TooDeep {
                max_depth: self.max_depth,
            });
        }
        Ok(())
    }

    fn close_bracket(&mut self) {
        self.pop_prefixes();
        self.levels.pop();
    }

    fn pop_prefixes(&mut self) {
        while self.levels.last() == Some(&Level::Prefix) {
            self.levels.pop();
        }
    }

    /// `;`, `&`, `&&`, `||` or a newline: prefixes end, a command starts.
    fn end_pipeline(&mut self) {
        self.pop_prefixes();
        self.command = true;
        self.after_time = false;
    }

    /// A single-quoted part of a word, up to its closing quote.
    fn single_quoted(&mut self) {
        let rest = &self.bytes[self.at..];
        let end = rest.iter().position(|&b| b == b'\'').unwrap_or(rest.len());
        self.in_word = true;
        self.quoted = true;
        if self.expect != Expect::Word {
            self.word.extend_from_slice(&rest[..end]);
        }
        self.at = (self.at + end + 1).min(self.bytes.len());
    }

    fn skip_comment(&mut self) {
        match self.bytes[self.at..].iter().position(|&b| b == b'\n') {
            // The newline itself ends the command.
            Some(end) => self.at += end,
            None => self.at = self.bytes.len(),
        }
    }

    /// At the start of a line: skips the bodies of the heredocs announced
    /// on the line before, each up to its delimiter line.
    fn skip_heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            while self.at < self.bytes.len() {
                let rest = &self.bytes[self.at..];
                let end = rest.iter().position(|&b| b == b'\n');
                let line = &rest[..end.unwrap_or(rest.len())];
                self.at += end.map_or(rest.len(), |end| end + 1);
                let line = if heredoc.strip_tabs {
                    let tabs = line.iter().take_while(|&&b| b == b'\t').count();
                    &line[tabs..]
                } else {
                    line
                };
                if line == heredoc.delimiter.as_slice() {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check, SessionError};

    #[test]
    fn ordinary_scripts_pass() {
        let script = r#"
            f() { if [[ $(( (1 + 2) * 3 )) -gt 0 ]]; then echo "ok (fine)"; fi; }
            cat <<'EOF' > /x.json
            {"a": {"b": [1, 2, {"c": 3}]}}
            EOF
            case $x in a) echo a ;; b) echo b ;; esac
            echo '((((((((((' "}}}}" \( # ((((((((((((
        "#;
        assert!(check(script, 8).is_ok());
    }

    #[test]
    fn deep_nesting_is_refused() {
        for open in [
            "$((", "+(", "{", "(", "$(", "time ", "time -p ", "! time ", "if ",
        ] {
            let script = format!("echo x; {}", open.repeat(1_000));
            let refused = check(&script, 200).unwrap_err();
            assert!(
                matches!(refused, SessionError::TooDeep { max_depth: 200 }),
                "{open}: {refused:?}"
            );
            assert!(refused.to_string().contains("limit :max_ast_depth"));
        }
    }

    #[test]
    fn quoted_and_commented_text_does_not_count() {
        let deep = "(".repeat(1_000);
        assert!(check(&format!("echo '{deep}'"), 10).is_ok());
        assert!(check(&format!("echo x # {deep}"), 10).is_ok());
        let escaped = "\\(".repeat(1_000);
        assert!(check(&format!("echo {escaped}"), 10).is_ok());
        // Parentheses inside double quotes are real ("$((…))").
        assert!(check(&format!("echo \"{deep}\""), 10).is_err());
    }

    #[test]
    fn balanced_siblings_do_not_add_up() {
        let script = "(true); ".repeat(10_000);
        assert!(check(&script, 2).is_ok());
        let timed = "time true; time -p ls | wc -l\nif true; then time :; fi\n".repeat(1_000);
        assert!(check(&timed, 3).is_ok());
        let loops = "for x in 1 2; do while false; do :; done; done\n".repeat(1_000);
        assert!(check(&loops, 2).is_ok());
    }

    #[test]
    fn keywords_count_only_where_a_command_starts() {
        let words = "if while time case ".repeat(1_000);
        assert!(check(&format!("echo {words}"), 10).is_ok());
        assert!(check(&format!("echo 'time' \"if\" {words}"), 10).is_ok());
        assert!(check(&"\"time\" ".repeat(1_000), 10).is_ok());
    }

    #[test]
    fn heredoc_bodies_are_not_code() {
        let python = "if x:\n    while y:\n        time(z)\n".repeat(1_000);
        let script = format!(
            "cat > /a.py <<EOF\n{python}EOF\ncat <<-'END' | wc -l\n\t(((\n\tEND\necho done"
        );
        assert!(check(&script, 4).is_ok());
    }

    #[test]
    fn prefixes_interleaved_with_compound_commands_add_up() {
        let script = "time if true; then ".repeat(1_000);
        assert!(check(&script, 200).is_err());
        let piped = "true | time ".repeat(1_000);
        assert!(check(&piped, 200).is_err());
    }
}
