//! Small text forms of git's: its date, pathspec globs, and the basic
//! regular expressions `git grep` takes by default.

/// `Thu Nov 26 17:40:15 2026 +0100`, git's default date: the moment in
/// the zone it was recorded in.
pub fn date(seconds: i64, zone: &str) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let local = seconds + zone_offset(zone).unwrap_or(0);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    format!(
        "{} {} {} {:02}:{:02}:{:02} {} {zone}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        year
    )
}

/// `2005-04-07 15:13:13 -0700`, git's `iso` date (`%ai`).
pub fn iso_date(seconds: i64, zone: &str) -> String {
    let local = seconds + zone_offset(zone).unwrap_or(0);
    let (year, month, day) = civil(local.div_euclid(86_400));
    let secs = local.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} {zone}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// A date as `--date=iso-strict` (`%aI`) shows it: `T` between date and
/// time, the zone as `+hh:mm`, or `Z` for UTC.
pub fn strict_iso_date(seconds: i64, zone: &str) -> String {
    let iso = iso_date(seconds, zone);
    let (date, rest) = iso.split_at(10);
    let time = &rest[1..9];
    let zone = match zone_offset(zone) {
        Some(0) | None => "Z".to_string(),
        Some(_) => format!("{}:{}", &zone[..3], &zone[3..]),
    };
    format!("{date}T{time}{zone}")
}

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

/// `+0130` → seconds east of UTC.
pub fn zone_offset(zone: &str) -> Option<i64> {
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits[2..].parse().ok()?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A date as `GIT_AUTHOR_DATE` takes one: git's internal form
/// (`1700000000 +0100`, `@1700000000`), ISO 8601 (`2005-04-07T22:13:13`,
/// a space for the `T`, a zone of `Z`, `+02:00` or `+0200`) and RFC 2822
/// (`Thu, 07 Apr 2005 22:13:13 +0200`). Answers seconds and the zone as
/// git writes it.
pub fn parse_date(text: &str) -> Option<(i64, String)> {
    let text = text.trim();
    let zone_of = |z: Option<&str>| -> Option<String> {
        match z {
            None | Some("Z") | Some("z") | Some("UTC") | Some("GMT") => Some("+0000".to_string()),
            Some(z) => {
                zone_offset(z)?;
                Some(z.replace(':', ""))
            }
        }
    };
    // Internal: seconds and an optional zone.
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let seconds = first.strip_prefix('@').unwrap_or(first);
    if seconds.len() >= 8 && seconds.bytes().all(|b| b.is_ascii_digit()) {
        let zone = zone_of(words.next())?;
        return Some((seconds.parse().ok()?, zone));
    }
    // RFC 2822: an optional weekday, then day month year time zone.
    let rfc: Vec<&str> = text
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_start_matches(',')
        .split_whitespace()
        .collect();
    if let [day, month, year, time, rest @ ..] = rfc.as_slice() {
        const MONTHS: [&str; 12] = [
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ];
        if let Some(m) = MONTHS
            .iter()
            .position(|m| month.to_lowercase().starts_with(m))
        {
            let seconds = clock(day.parse().ok()?, m as i64 + 1, year.parse().ok()?, time)?;
            let zone = zone_of(rest.first().copied())?;
            return Some((seconds - zone_offset(&zone)?, zone));
        }
    }
    // ISO 8601.
    let (date, rest) = text.split_at(text.find(['T', ' ']).unwrap_or(text.len()));
    let mut ymd = date.split('-');
    let (year, month, day) = (
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
    );
    let rest = rest.trim_start_matches(['T', ' ']);
    let zone_at = rest.find(['Z', 'z', '+', '-', ' ']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(zone_at);
    let time = if time.is_empty() { "00:00:00" } else { time };
    let zone = zone.trim();
    let zone = zone_of((!zone.is_empty()).then_some(zone))?;
    let seconds = clock(day, month, year, time)?;
    Some((seconds - zone_offset(&zone)?, zone))
}

/// Seconds of a civil date and `HH:MM[:SS]`, taken as UTC.
fn clock(day: i64, month: i64, year: i64, time: &str) -> Option<i64> {
    let mut hms = time.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let m: i64 = hms.next()?.parse().ok()?;
    let s: i64 = match hms.next() {
        Some(s) => s.split('.').next()?.parse().ok()?,
        None => 0,
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
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
        assert_eq!(date(0, "+0000"), "Thu Jan 1 00:00:00 1970 +0000");
        assert_eq!(
            date(1_795_714_815, "+0000"),
            "Thu Nov 26 17:40:15 2026 +0000"
        );
        assert_eq!(
            date(1_795_714_815, "-0530"),
            "Thu Nov 26 12:10:15 2026 -0530"
        );
    }

    #[test]
    fn messages_clean_up_as_git_cleans_them() {
        assert_eq!(
            clean_message("\n\n  subject  \n\n\n\nbody \n\n"),
            "  subject\n\nbody\n"
        );
        assert_eq!(clean_message("  \n"), "");
    }

    #[test]
    fn dates_parse_as_git_author_date_takes_them() {
        let want = Some((1_112_911_993, "-0700".to_string()));
        assert_eq!(parse_date("1112911993 -0700"), want);
        assert_eq!(parse_date("@1112911993 -0700"), want);
        assert_eq!(parse_date("2005-04-07T15:13:13-07:00"), want);
        assert_eq!(parse_date("2005-04-07 15:13:13 -0700"), want);
        assert_eq!(parse_date("Thu, 07 Apr 2005 15:13:13 -0700"), want);
        assert_eq!(
            parse_date("2005-04-07T22:13:13Z"),
            Some((1_112_911_993, "+0000".to_string()))
        );
        assert_eq!(parse_date("yesterday-ish"), None);
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
