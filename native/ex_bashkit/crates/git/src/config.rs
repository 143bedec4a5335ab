//! `.git/config` in git's syntax, read, and edited the way `git config`
//! edits it: a changed key is rewritten on its own line, a new one goes
//! at the end of its section; comments, layout and every other line stay
//! as the user (or real git) left them.

/// A line's section (`remote.origin` for `[remote "origin"]`) and, for a
/// `key = value` line, its key and value.
enum Line {
    Section(String),
    Entry(String, String),
    Other,
}

fn section_name(header: &str) -> String {
    match header.split_once(char::is_whitespace) {
        Some((name, sub)) => {
            let sub = sub.trim();
            let sub = sub
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(sub)
                .replace("\\\"", "\"")
                .replace("\\\\", "\\");
            format!("{}.{sub}", name.to_lowercase())
        }
        // `[section.sub]`, the old form: the subsection is lowercased.
        None => header.to_lowercase(),
    }
}

/// A value as git reads it: quotes removed, escapes applied, a comment
/// outside quotes cut off.
fn value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c if c.is_whitespace() && !quoted => {
                pending_space.push(c);
                continue;
            }
            c => {
                out.push_str(&pending_space);
                out.push(c);
            }
        }
        pending_space.clear();
    }
    out
}

fn classify(line: &str) -> Line {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            return Line::Section(section_name(&rest[..end]));
        }
    }
    if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
        return Line::Other;
    }
    match trimmed.split_once('=') {
        Some((key, raw)) => Line::Entry(key.trim().to_lowercase(), value(raw)),
        // A key alone is `true`.
        None => Line::Entry(trimmed.to_lowercase(), "true".to_string()),
    }
}

/// `section.key` (`section.sub.key` for `[section "sub"]`) → value, in
/// the file's order.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut entries = Vec::new();
    for line in text.lines() {
        match classify(line) {
            Line::Section(name) => section = name,
            Line::Entry(key, value) => entries.push((format!("{section}.{key}"), value)),
            Line::Other => {}
        }
    }
    entries
}

/// A key as git compares them: section and name lowercased, the
/// subsection as written.
pub fn canonical(name: &str) -> String {
    match name.split_once('.') {
        None => name.to_lowercase(),
        Some((section, rest)) => match rest.rsplit_once('.') {
            Some((sub, key)) => format!("{}.{sub}.{}", section.to_lowercase(), key.to_lowercase()),
            None => format!("{}.{}", section.to_lowercase(), rest.to_lowercase()),
        },
    }
}

fn render_value(value: &str) -> String {
    let needs_quotes = value.starts_with(char::is_whitespace)
        || value.ends_with(char::is_whitespace)
        || value.contains(['#', ';']);
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t");
    if needs_quotes {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

fn header(section: &str) -> String {
    match section.split_once('.') {
        Some((name, sub)) => format!(
            "[{name} \"{}\"]",
            sub.replace('\\', "\\\\").replace('"', "\\\"")
        ),
        None => format!("[{section}]"),
    }
}

/// Where each line of `text` starts, its section and what it holds.
fn lines(text: &str) -> Vec<(String, String, Line)> {
    let mut section = String::new();
    text.split_inclusive('\n')
        .map(|raw| {
            let line = classify(raw);
            if let Line::Section(name) = &line {
                section.clone_from(name);
            }
            (raw.to_string(), section.clone(), line)
        })
        .collect()
}

/// Adds `key = value` (a key given more than once keeps every value).
pub fn add(text: &str, key: &str, value: &str) -> String {
    let key = canonical(key);
    let (section, name) = key.rsplit_once('.').unwrap_or(("core", &key));
    let lines = lines(text);
    let entry = format!("\t{name} = {}\n", render_value(value));
    // After the section's last key (or its header), not after comments
    // that may introduce the next section.
    let last = lines
        .iter()
        .rposition(|(_, s, l)| s == section && !matches!(l, Line::Other));
    let mut out = String::new();
    for (i, (raw, _, _)) in lines.iter().enumerate() {
        out.push_str(raw);
        if Some(i) == last {
            if !raw.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&entry);
        }
    }
    if last.is_none() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&header(section));
        out.push('\n');
        out.push_str(&entry);
    }
    out
}

