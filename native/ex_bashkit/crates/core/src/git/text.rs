//! Small text forms of git's: its date, pathspec globs, and the basic
//! regular expressions `git grep` takes by default.

/// `Thu Nov 26 17:40:15 2026 +0000`, git's default date, in UTC.
pub fn date(seconds: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    format!(
        "{} {} {} {:02}:{:02}:{:02} {} +0000",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        year
    )
}

/// Year, month, day of a count of days since 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
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
    fn dates_read_as_git_writes_them() {
        assert_eq!(date(0), "Thu Jan 1 00:00:00 1970 +0000");
        assert_eq!(date(1_795_714_815), "Thu Nov 26 17:40:15 2026 +0000");
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
