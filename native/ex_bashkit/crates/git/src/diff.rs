//! Diffs as git prints them: unified hunks with three lines of context
//! and the enclosing "function" line in the header, `--stat`, and the
//! summary line `commit` prints.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use std::ops::Range;

use super::repo::{Abbrev, Blob, NULL_OID};
use super::text;
use super::userdiff::Driver;

/// One file's change: either side may be absent.
pub struct Change {
    /// `core.quotePath`: names past ASCII printed quoted.
    pub quote_high: bool,
    pub path: String,
    /// The old name of a renamed file.
    pub from: Option<String>,
    /// How alike a renamed file's two sides are, in percent (100: the
    /// same content).
    pub similarity: u32,
    /// Whether `from` still exists: a copy (`C`), not a rename.
    pub copied: bool,
    pub old: Option<(Blob, Vec<u8>)>,
    pub new: Option<(Blob, Vec<u8>)>,
    /// What the file's `diff` attribute says of it.
    pub driver: Driver,
}

/// git's scale of similarity (diffcore.h's `MAX_SCORE`) and the least a
/// rename needs by default (`-M50%`).
const MAX_SCORE: u64 = 60_000;
const MIN_SCORE: u64 = 30_000;
/// `diff.renameLimit`'s default: past this many sources times targets
/// squared, git looks for exact renames only.
const RENAME_LIMIT: usize = 1000;

/// Pairs deleted files with added ones as git's diffcore-rename does:
/// the same content first, then files whose basename is unique on both
/// sides, then the most similar pairs (at least half alike, by git's
/// count of shared 64-byte chunks); each rename stands where the added
/// file stood.
pub fn with_renames(changes: Vec<Change>) -> Vec<Change> {
    let mut changes: Vec<Option<Change>> = changes.into_iter().map(Some).collect();
    let is_source = |c: &Change| c.new.is_none() && c.old.is_some();
    let is_target = |c: &Change| c.old.is_none() && c.new.is_some();
    let oid = |side: &Option<(Blob, Vec<u8>)>| side.as_ref().map(|(b, _)| b.oid.clone());
    let mut pairs: Vec<(usize, usize, u64)> = Vec::new(); // (source, target, score)
    let mut taken_sources = std::collections::HashSet::new();
    let mut taken_targets = std::collections::HashSet::new();
    // Exact renames.
    for target in 0..changes.len() {
        let Some(added) = changes[target].as_ref().filter(|c| is_target(c)) else {
            continue;
        };
        let content = oid(&added.new);
        let found = (0..changes.len()).find(|&source| {
            !taken_sources.contains(&source)
                && changes[source]
                    .as_ref()
                    .is_some_and(|c| is_source(c) && oid(&c.old) == content)
        });
        if let Some(source) = found {
            taken_sources.insert(source);
            taken_targets.insert(target);
            pairs.push((source, target, MAX_SCORE));
        }
    }
    let regular = |side: &Option<(Blob, Vec<u8>)>| {
        side.as_ref()
            .is_some_and(|(b, _)| matches!(b.mode, 0o100644 | 0o100755))
    };
    let left = |taken: &std::collections::HashSet<usize>, want: &dyn Fn(&Change) -> bool| {
        (0..changes.len())
            .filter(|i| !taken.contains(i))
            .filter(|&i| changes[i].as_ref().is_some_and(want))
            .collect::<Vec<usize>>()
    };
    let sources = left(&taken_sources, &|c: &Change| {
        is_source(c) && regular(&c.old)
    });
    let targets = left(&taken_targets, &|c: &Change| {
        is_target(c) && regular(&c.new)
    });
    if !sources.is_empty()
        && !targets.is_empty()
        && sources.len() * targets.len() <= RENAME_LIMIT * RENAME_LIMIT
    {
        let bytes = |i: usize, old: bool| -> &[u8] {
            let c = changes[i].as_ref().expect("a change");
            let side = if old { &c.old } else { &c.new };
            side.as_ref().map_or(&[][..], |(_, b)| b.as_slice())
        };
        let chunks_of: HashMap<usize, Chunks> = sources
            .iter()
            .map(|&i| (i, Chunks::of(bytes(i, true))))
            .chain(targets.iter().map(|&i| (i, Chunks::of(bytes(i, false)))))
            .collect();
        let score = |source: usize, target: usize| {
            similarity(
                bytes(source, true).len(),
                &chunks_of[&source],
                bytes(target, false).len(),
                &chunks_of[&target],
            )
        };
        let basename = |i: usize| {
            let path = &changes[i].as_ref().expect("a change").path;
            path.rsplit('/').next().unwrap_or(path).to_string()
        };
        // Basenames found once among the sources and once among the targets.
        let once = |among: &[usize]| {
            let mut seen: HashMap<String, Option<usize>> = HashMap::new();
            for &i in among {
                seen.entry(basename(i))
                    .and_modify(|e| *e = None)
                    .or_insert(Some(i));
            }
            seen
        };
        let (source_names, target_names) = (once(&sources), once(&targets));
        for (name, source) in &source_names {
            if let (Some(source), Some(Some(target))) = (source, target_names.get(name)) {
                let found = score(*source, *target);
                if found >= MIN_SCORE {
                    taken_sources.insert(*source);
                    taken_targets.insert(*target);
                    pairs.push((*source, *target, found));
                }
            }
        }
        // The rest: the best pairs first, a shared basename breaking ties.
        let mut candidates: Vec<(u64, bool, usize, usize)> = Vec::new();
        for &target in targets.iter().filter(|t| !taken_targets.contains(t)) {
            for &source in sources.iter().filter(|s| !taken_sources.contains(s)) {
                let found = score(source, target);
                if found >= MIN_SCORE {
                    candidates.push((found, basename(source) == basename(target), target, source));
                }
            }
        }
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        for (found, _, target, source) in candidates {
            if !taken_sources.contains(&source) && !taken_targets.contains(&target) {
                taken_sources.insert(source);
                taken_targets.insert(target);
                pairs.push((source, target, found));
            }
        }
    }
    for (source, target, found) in pairs {
        let old = changes[source].take().expect("a source is paired once");
        let renamed = changes[target].as_mut().expect("a target is paired once");
        renamed.from = Some(old.path);
        renamed.old = old.old;
        renamed.similarity = (found * 100 / MAX_SCORE) as u32;
    }
    changes.into_iter().flatten().collect()
}

