//! Diffs as git prints them: unified hunks with three lines of context
//! and the enclosing "function" line in the header, `--stat`, and the
//! summary line `commit` prints.

use std::fmt::Write as _;

use std::ops::Range;

use imara_diff::{Algorithm, Diff, InternedInput};

use super::repo::{Abbrev, Blob, NULL_OID};

/// One file's change: either side may be absent.
pub struct Change {
    pub path: String,
    /// The old name of a renamed file (the same content under a new
    /// name: exact renames only).
    pub from: Option<String>,
    pub old: Option<(Blob, Vec<u8>)>,
    pub new: Option<(Blob, Vec<u8>)>,
}

/// Pairs each deleted file with an added one of the same content.
pub fn with_renames(mut changes: Vec<Change>) -> Vec<Change> {
    let oid = |side: &Option<(Blob, Vec<u8>)>| side.as_ref().map(|(b, _)| b.oid.clone());
    let mut index = 0;
    while index < changes.len() {
        if changes[index].old.is_none() {
            let added = oid(&changes[index].new);
            if let Some(deleted) = changes
                .iter()
                .position(|c| c.new.is_none() && c.from.is_none() && oid(&c.old) == added)
            {
                let old = changes.remove(deleted);
                let at = if deleted < index { index - 1 } else { index };
                changes[at].from = Some(old.path);
                changes[at].old = old.old;
                index = at;
            }
        }
        index += 1;
    }
    changes
}

/// The lines that differ between `old` and `new`, as git's default diff
/// finds them: Myers with git's heuristics (`imara-diff`, a port of
/// git's xdiff) and its indent heuristic for where a change is placed.
/// Each hunk: the old lines it removes and the new lines it adds.
pub fn line_diff(old: &str, new: &str) -> Vec<(Range<usize>, Range<usize>)> {
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    diff.hunks()
        .map(|h| {
            (
                h.before.start as usize..h.before.end as usize,
                h.after.start as usize..h.after.end as usize,
            )
        })
        .collect()
}

/// Each line of `new` that is unchanged from `old`, with its line in `old`.
pub fn kept_lines(old: &str, new: &str) -> Vec<(usize, usize)> {
    let (old_len, new_len) = (
        old.split_inclusive('\n').count(),
        new.split_inclusive('\n').count(),
    );
    let mut kept = Vec::new();
    let (mut at_old, mut at_new) = (0, 0);
    let ends = line_diff(old, new)
        .into_iter()
        .chain([(old_len..old_len, new_len..new_len)]);
    for (removed, added) in ends {
        while at_new < added.start {
            kept.push((at_new, at_old));
            at_new += 1;
            at_old += 1;
        }
        (at_old, at_new) = (removed.end, added.end);
    }
    kept
}

impl Change {
    /// `a => b`, or `dir/{a => b}` for a common directory, as `--stat`
    /// and `commit` name a rename.
    pub fn name(&self) -> String {
        let Some(from) = &self.from else {
            return self.path.clone();
        };
        let to = &self.path;
        let prefix = from
            .char_indices()
            .zip(to.chars())
            .take_while(|((_, a), b)| a == b)
            .filter(|((_, a), _)| *a == '/')
            .last()
            .map_or(0, |((i, _), _)| i + 1);
        if prefix == 0 {
            return format!("{from} => {to}");
        }
        format!(
            "{}{{{} => {}}}",
            &from[..prefix],
            &from[prefix..],
            &to[prefix..]
        )
    }

    fn binary(&self) -> bool {
        let binary = |side: &Option<(Blob, Vec<u8>)>| {
            side.as_ref()
                .is_some_and(|(_, bytes)| bytes.iter().take(8000).any(|&b| b == 0))
        };
        binary(&self.old) || binary(&self.new)
    }

    fn text(side: &Option<(Blob, Vec<u8>)>) -> String {
        side.as_ref()
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default()
    }

    /// Lines added and removed.
    pub fn counts(&self) -> (usize, usize) {
        if self.binary() {
            return (0, 0);
        }
        let (old, new) = (Self::text(&self.old), Self::text(&self.new));
        line_diff(&old, &new)
            .into_iter()
            .fold((0, 0), |(added, removed), (old, new)| {
                (added + new.len(), removed + old.len())
            })
    }

