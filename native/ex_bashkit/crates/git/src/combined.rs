//! Whether a merge's combined diff (`git show MERGE`, git's `--cc`) shows
//! anything, decided as git's combine-diff decides it: of the files that
//! differ from every parent, a stretch of lines is shown only when it
//! holds more than two versions, or a version no parent had; a file
//! merged cleanly, each stretch taken from one side, shows nothing.

use std::collections::BTreeSet;

use super::repo::{Commit, Repo, Res};

/// Context lines around a change, as `--cc` shows them (git's default).
const CONTEXT: usize = 3;

/// Past this many line pairs, pairing two sides' removed lines is not
/// tried: the merge is taken as showing a change (and refused).
const MAX_PAIRINGS: usize = 4_000_000;

/// The first file `merge`'s `--cc` diff would show, if any. A file gone
/// from the merge or from a parent, binary, or with modes that differ is
/// taken as shown.
pub async fn first_shown(repo: &Repo, merge: &Commit) -> Res<Option<String>> {
    let mut parents = Vec::with_capacity(merge.parents.len());
    let mut differing: Option<BTreeSet<String>> = None;
    for parent in &merge.parents {
        let tree = repo.commit(parent).await?.tree;
        let (before, after) = repo.changed_files(Some(&tree), &merge.tree).await?;
        let here: BTreeSet<String> = before.keys().chain(after.keys()).cloned().collect();
        differing = Some(match differing {
            None => here,
            Some(earlier) => earlier.intersection(&here).cloned().collect(),
        });
        parents.push((before, after));
    }
    for path in differing.unwrap_or_default() {
        let result = parents.iter().find_map(|(_, after)| after.get(&path));
        let sides: Vec<_> = parents
            .iter()
            .map(|(before, _)| before.get(&path))
            .collect();
        let (Some(result), true) = (result, sides.iter().all(Option::is_some)) else {
            return Ok(Some(path));
        };
        let sides: Vec<_> = sides.into_iter().flatten().collect();
        if sides.iter().any(|side| side.mode != result.mode)
            || result.mode != 0o100644 && result.mode != 0o100755
        {
            return Ok(Some(path));
        }
        let attributes = repo.attributes([path.as_str()]).await;
        if !matches!(
            attributes.driver(&path),
            Ok(super::userdiff::Driver::Default) | Ok(super::userdiff::Driver::Funcname(..))
        ) {
            return Ok(Some(path));
        }
        let result_bytes = repo.blob(&result.oid).await?;
        let mut texts = Vec::with_capacity(sides.len());
        for side in &sides {
            texts.push(repo.blob(&side.oid).await?);
        }
        let binary = |b: &[u8]| b.iter().take(8000).any(|&c| c == 0);
        if binary(&result_bytes) || texts.iter().any(|t| binary(t)) {
            return Ok(Some(path));
        }
        let result_text = String::from_utf8_lossy(&result_bytes);
        let texts: Vec<String> = texts
            .iter()
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .collect();
        let same_as: Vec<Option<usize>> = sides
            .iter()
            .enumerate()
            .map(|(i, side)| sides[..i].iter().position(|other| other.oid == side.oid))
            .collect();
        match shows_lines(&result_text, &texts, &same_as) {
            Some(false) => {}
            _ => return Ok(Some(path)),
        }
    }
    Ok(None)
}

/// One line of the merge's file: from which parents it is new (a bit
/// each), and the lines parents had just before it that it lost, with
/// the parents that had them.
#[derive(Clone, Default)]
struct Line<'t> {
    added: u32,
    lost: Vec<(&'t str, u32)>,
}

/// Whether git's dense combined diff of `result` against `parents` shows
/// any line; `None` when it is too large to decide. `same_as[i]` names an
/// earlier parent with the same content, whose diff is reused.
fn shows_lines(result: &str, parents: &[String], same_as: &[Option<usize>]) -> Option<bool> {
    let count = result.split_inclusive('\n').count();
    // One more than the lines: lines lost after the last one hang there.
    let mut lines: Vec<Line> = vec![Line::default(); count + 1];
    for (i, parent) in parents.iter().enumerate() {
        let bit = 1u32 << i;
        if let Some(j) = same_as[i] {
            let earlier = 1u32 << j;
            for line in &mut lines {
                if line.added & earlier != 0 {
                    line.added |= bit;
                }
                for (_, map) in &mut line.lost {
                    if *map & earlier != 0 {
                        *map |= bit;
                    }
                }
            }
            continue;
        }
        let old: Vec<&str> = parent.split_inclusive('\n').collect();
        for (removed, added) in super::diff::line_diff_without_context(parent, result) {
            for line in &mut lines[added.clone()] {
                line.added |= bit;
            }
            let bucket = &mut lines[added.start].lost;
            if !lose(bucket, &old[removed], bit) {
                return None;
            }
        }
    }
    Some(dense_hunks_remain(&lines, parents.len()))
}