/// Of `sources` (path, content), the one `target` was most likely renamed
/// from, as `with_renames` would pair them: at least half alike.
pub fn rename_source(target: &[u8], sources: &[(String, Vec<u8>)]) -> Option<String> {
    let chunks = Chunks::of(target);
    sources
        .iter()
        .map(|(path, bytes)| {
            let found = similarity(bytes.len(), &Chunks::of(bytes), target.len(), &chunks);
            (found, path)
        })
        .filter(|(found, _)| *found >= MIN_SCORE)
        .max_by_key(|(found, _)| *found)
        .map(|(_, path)| path.clone())
}

/// Whether two paths end in the same name (git's `basename_same`).
pub fn basename_same(a: &str, b: &str) -> bool {
    a.rsplit('/').next() == b.rsplit('/').next()
}

/// The sources most alike one destination, as git's diffcore-rename
/// keeps them when it looks for copies too (`record_if_better`: the four
/// best by score, then by a shared basename, an earlier source kept over
/// an equal later one), for `log --follow`'s search of where a file
/// came from.
pub struct Likeness {
    target: Chunks,
    target_size: usize,
    /// (score, same basename, source) in git's slots; `None`: empty.
    kept: [(u64, bool, Option<usize>); 4],
}

impl Likeness {
    pub fn of(target: &[u8]) -> Likeness {
        Likeness {
            target: Chunks::of(target),
            target_size: target.len(),
            kept: [(0, false, None); 4],
        }
    }

    /// Source `index` (its content, and whether its name ends as the
    /// destination's) weighed as git weighs it.
    pub fn consider(&mut self, index: usize, source: &[u8], same_name: bool) {
        let score = match sizes_alike(source.len(), self.target_size) {
            true => similarity(
                source.len(),
                &Chunks::of(source),
                self.target_size,
                &self.target,
            ),
            false => 0,
        };
        let rank = |(score, same, _): (u64, bool, Option<usize>)| (score, same);
        let mut worst = 0;
        for slot in 1..self.kept.len() {
            if rank(self.kept[slot]) < rank(self.kept[worst]) {
                worst = slot;
            }
        }
        if (score, same_name) > rank(self.kept[worst]) {
            self.kept[worst] = (score, same_name, Some(index));
        }
    }

