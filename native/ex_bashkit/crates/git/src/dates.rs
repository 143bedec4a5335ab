//! Dates as git reads and prints them: the forms `GIT_AUTHOR_DATE` and
//! `--date=` take, `--since`'s approximate dates, and each `--date=` format.

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

/// How `--date=` shows a moment.
#[derive(Clone, PartialEq)]
pub enum DateMode {
    /// `Thu Nov 26 17:40:15 2026 +0100`
    Default,
    /// `2026-11-26 17:40:15 +0100`
    Iso,
    /// `2026-11-26T17:40:15+01:00`
    IsoStrict,
    /// `Thu, 26 Nov 2026 17:40:15 +0100`
    Rfc,
    /// `2026-11-26`
    Short,
    /// `1795714815 +0100`
    Raw,
    /// `1795714815`
    Unix,
    /// `3 days ago`
    Relative,
    /// `format:%Y-%m-%d %H:%M`: strftime's conversions in the zone the
    /// moment was recorded in, as git's `strbuf_addftime` in the C locale.
    Format(String),
}

impl DateMode {
    /// `--date=NAME`'s mode, for the names git takes that this git shows
    /// (`format:` with the conversions [`strftime`] has).
    pub fn named(name: &str) -> Option<DateMode> {
        if let Some(format) = name.strip_prefix("format:") {
            return strftime(format, 0, "+0000").map(|_| DateMode::Format(format.to_string()));
        }
        Some(match name {
            "default" => DateMode::Default,
            "iso" | "iso8601" => DateMode::Iso,
            "iso-strict" | "iso8601-strict" => DateMode::IsoStrict,
            "rfc" | "rfc2822" => DateMode::Rfc,
            "short" => DateMode::Short,
            "raw" => DateMode::Raw,
            "unix" => DateMode::Unix,
            "relative" => DateMode::Relative,
            _ => return None,
        })
    }

    /// `seconds` recorded in `zone`, shown in this mode (`now` for
    /// `relative`).
    pub fn show(&self, seconds: i64, zone: &str, now: i64) -> String {
        match self {
            DateMode::Default => date(seconds, zone),
            DateMode::Iso => iso_date(seconds, zone),
            DateMode::IsoStrict => strict_iso_date(seconds, zone),
            DateMode::Rfc => {
                let parts: Vec<String> =
                    date(seconds, zone).split(' ').map(str::to_string).collect();
                // `Thu Nov 26 17:40:15 2026 +0100` → `Thu, 26 Nov 2026 17:40:15 +0100`
                format!(
                    "{}, {} {} {} {} {}",
                    parts[0], parts[2], parts[1], parts[4], parts[3], parts[5]
                )
            }
            DateMode::Short => iso_date(seconds, zone)[..10].to_string(),
            DateMode::Raw => format!("{seconds} {zone}"),
            DateMode::Unix => seconds.to_string(),
            DateMode::Relative => relative(seconds, now),
            DateMode::Format(format) => strftime(format, seconds, zone).unwrap_or_default(),
        }
    }
}