/// Adds `gone` (lost from the parent `bit`) to the lines already lost at
/// one place: lines the two share (their longest common run, as git pairs
/// them) are one line lost from both.
fn lose<'t>(bucket: &mut Vec<(&'t str, u32)>, gone: &[&'t str], bit: u32) -> bool {
    if bucket.is_empty() {
        bucket.extend(gone.iter().map(|line| (*line, bit)));
        return true;
    }
    let (n, m) = (bucket.len(), gone.len());
    if n.saturating_mul(m) > MAX_PAIRINGS {
        return false;
    }
    let same =
        |a: &str, b: &str| a.strip_suffix('\n').unwrap_or(a) == b.strip_suffix('\n').unwrap_or(b);
    // lcs[i][j]: the longest common run of bucket[i..] and gone[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = match same(bucket[i].0, gone[j]) {
                true => lcs[i + 1][j + 1] + 1,
                false => lcs[i + 1][j].max(lcs[i][j + 1]),
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut merged = Vec::with_capacity(n + m);
    while i < n && j < m {
        if same(bucket[i].0, gone[j]) {
            merged.push((bucket[i].0, bucket[i].1 | bit));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            merged.push(bucket[i]);
            i += 1;
        } else {
            merged.push((gone[j], bit));
            j += 1;
        }
    }
    merged.extend_from_slice(&bucket[i..]);
    merged.extend(gone[j..].iter().map(|line| (*line, bit)));
    *bucket = merged;
    true
}

/// git's `make_hunks` with `--cc`: lines that differ from a parent, in
/// stretches joined across gaps of up to three lines; a stretch whose
/// every change is against the same parents, not all of them, is
/// dropped. Whether any line is left.
fn dense_hunks_remain(lines: &[Line], parents: usize) -> bool {
    let all = (1u32 << parents) - 1;
    let last = lines.len() - 1;
    let mut marked: Vec<bool> = lines
        .iter()
        .map(|line| line.added & all != 0 || !line.lost.is_empty())
        .collect();
    // A stretch that ends in a line interesting only for what it lost
    // gets its trailing context one line sooner.
    let tail = |begin: usize, end: usize| {
        if begin < end && lines[end - 1].added & all == 0 {
            end - 1
        } else {
            end
        }
    };
    let mut i = 0;
    while i <= last {
        while i <= last && !marked[i] {
            i += 1;
        }
        if i > last {
            break;
        }
        let begin = i;
        let mut j = i + 1;
        while j <= last {
            if marked[j] {
                j += 1;
                continue;
            }
            let reach = (tail(begin, j) + CONTEXT).min(last + 1);
            match (j..reach).rev().find(|&k| marked[k]) {
                Some(k) => j = k + 1,
                None => break,
            }
        }
        let end = j;
        let mut same = 0;
        let mut several = false;
        'lines: for line in &lines[begin..end] {
            let changes = std::iter::once(line.added & all)
                .filter(|c| *c != 0)
                .chain(line.lost.iter().map(|(_, map)| *map));
            for change in changes {
                if same == 0 {
                    same = change;
                } else if same != change {
                    several = true;
                    break 'lines;
                }
            }
        }
        if !several && same != all {
            marked[begin..end].iter_mut().for_each(|m| *m = false);
        }
        i = end;
    }
    marked.into_iter().any(|m| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shows(result: &str, parents: &[&str]) -> bool {
        let parents: Vec<String> = parents.iter().map(|p| p.to_string()).collect();
        let same_as = vec![None; parents.len()];
        shows_lines(result, &parents, &same_as).unwrap()
    }

    #[test]
    fn a_clean_merge_of_two_sides_shows_nothing() {
        let base: String = (1..=12).map(|n| format!("l{n}\n")).collect();
        let ours = base.replace("l2\n", "two\n");
        let theirs = base.replace("l11\n", "eleven\n");
        let merged = ours.replace("l11\n", "eleven\n");
        assert!(!shows(&merged, &[&ours, &theirs]));
    }

    #[test]
    fn a_line_no_parent_had_is_shown() {
        let ours = "a\nb\nc\n";
        let theirs = "a\nB\nc\n";
        assert!(shows("a\nresolved\nc\n", &[ours, theirs]));
    }

    #[test]
    fn changes_from_each_side_close_together_are_shown() {
        let base: String = (1..=6).map(|n| format!("l{n}\n")).collect();
        let ours = base.replace("l2\n", "two\n");
        let theirs = base.replace("l4\n", "four\n");
        let merged = ours.replace("l4\n", "four\n");
        // Within three lines of each other: one stretch, two versions.
        assert!(shows(&merged, &[&ours, &theirs]));
    }
}