    /// git's choice: of the kept sources at least half alike, best first
    /// (a shared basename breaking ties, then the slot's order), the first
    /// that `gone` says was deleted (a rename), else the first (a copy);
    /// with its likeness in percent.
    pub fn chosen(&self, gone: impl Fn(usize) -> bool) -> Option<(usize, u32)> {
        let mut ranked: Vec<(u64, bool, usize)> = self
            .kept
            .iter()
            .filter_map(|&(score, same, index)| Some((score, same, index?)))
            .filter(|(score, _, _)| *score >= MIN_SCORE)
            .collect();
        // Stable: equal ones keep their slots' order, as git's sort does.
        ranked.sort_by_key(|&(score, same, _)| std::cmp::Reverse((score, same)));
        let percent = |score: u64| (score * 100 / MAX_SCORE) as u32;
        ranked
            .iter()
            .find(|(_, _, index)| gone(*index))
            .or(ranked.first())
            .map(|&(score, _, index)| (index, percent(score)))
    }
}

/// A file cut as git's diffcore-delta cuts it to measure likeness: chunks
/// ending at a newline or 64 bytes long (a trailing piece without one is
/// not counted, as git does not count it), each hashed, with how many
/// bytes each hash covers, sorted by hash.
struct Chunks(Vec<(u32, u64)>);

impl Chunks {
    fn of(bytes: &[u8]) -> Chunks {
        const HASHBASE: u32 = 65537;
        let text = !bytes.iter().take(8000).any(|&b| b == 0);
        let mut counts: HashMap<u32, u64> = HashMap::new();
        let (mut accum1, mut accum2, mut n) = (0u32, 0u32, 0u64);
        for (at, &c) in bytes.iter().enumerate() {
            // A CR before a LF is not counted in text.
            if text && c == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
                continue;
            }
            let old1 = accum1;
            accum1 = (accum1 << 7) ^ (accum2 >> 25);
            accum2 = (accum2 << 7) ^ (old1 >> 25);
            accum1 = accum1.wrapping_add(u32::from(c));
            n += 1;
            if n < 64 && c != b'\n' {
                continue;
            }
            let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
            *counts.entry(hash).or_default() += n;
            (accum1, accum2, n) = (0, 0, 0);
        }
        let mut sorted: Vec<(u32, u64)> = counts.into_iter().collect();
        sorted.sort_unstable();
        Chunks(sorted)
    }
}

/// Whether two sizes leave a rename possible at all: git never pairs
/// files whose sizes differ by more than half the larger one's.
fn sizes_alike(source_size: usize, target_size: usize) -> bool {
    let (source_size, target_size) = (source_size as u64, target_size as u64);
    let max = source_size.max(target_size);
    let delta = max - source_size.min(target_size);
    max != 0 && max * (MAX_SCORE - MIN_SCORE) >= delta * MAX_SCORE
}

/// git's `estimate_similarity`: the bytes of `target` found in `source`,
/// over the larger size, on a scale of [`MAX_SCORE`]; nothing when the
/// sizes alone rule a rename out.
fn similarity(source_size: usize, source: &Chunks, target_size: usize, target: &Chunks) -> u64 {
    if !sizes_alike(source_size, target_size) {
        return 0;
    }
    let max = source_size.max(target_size) as u64;
    let mut copied = 0;
    let mut theirs = target.0.iter().peekable();
    for &(hash, count) in &source.0 {
        while theirs.next_if(|(h, _)| *h < hash).is_some() {}
        if let Some(&&(h, other)) = theirs.peek() {
            if h == hash {
                copied += count.min(other);
            }
        }
    }
    copied * MAX_SCORE / max
}

/// `a => b` with what both share outside braces, as git's
/// `pprint_rename` writes it: `src/{a.rs => b.rs}`, `{a => b}/x.rs`,
/// `a/{b => c}/d.rs`.
fn rename_name(from: &str, to: &str) -> String {
    let (a, b) = (from.as_bytes(), to.as_bytes());
    let mut prefix = 0;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            break;
        }
        if *x == b'/' {
            prefix = i + 1;
        }
    }
    // The suffix may reach back into the prefix's closing slash.
    let floor = prefix.saturating_sub(usize::from(prefix > 0));
    let mut suffix = 0;
    let (mut i, mut j) = (a.len(), b.len());
    while i > floor && j > floor && a[i - 1] == b[j - 1] {
        i -= 1;
        j -= 1;
        if a[i] == b'/' {
            suffix = a.len() - i;
        }
    }
    let middle = |s: &str| {
        let end = s.len().saturating_sub(suffix).max(prefix);
        s.get(prefix..end).unwrap_or("").to_string()
    };
    if prefix + suffix == 0 {
        return format!("{from} => {to}");
    }
    format!(
        "{}{{{} => {}}}{}",
        &from[..prefix],
        middle(from),
        middle(to),
        &from[from.len() - suffix..]
    )
}