    /// `diff --git ...` and its hunks.
    pub fn patch(&self, abbrev: &Abbrev) -> String {
        let path = &self.path;
        if let Some(from) = &self.from {
            return format!(
                "diff --git a/{from} b/{path}\nsimilarity index 100%\nrename from {from}\nrename to {path}\n"
            );
        }
        let mut out = format!("diff --git a/{path} b/{path}\n");
        let old_oid = self.old.as_ref().map_or(NULL_OID, |(b, _)| b.oid.as_str());
        let new_oid = self.new.as_ref().map_or(NULL_OID, |(b, _)| b.oid.as_str());
        match (&self.old, &self.new) {
            (None, Some((new, _))) => {
                let _ = writeln!(out, "new file mode {:o}", new.mode);
                let _ = writeln!(
                    out,
                    "index {}..{}",
                    abbrev.of(old_oid, None),
                    abbrev.of(new_oid, None)
                );
            }
            (Some((old, _)), None) => {
                let _ = writeln!(out, "deleted file mode {:o}", old.mode);
                let _ = writeln!(
                    out,
                    "index {}..{}",
                    abbrev.of(old_oid, None),
                    abbrev.of(new_oid, None)
                );
            }
            (Some((old, _)), Some((new, _))) => {
                if old.mode != new.mode {
                    let _ = writeln!(out, "old mode {:o}\nnew mode {:o}", old.mode, new.mode);
                }
                if old.oid == new.oid {
                    return out;
                }
                if old.mode == new.mode {
                    let _ = writeln!(
                        out,
                        "index {}..{} {:o}",
                        abbrev.of(old_oid, None),
                        abbrev.of(new_oid, None),
                        new.mode
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "index {}..{}",
                        abbrev.of(old_oid, None),
                        abbrev.of(new_oid, None)
                    );
                }
            }
            (None, None) => return String::new(),
        }
        let a = if self.old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_string()
        };
        let b = if self.new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_string()
        };
        if self.binary() {
            let _ = writeln!(out, "Binary files {a} and {b} differ");
            return out;
        }
        let (old, new) = (Self::text(&self.old), Self::text(&self.new));
        if old.is_empty() && new.is_empty() {
            return out;
        }
        let _ = writeln!(out, "--- {a}\n+++ {b}");
        out.push_str(&hunks(&old, &new));
        out
    }
}

/// `-1,3 +1,4`: a range as git writes it.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// The line git's default funcname rule would show for a hunk starting
/// at `start`: the nearest line before it that begins with a letter,
/// `_` or `$`.
fn function_line(lines: &[&str], start: usize) -> Option<String> {
    lines[..start.min(lines.len())]
        .iter()
        .rev()
        .find(|line| {
            line.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        })
        .map(|line| {
            let line = line.trim_end();
            let mut end = line.len().min(80);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line[..end].to_string()
        })
}

/// The unified hunks of a change, with three lines of context; changes
/// closer than twice that share a hunk, as git's do.
pub fn hunks(old: &str, new: &str) -> String {
    const CONTEXT: usize = 3;
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let changes = line_diff(old, new);
    // Runs of changes printed as one hunk.
    let mut groups: Vec<&[(Range<usize>, Range<usize>)]> = Vec::new();
    let mut first = 0;
    for at in 1..=changes.len() {
        let apart =
            at == changes.len() || changes[at].0.start - changes[at - 1].0.end > 2 * CONTEXT;
        if apart {
            groups.push(&changes[first..at]);
            first = at;
        }
    }
    let mut out = String::new();
    for group in groups {
        let (Some(head), Some(tail)) = (group.first(), group.last()) else {
            continue;
        };
        let lead = head.0.start.min(CONTEXT);
        let old_start = head.0.start - lead;
        let new_start = head.1.start - lead;
        let trail = (old_lines.len() - tail.0.end).min(CONTEXT);
        let old_len = tail.0.end + trail - old_start;
        let new_len = tail.1.end + trail - new_start;
        let _ = write!(
            out,
            "@@ -{} +{} @@",
            range(old_start, old_len),
            range(new_start, new_len)
        );
        match function_line(&old_lines, old_start) {
            Some(function) => {
                let _ = writeln!(out, " {function}");
            }
            None => out.push('\n'),
        }
        let mut at_old = old_start;
        for (removed, added) in group {
            line_run(&mut out, ' ', &old_lines[at_old..removed.start]);
            line_run(&mut out, '-', &old_lines[removed.clone()]);
            line_run(&mut out, '+', &new_lines[added.clone()]);
            at_old = removed.end;
        }
        line_run(&mut out, ' ', &old_lines[at_old..tail.0.end + trail]);
    }
    out
}