/// `format` as C's `strftime` in the C locale writes `seconds` in `zone`,
/// with git's own `%z` (the zone as recorded), `%Z` (nothing: git has no
/// name for a recorded zone) and `%s` (the seconds); nothing for a
/// conversion it does not know or a flag (`%-d`, `%Ey`).
pub fn strftime(format: &str, seconds: i64, zone: &str) -> Option<String> {
    const DAYS: [&str; 7] = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let local = seconds + zone_offset(zone).unwrap_or(0);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    let (hour, minute, second) = (secs / 3600, secs % 3600 / 60, secs % 60);
    // 1970-01-01 was a Thursday.
    let weekday = (days + 4).rem_euclid(7);
    let yday = days - days_from_civil(year, 1, 1);
    let hour12 = match hour % 12 {
        0 => 12,
        h => h,
    };
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let conversion = chars.next()?;
        let part = match conversion {
            'a' => DAYS[weekday as usize][..3].to_string(),
            'A' => DAYS[weekday as usize].to_string(),
            'b' | 'h' => MONTHS[(month - 1) as usize][..3].to_string(),
            'B' => MONTHS[(month - 1) as usize].to_string(),
            'c' => strftime("%a %b %e %H:%M:%S %Y", seconds, zone)?,
            'C' => format!("{:02}", year.div_euclid(100)),
            'd' => format!("{day:02}"),
            'D' | 'x' => strftime("%m/%d/%y", seconds, zone)?,
            'e' => format!("{day:>2}"),
            'F' => format!("{year:04}-{month:02}-{day:02}"),
            'H' => format!("{hour:02}"),
            'I' => format!("{hour12:02}"),
            'j' => format!("{:03}", yday + 1),
            'k' => format!("{hour:>2}"),
            'l' => format!("{hour12:>2}"),
            'm' => format!("{month:02}"),
            'M' => format!("{minute:02}"),
            'n' => "\n".to_string(),
            'p' => (if hour < 12 { "AM" } else { "PM" }).to_string(),
            'P' => (if hour < 12 { "am" } else { "pm" }).to_string(),
            'r' => strftime("%I:%M:%S %p", seconds, zone)?,
            'R' => format!("{hour:02}:{minute:02}"),
            's' => seconds.to_string(),
            'S' => format!("{second:02}"),
            't' => "\t".to_string(),
            'T' | 'X' => format!("{hour:02}:{minute:02}:{second:02}"),
            'u' => (if weekday == 0 { 7 } else { weekday }).to_string(),
            'U' => format!("{:02}", (yday + 7 - weekday) / 7),
            'w' => weekday.to_string(),
            'W' => format!("{:02}", (yday + 7 - (weekday + 6) % 7) / 7),
            'y' => format!("{:02}", year.rem_euclid(100)),
            'Y' => year.to_string(),
            'z' => zone.to_string(),
            'Z' => String::new(),
            '%' => "%".to_string(),
            _ => return None,
        };
        out.push_str(&part);
    }
    Some(out)
}

/// git's `relative` date: `90 seconds` is `2 minutes`, and so on up.
pub fn relative(seconds: i64, now: i64) -> String {
    if seconds > now {
        return "in the future".to_string();
    }
    let plural = |n: i64, unit: &str| match n {
        1 => format!("1 {unit}"),
        n => format!("{n} {unit}s"),
    };
    let mut diff = now - seconds;
    if diff < 90 {
        return format!("{} ago", plural(diff, "second"));
    }
    diff = (diff + 30) / 60;
    if diff < 90 {
        return format!("{} ago", plural(diff, "minute"));
    }
    diff = (diff + 30) / 60;
    if diff < 36 {
        return format!("{} ago", plural(diff, "hour"));
    }
    diff = (diff + 12) / 24;
    if diff < 14 {
        return format!("{} ago", plural(diff, "day"));
    }
    if diff < 70 {
        return format!("{} ago", plural((diff + 3) / 7, "week"));
    }
    if diff < 365 {
        return format!("{} ago", plural((diff + 15) / 30, "month"));
    }
    if diff < 1825 {
        let months = (diff * 12 * 2 + 365) / (365 * 2);
        let (years, months) = (months / 12, months % 12);
        return match months {
            0 => format!("{} ago", plural(years, "year")),
            m => format!("{}, {} ago", plural(years, "year"), plural(m, "month")),
        };
    }
    format!("{} ago", plural((diff + 183) / 365, "year"))
}

/// A date as `--since`/`--until` take one, for the forms this git reads
/// (UTC): git's own and ISO forms, a day (`2026-06-01`, at the time of
/// day it is now, as git takes it), seconds since 1970, `N units ago`,
/// `yesterday`, `today`, `now`.
pub fn approxidate(text: &str, now: i64) -> Option<i64> {
    let text = text.trim().to_ascii_lowercase();
    let time_of_day = now.rem_euclid(86_400);
    if let Some(seconds) = day_and_time(&text, time_of_day) {
        return Some(seconds);
    }
    if let Some((seconds, _)) = parse_date(&text) {
        return Some(seconds);
    }
    if text.len() >= 9 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    match text.as_str() {
        "now" | "today" => return Some(now),
        "yesterday" => return Some(now - 86_400),
        _ => {}
    }
    let words: Vec<&str> = text
        .split([' ', '.', '_'])
        .filter(|w| !w.is_empty())
        .collect();
    let [count, unit, "ago"] = words.as_slice() else {
        return None;
    };
    let count: i64 = match *count {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        n => n.parse().ok()?,
    };
    let unit = unit.strip_suffix('s').unwrap_or(unit);
    let seconds = match unit {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" => 3600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        "month" | "year" => {
            // Calendar months, the time of day kept.
            let months = if unit == "year" { count * 12 } else { count };
            let (y, m, d) = civil(now.div_euclid(86_400));
            let total = y * 12 + (m - 1) - months;
            let (y, m) = (total.div_euclid(12), total.rem_euclid(12) + 1);
            return Some(days_from_civil(y, m, d) * 86_400 + time_of_day);
        }
        _ => return None,
    };
    Some(now - count * seconds)
}