/// The lines that differ between `old` and `new`, as git's default diff
/// finds and places them ([`super::xdiff`]). Each hunk: the old lines it
/// removes and the new lines it adds.
pub fn line_diff(old: &str, new: &str) -> Vec<(Range<usize>, Range<usize>)> {
    let old: Vec<&[u8]> = old.as_bytes().split_inclusive(|&b| b == b'\n').collect();
    let new: Vec<&[u8]> = new.as_bytes().split_inclusive(|&b| b == b'\n').collect();
    super::xdiff::hunks(&old, &new)
}

/// [`line_diff`] as git diffs when no context lines are shown (`blame`):
/// an identical tail of whole 1 KiB blocks, cut back to a line's
/// end, is set aside first and its lines taken as unchanged, which can
/// pair ambiguous lines (blank ones) differently.
pub fn line_diff_without_context(old: &str, new: &str) -> Vec<(Range<usize>, Range<usize>)> {
    let cut = common_tail(old.as_bytes(), new.as_bytes());
    line_diff(&old[..old.len() - cut], &new[..new.len() - cut])
}

/// How many bytes git's `trim_common_tail` sets aside from both ends.
fn common_tail(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 1024;
    let smaller = a.len().min(b.len());
    let mut trimmed = 0;
    while trimmed + BLOCK <= smaller
        && a[a.len() - trimmed - BLOCK..a.len() - trimmed]
            == b[b.len() - trimmed - BLOCK..b.len() - trimmed]
    {
        trimmed += BLOCK;
    }
    // Back to just past the first newline of what was trimmed.
    let tail = &a[a.len() - trimmed..];
    let recovered = tail
        .iter()
        .position(|&c| c == b'\n')
        .map_or(trimmed, |i| i + 1);
    trimmed - recovered
}