fn line_run(out: &mut String, tag: char, lines: &[&str]) {
    for line in lines {
        out.push(tag);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// ` N files changed, X insertions(+), Y deletions(-)`.
pub fn summary(files: usize, insertions: usize, deletions: usize) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut line = format!(" {}", plural(files, "file changed", "files changed"));
    if insertions > 0 || deletions == 0 {
        let _ = write!(
            line,
            ", {}",
            plural(insertions, "insertion(+)", "insertions(+)")
        );
    }
    if deletions > 0 || insertions == 0 {
        let _ = write!(
            line,
            ", {}",
            plural(deletions, "deletion(-)", "deletions(-)")
        );
    }
    line.push('\n');
    line
}

/// `--stat`: a line per file and the summary, 80 columns wide, with
/// git's division of them (diff.c's `show_stats`): the graph gets what
/// the names leave, but at most 3/8 of the line when both do not fit;
/// names too long lose their head to `...`, cut at a `/`.
pub fn stat(changes: &[Change]) -> String {
    if changes.is_empty() {
        return String::new();
    }
    const WIDTH: usize = 80;
    let counted: Vec<(&Change, usize, usize)> = changes
        .iter()
        .map(|c| {
            let (added, removed) = c.counts();
            (c, added, removed)
        })
        .collect();
    let size = |side: &Option<(Blob, Vec<u8>)>| side.as_ref().map_or(0, |(_, b)| b.len());
    let digits = |n: usize| n.to_string().len();
    let (mut max_change, mut bin_width, mut number_width) = (0, 0, 0);
    for (change, added, removed) in &counted {
        if change.binary() {
            let w = 14 + digits(size(&change.old)) + digits(size(&change.new));
            bin_width = bin_width.max(w);
            // Counts line up with "Bin".
            number_width = 3;
        } else {
            max_change = max_change.max(added + removed);
        }
    }
    let number_width = number_width.max(digits(max_change));
    let max_len = changes
        .iter()
        .map(|c| c.name().chars().count())
        .max()
        .unwrap_or(0);
    let width = WIDTH.max(16 + 6 + number_width);
    let mut graph_width = if max_change + 4 > bin_width {
        max_change
    } else {
        bin_width - 4
    };
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        let three_eighths = (width * 3 / 8).saturating_sub(number_width + 6);
        if graph_width > three_eighths {
            graph_width = three_eighths.max(6);
        }
        let left = width.saturating_sub(number_width + 6 + graph_width);
        if name_width > left {
            name_width = left;
        } else {
            graph_width = width - number_width - 6 - name_width;
        }
    }
    let mut out = String::new();
    let (mut insertions, mut deletions) = (0, 0);
    for (change, added, removed) in &counted {
        let full = change.name();
        let (prefix, name, len) = shortened(&full, name_width);
        if change.binary() {
            let (old, new) = (size(&change.old), size(&change.new));
            let _ = write!(out, " {prefix}{name:<len$} | {:>number_width$}", "Bin");
            if old > 0 || new > 0 {
                let _ = write!(out, " {old} -> {new} bytes");
            }
            out.push('\n');
            continue;
        }
        insertions += added;
        deletions += removed;
        let total = added + removed;
        let (plus, minus) = if graph_width <= max_change {
            // git's scale_linear: at least one column for any change; the
            // total scaled first so the two parts add up.
            let scale = |n: usize| match n {
                0 => 0,
                n => 1 + n * (graph_width - 1) / max_change,
            };
            let mut total = scale(total);
            if total < 2 && *added > 0 && *removed > 0 {
                total = 2;
            }
            if added < removed {
                let plus = scale(*added);
                (plus, total - plus)
            } else {
                let minus = scale(*removed);
                (total - minus, minus)
            }
        } else {
            (*added, *removed)
        };
        let _ = write!(out, " {prefix}{name:<len$} | {total:>number_width$}");
        if total > 0 {
            let _ = write!(out, " {}{}", "+".repeat(plus), "-".repeat(minus));
        }
        out.push('\n');
    }
    out.push_str(&summary(changes.len(), insertions, deletions));
    out
}

/// A name fitted into `width` columns as git fits it: `...` and the tail,
/// from a `/` when the tail holds one. The prefix, the name and the width
/// it is padded to.
fn shortened(name: &str, width: usize) -> (&'static str, &str, usize) {
    let chars = name.chars().count();
    if chars <= width {
        return ("", name, width);
    }
    let len = width.saturating_sub(3);
    let tail_start = name
        .char_indices()
        .nth(chars - len)
        .map_or(name.len(), |(i, _)| i);
    let tail = &name[tail_start..];
    let tail = tail.find('/').map_or(tail, |slash| &tail[slash..]);
    ("...", tail, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_appended_line_is_one_hunk() {
        assert_eq!(
            hunks("hello\n", "hello\nmore\n"),
            "@@ -1 +1,2 @@\n hello\n+more\n"
        );
    }

    #[test]
    fn a_new_file_starts_at_zero() {
        assert_eq!(hunks("", "s\n"), "@@ -0,0 +1 @@\n+s\n");
    }

    #[test]
    fn a_missing_final_newline_is_said() {
        assert_eq!(
            hunks("a\n", "a\nb"),
            "@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn hunk_headers_name_the_enclosing_function() {
        let old = "fn main() {\n    1;\n    2;\n    3;\n    4;\n    5;\n}\n";
        let new = "fn main() {\n    1;\n    2;\n    3;\n    4;\n    five;\n}\n";
        assert!(hunks(old, new).starts_with("@@ -3,5 +3,5 @@ fn main() {\n"));
    }

    #[test]
    fn renames_are_named_with_their_common_directory() {
        let change = |from: &str, to: &str| Change {
            path: to.to_string(),
            from: Some(from.to_string()),
            old: None,
            new: None,
        };
        assert_eq!(change("a.txt", "b.txt").name(), "a.txt => b.txt");
        assert_eq!(change("src/a.rs", "src/b.rs").name(), "src/{a.rs => b.rs}");
    }

    #[test]
    fn summaries_count_as_git_does() {
        assert_eq!(summary(1, 1, 0), " 1 file changed, 1 insertion(+)\n");
        assert_eq!(summary(2, 0, 3), " 2 files changed, 3 deletions(-)\n");
        assert_eq!(
            summary(1, 0, 0),
            " 1 file changed, 0 insertions(+), 0 deletions(-)\n"
        );
    }
}
