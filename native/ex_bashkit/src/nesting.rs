//! A linear pre-scan that refuses absurdly nested scripts before bashkit
//! parses them.
//!
//! bashkit's own AST depth limit does not cover every construct: 100,000
//! nested extglob groups took 70 s, 100,000 nested `$((` 29 s, and a
//! megabyte of `{` hundreds of megabytes in its parser, none of it
//! interruptible. Real scripts nest a handful of levels. So before parsing,
//! the depth of `(` and `{` outside single quotes and comments is measured,
//! and a script nesting deeper than the limit is refused at once.
//!
//! The scan is deliberately simple: it does not understand heredocs or
//! `case` patterns. Closing characters never push the depth below zero, and
//! text it misreads as quoted only hides nesting from it, so what it gets
//! wrong can let a script through, never refuse a script that nests less
//! than the limit.

/// `Err(message)` when `script` nests `(` or `{` more than `max_depth` deep.
pub fn check(script: &str, max_depth: usize) -> Result<(), String> {
    let mut depth = 0usize;
    let mut single = false;
    let mut double = false;
    let mut comment = false;
    let mut previous = b'\n';
    let mut bytes = script.bytes();
    while let Some(byte) = bytes.next() {
        if comment {
            comment = byte != b'\n';
        } else if single {
            single = byte != b'\'';
        } else {
            match byte {
                b'\\' => {
                    // The escaped byte is literal.
                    previous = bytes.next().unwrap_or(b'\\');
                    continue;
                }
                b'\'' if !double => single = true,
                b'"' => double = !double,
                b'#' if !double && previous.is_ascii_whitespace() => comment = true,
                b'(' | b'{' => {
                    depth += 1;
                    if depth > max_depth {
                        return Err(format!(
                            "the script nests ( or {{ more than {max_depth} levels deep \
                             (limit :max_ast_depth, checked before parsing at twice its value)"
                        ));
                    }
                }
                b')' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        previous = byte;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

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
        for open in ["$((", "+(", "{", "(", "$("] {
            let script = format!("echo {}", open.repeat(1_000));
            let refused = check(&script, 200).unwrap_err();
            assert!(
                refused.contains("limit :max_ast_depth"),
                "{open}: {refused}"
            );
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
    }
}