/// Each line of `new` that is unchanged from `old`, with its line in `old`.
pub fn kept_lines(old: &str, new: &str) -> Vec<(usize, usize)> {
    let (old_len, new_len) = (
        old.split_inclusive('\n').count(),
        new.split_inclusive('\n').count(),
    );
    let mut kept = Vec::new();
    let (mut at_old, mut at_new) = (0, 0);
    let ends = line_diff_without_context(old, new)
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
        let quoted = |path| text::quote_path(path, self.quote_high);
        match &self.from {
            None => quoted(&self.path).into_owned(),
            // A side that needs quotes: both quoted whole, nothing shared.
            Some(from) => match (quoted(from), quoted(&self.path)) {
                (Cow::Borrowed(_), Cow::Borrowed(_)) => rename_name(from, &self.path),
                (from, to) => format!("{from} => {to}"),
            },
        }
    }

    /// The letter `--name-status` gives the change (and `--diff-filter`
    /// picks by): added, deleted, modified, renamed, copied, or its type
    /// changed (a file became a symlink or back).
    pub fn status(&self) -> char {
        let kind = |blob: &Blob| blob.mode & 0o170000;
        match (&self.from, &self.old, &self.new) {
            (Some(_), _, _) if self.copied => 'C',
            (Some(_), _, _) => 'R',
            (None, None, _) => 'A',
            (None, _, None) => 'D',
            (None, Some((old, _)), Some((new, _))) if kind(old) != kind(new) => 'T',
            _ => 'M',
        }
    }

    /// The path as `--name-only` and `--name-status` print it.
    pub fn shown_path(&self) -> Cow<'_, str> {
        text::quote_path(&self.path, self.quote_high)
    }

    /// The old path of a rename, as `--name-status` prints it.
    pub fn shown_from(&self) -> Option<Cow<'_, str>> {
        self.from
            .as_deref()
            .map(|from| text::quote_path(from, self.quote_high))
    }

    pub fn binary(&self) -> bool {
        if matches!(self.driver, Driver::Binary) {
            return true;
        }
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

    /// `diff --git ...` and its hunks, `context` lines around each change.
    pub fn patch(&self, abbrev: &Abbrev, context: Context) -> String {
        let path = &self.path;
        let old_path = self.from.as_deref().unwrap_or(path);
        let high = self.quote_high;
        let mut out = format!(
            "diff --git {} {}\n",
            text::quote_prefixed("a/", old_path, high),
            text::quote_prefixed("b/", path, high)
        );
        let old_oid = self.old.as_ref().map_or(NULL_OID, |(b, _)| b.oid.as_str());
        let new_oid = self.new.as_ref().map_or(NULL_OID, |(b, _)| b.oid.as_str());
        let index = |out: &mut String, mode: Option<u32>| {
            let _ = write!(
                out,
                "index {}..{}",
                abbrev.of(old_oid, None),
                abbrev.of(new_oid, None)
            );
            if let Some(mode) = mode {
                let _ = write!(out, " {mode:o}");
            }
            out.push('\n');
        };
        match (&self.old, &self.new) {
            (None, Some((new, _))) => {
                let _ = writeln!(out, "new file mode {:o}", new.mode);
                index(&mut out, None);
            }
            (Some((old, _)), None) => {
                let _ = writeln!(out, "deleted file mode {:o}", old.mode);
                index(&mut out, None);
            }
            (Some((old, _)), Some((new, _))) => {
                if old.mode != new.mode {
                    let _ = writeln!(out, "old mode {:o}\nnew mode {:o}", old.mode, new.mode);
                }
                if let Some(from) = &self.from {
                    let kind = if self.copied { "copy" } else { "rename" };
                    let _ = writeln!(
                        out,
                        "similarity index {}%\n{kind} from {}\n{kind} to {}",
                        self.similarity,
                        text::quote_path(from, high),
                        text::quote_path(path, high)
                    );
                }
                if old.oid == new.oid {
                    return out;
                }
                index(&mut out, (old.mode == new.mode).then_some(new.mode));
            }
            (None, None) => return String::new(),
        }
        let a = if self.old.is_some() {
            text::quote_prefixed("a/", old_path, high)
        } else {
            "/dev/null".to_string()
        };
        let b = if self.new.is_some() {
            text::quote_prefixed("b/", path, high)
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
        out.push_str(&hunks(&old, &new, &self.driver, context));
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

/// The line a hunk starting at `start` names in its header: the nearest
/// line before it that the file's driver takes for a function line, or
/// by git's default rule one that begins with a letter, `_` or `$`; its
/// trailing space trimmed, at most 80 bytes.
fn function_line(lines: &[&str], start: usize, driver: &Driver) -> Option<String> {
    let above = lines[..start.min(lines.len())].iter().rev();
    if let Driver::Funcname(funcname) = driver {
        return above
            .into_iter()
            .find_map(|line| funcname.of(line.as_bytes()));
    }
    above
        .into_iter()
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

/// How many unchanged lines a patch shows around each change (`-U`,
/// `diff.context`) and how many more may stand between two changes that
/// still share a hunk (`--inter-hunk-context`, `diff.interHunkContext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    pub lines: usize,
    pub between: usize,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            lines: 3,
            between: 0,
        }
    }
}

/// The unified hunks of a change, with `context` lines around each
/// change; changes closer than twice that (and `context.between`) share
/// a hunk, as git's do. The headers' function lines are found by `driver`.
pub fn hunks(old: &str, new: &str, driver: &Driver, context: Context) -> String {
    let (lines, between) = (context.lines, context.between);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let changes = line_diff(old, new);
    // Runs of changes printed as one hunk.
    let mut groups: Vec<&[(Range<usize>, Range<usize>)]> = Vec::new();
    let mut first = 0;
    for at in 1..=changes.len() {
        let apart = at == changes.len()
            || changes[at].0.start - changes[at - 1].0.end > 2 * lines + between;
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
        let lead = head.0.start.min(lines);
        let old_start = head.0.start - lead;
        let new_start = head.1.start - lead;
        let trail = (old_lines.len() - tail.0.end).min(lines);
        let old_len = tail.0.end + trail - old_start;
        let new_len = tail.1.end + trail - new_start;
        let _ = write!(
            out,
            "@@ -{} +{} @@",
            range(old_start, old_len),
            range(new_start, new_len)
        );
        match function_line(&old_lines, old_start, driver) {
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
    stat_sized(changes, StatSize::default())
}

/// The width `--stat` fills (80 columns by default, as git's when not at a
/// terminal) and the most its names may take (`--stat=W,N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatSize {
    pub width: usize,
    pub name_width: Option<usize>,
}

impl Default for StatSize {
    fn default() -> Self {
        StatSize {
            width: 80,
            name_width: None,
        }
    }
}

impl StatSize {
    /// `--stat=W[,N]`'s value; `None` for one git would not read.
    pub fn parse(given: &str) -> Option<StatSize> {
        let mut parts = given.split(',');
        let width = parts.next()?.parse().ok()?;
        let name_width = parts.next().map(str::parse).transpose().ok()?;
        match parts.next() {
            Some(_) => None,
            None => Some(StatSize { width, name_width }),
        }
    }
}

/// [`stat`] laid out in `layout`.
pub fn stat_sized(changes: &[Change], layout: StatSize) -> String {
    if changes.is_empty() {
        return String::new();
    }
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
    let width = layout.width.max(16 + 6 + number_width);
    let mut graph_width = if max_change + 4 > bin_width {
        max_change
    } else {
        bin_width - 4
    };
    let mut name_width = match layout.name_width {
        Some(n) if n > 0 && n < max_len => n,
        _ => max_len,
    };
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
            hunks(
                "hello\n",
                "hello\nmore\n",
                &Driver::Default,
                Context::default()
            ),
            "@@ -1 +1,2 @@\n hello\n+more\n"
        );
    }

    #[test]
    fn a_new_file_starts_at_zero() {
        assert_eq!(
            hunks("", "s\n", &Driver::Default, Context::default()),
            "@@ -0,0 +1 @@\n+s\n"
        );
    }

    #[test]
    fn a_missing_final_newline_is_said() {
        assert_eq!(
            hunks("a\n", "a\nb", &Driver::Default, Context::default()),
            "@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn hunk_headers_name_the_enclosing_function() {
        let old = "fn main() {\n    1;\n    2;\n    3;\n    4;\n    5;\n}\n";
        let new = "fn main() {\n    1;\n    2;\n    3;\n    4;\n    five;\n}\n";
        assert!(hunks(old, new, &Driver::Default, Context::default())
            .starts_with("@@ -3,5 +3,5 @@ fn main() {\n"));
    }

    #[test]
    fn renames_are_named_with_their_common_directory() {
        let change = |from: &str, to: &str| Change {
            quote_high: true,
            path: to.to_string(),
            from: Some(from.to_string()),
            similarity: 100,
            copied: false,
            driver: Driver::Default,
            old: None,
            new: None,
        };
        assert_eq!(change("a.txt", "b.txt").name(), "a.txt => b.txt");
        assert_eq!(change("src/a.rs", "src/b.rs").name(), "src/{a.rs => b.rs}");
        assert_eq!(change("a/x.rs", "b/x.rs").name(), "{a => b}/x.rs");
        assert_eq!(
            change("lib/a/x.rs", "lib/b/x.rs").name(),
            "lib/{a => b}/x.rs"
        );
        assert_eq!(
            change("lib/x.rs", "lib/deep/x.rs").name(),
            "lib/{ => deep}/x.rs"
        );
    }

    #[test]
    fn a_followed_file_comes_from_a_deleted_source_first_then_the_most_alike() {
        let target = "one\ntwo\nthree\nfour\n";
        let mut likeness = Likeness::of(target.as_bytes());
        likeness.consider(0, b"one\ntwo\nthree\nfour\nfive\n", false);
        likeness.consider(1, b"one\ntwo\nthree\nfour\nfive\n", false);
        likeness.consider(2, b"nothing alike at all\n", true);
        // Equally alike: the deleted one (a rename) over the kept (a copy).
        assert_eq!(likeness.chosen(|i| i == 1).map(|(i, _)| i), Some(1));
        // None deleted: the first of the best, as a copy.
        assert_eq!(likeness.chosen(|_| false), Some((0, 79)));
        // Nothing at least half alike: nothing.
        let mut far = Likeness::of(target.as_bytes());
        far.consider(0, b"x\n", true);
        assert_eq!(far.chosen(|_| true), None);
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