/// `2026-06-01` (at `time_of_day`), `2026-06-01 12:00[:00]`, in UTC.
fn day_and_time(text: &str, time_of_day: i64) -> Option<i64> {
    let (day, rest) = text.split_at_checked(10)?;
    let mut parts = day.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let midnight = days_from_civil(y, m, d) * 86_400;
    let rest = rest.trim_start_matches(['t', ' ']);
    if rest.is_empty() {
        return Some(midnight + time_of_day);
    }
    let mut hms = rest.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min) = (hms.next()??, hms.next()??);
    let s = hms.next().unwrap_or(Some(0))?;
    if hms.next().is_some() {
        return None;
    }
    Some(midnight + h * 3600 + min * 60 + s)
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
    fn relative_dates_round_as_git_rounds_them() {
        let now = 2_000_000_000;
        assert_eq!(relative(now - 89, now), "89 seconds ago");
        assert_eq!(relative(now - 90, now), "2 minutes ago");
        assert_eq!(relative(now - 3 * 86_400, now), "3 days ago");
        assert_eq!(relative(now - 20 * 86_400, now), "3 weeks ago");
        assert_eq!(relative(now - 400 * 86_400, now), "1 year, 1 month ago");
        assert_eq!(relative(now - 3000 * 86_400, now), "8 years ago");
        assert_eq!(relative(now + 10, now), "in the future");
    }

    #[test]
    fn approximate_dates_read_as_git_reads_them() {
        // 2026-11-29 05:15:06 UTC
        let now = 1_795_929_306;
        let day = days_from_civil(2024, 1, 2) * 86_400;
        assert_eq!(
            approxidate("2024-01-02", now),
            Some(day + 5 * 3600 + 15 * 60 + 6)
        );
        assert_eq!(approxidate("2024-01-02 12:00", now), Some(day + 12 * 3600));
        assert_eq!(approxidate("1704196800", now), Some(1_704_196_800));
        assert_eq!(approxidate("2.weeks.ago", now), Some(now - 14 * 86_400));
        assert_eq!(approxidate("3 days ago", now), Some(now - 3 * 86_400));
        assert_eq!(
            approxidate("1 month ago", now),
            Some(days_from_civil(2026, 10, 29) * 86_400 + 5 * 3600 + 15 * 60 + 6)
        );
        assert_eq!(approxidate("next tuesday", now), None);
    }

    #[test]
    fn strftime_writes_as_c_does_in_the_recorded_zone() {
        let format = "%Y-%m-%d %H:%M:%S %a %j %U %W %u %w %p %I %e %k %l %C %y %D %c";
        assert_eq!(
            strftime(format, 1_600_000_000, "+0200").as_deref(),
            Some("2020-09-13 14:26:40 Sun 257 37 36 7 0 PM 02 13 14  2 20 20 09/13/20 Sun Sep 13 14:26:40 2020")
        );
        assert_eq!(
            strftime("%U %W %j %a", 0, "+0000").as_deref(),
            Some("00 00 001 Thu")
        );
        let new_year = days_from_civil(2023, 1, 1) * 86_400;
        assert_eq!(
            strftime("%U %W", new_year, "+0000").as_deref(),
            Some("01 00")
        );
        assert_eq!(
            strftime("%z|%Z|%s|%%", 5, "-0130").as_deref(),
            Some("-0130||5|%")
        );
        assert_eq!(strftime("%-d", 0, "+0000"), None);
        assert_eq!(strftime("%", 0, "+0000"), None);
    }
}