/// Sets `key` to `value`: its last line is rewritten, or the key added.
pub fn set(text: &str, key: &str, value: &str) -> String {
    let key = canonical(key);
    let (section, name) = key.rsplit_once('.').unwrap_or(("core", &key));
    let lines = lines(text);
    let last = lines
        .iter()
        .rposition(|(_, s, l)| s == section && matches!(l, Line::Entry(k, _) if k == name));
    let Some(last) = last else {
        return add(text, &key, value);
    };
    let mut out = String::new();
    for (i, (raw, _, _)) in lines.iter().enumerate() {
        if i == last {
            out.push_str(&format!("\t{name} = {}\n", render_value(value)));
        } else {
            out.push_str(raw);
        }
    }
    out
}

/// Removes every line of `key`; `None` when there is none.
pub fn unset(text: &str, key: &str) -> Option<String> {
    let key = canonical(key);
    let (section, name) = key.rsplit_once('.').unwrap_or(("core", &key));
    let mut found = false;
    let mut out = String::new();
    for (raw, s, line) in lines(text) {
        if s == section && matches!(&line, Line::Entry(k, _) if k == name) {
            found = true;
        } else {
            out.push_str(&raw);
        }
    }
    found.then_some(out)
}

/// Removes a whole section (`remote.origin`), header and all.
pub fn remove_section(text: &str, section: &str) -> Option<String> {
    let mut found = false;
    let mut out = String::new();
    for (raw, s, _) in lines(text) {
        if s == section {
            found = true;
        } else {
            out.push_str(&raw);
        }
    }
    found.then_some(out)
}

/// Renames a section (`branch.old` → `branch.new`), its keys kept.
pub fn rename_section(text: &str, from: &str, to: &str) -> Option<String> {
    let mut found = false;
    let mut out = String::new();
    for (raw, section, line) in lines(text) {
        if matches!(&line, Line::Section(name) if *name == section && section == from) {
            found = true;
            out.push_str(&header(to));
            out.push('\n');
        } else {
            out.push_str(&raw);
        }
    }
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\
        # a comment the user wrote\n[remote \"origin\"]\n\turl = /srv/x.git\n\
        \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n";

    #[test]
    fn reads_git_syntax() {
        let entries =
            parse("[core]\n\tfilemode\n[user]\n\tname = \"Ann  B\" # me\n[a \"B c\"]\nx=1\n");
        assert_eq!(
            entries,
            vec![
                ("core.filemode".to_string(), "true".to_string()),
                ("user.name".to_string(), "Ann  B".to_string()),
                ("a.B c.x".to_string(), "1".to_string()),
            ]
        );
    }

    #[test]
    fn edits_in_place() {
        let text = set(REAL, "user.name", "Ann");
        assert!(text.starts_with(REAL));
        assert!(text.ends_with("[user]\n\tname = Ann\n"));
        let text = set(&text, "remote.origin.url", "/srv/y.git");
        assert!(text.contains("# a comment the user wrote\n"));
        assert!(text.contains("\turl = /srv/y.git\n\tfetch = +refs"));
        let text = add(&text, "core.editor", "vi");
        assert!(text.contains("\tbare = false\n\teditor = vi\n# a comment"));
        let renamed = rename_section(&text, "branch.main", "branch.trunk").unwrap();
        assert!(renamed.contains("[branch \"trunk\"]\n\tremote = origin\n"));
        let text = remove_section(&text, "remote.origin").unwrap();
        assert!(!text.contains("origin\"]"));
        assert!(text.contains("[branch \"main\"]"));
        assert_eq!(
            unset(&text, "core.editor")
                .unwrap()
                .matches("editor")
                .count(),
            0
        );
        assert!(unset(&text, "no.such").is_none());
    }
}
