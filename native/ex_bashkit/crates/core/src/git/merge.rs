//! Three-way merges as git's `ort` strategy makes them for the common
//! cases: the merge base, each path taken from the side that changed it,
//! and a line merge (diff3) where both did, with git's conflict markers.

use std::collections::{HashSet, VecDeque};

use similar::{DiffOp, TextDiff};

use super::odb::Oid;
use super::repo::Repo;

/// The best common ancestor of `a` and `b`: a common ancestor no other
/// common ancestor descends from (the newest, where there are several).
pub async fn base(repo: &Repo, a: &str, b: &str) -> Option<Oid> {
    let of_a = repo.ancestors(a).await;
    let of_b = repo.ancestors(b).await;
    let common: HashSet<&Oid> = of_a.intersection(&of_b).collect();
    // A common ancestor reached through another one is not "best".
    let mut shadowed = HashSet::new();
    for oid in &common {
        let mut pending: VecDeque<Oid> = repo.commit(oid).await.ok()?.parents.into();
        while let Some(next) = pending.pop_front() {
            if shadowed.insert(next.clone()) {
                if let Ok(commit) = repo.commit(&next).await {
                    pending.extend(commit.parents);
                }
            }
        }
    }
    let mut best: Option<(i64, Oid)> = None;
    for oid in common {
        if shadowed.contains(oid) {
            continue;
        }
        let time = repo.commit(oid).await.ok()?.committer.time;
        if best.as_ref().is_none_or(|(t, _)| time > *t) {
            best = Some((time, oid.clone()));
        }
    }
    best.map(|(_, oid)| oid)
}

/// A change one side made: base lines `start..end` became `lines`.
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

fn hunks<'a>(base: &[&'a str], side: &[&'a str]) -> Vec<Hunk<'a>> {
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .diff_slices(base, side);
    diff.ops()
        .iter()
        .filter_map(|op| match *op {
            DiffOp::Equal { .. } => None,
            DiffOp::Delete {
                old_index, old_len, ..
            } => Some(Hunk {
                start: old_index,
                end: old_index + old_len,
                lines: Vec::new(),
            }),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => Some(Hunk {
                start: old_index,
                end: old_index,
                lines: side[new_index..new_index + new_len].to_vec(),
            }),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => Some(Hunk {
                start: old_index,
                end: old_index + old_len,
                lines: side[new_index..new_index + new_len].to_vec(),
            }),
        })
        .collect()
}

/// A side's text for base lines `start..end`, its hunks there applied.
fn side_text<'a>(base: &[&'a str], hunks: &[&Hunk<'a>], start: usize, end: usize) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut at = start;
    for hunk in hunks {
        out.extend_from_slice(&base[at..hunk.start]);
        out.extend_from_slice(&hunk.lines);
        at = hunk.end;
    }
    out.extend_from_slice(&base[at..end]);
    out
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Merges text: the result, and whether it has conflicts (marked as git
/// marks them, `ours`/`theirs` naming the sides).
pub fn text(
    base: &str,
    ours: &str,
    theirs: &str,
    ours_name: &str,
    theirs_name: &str,
) -> (String, bool) {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (ho, ht) = (hunks(&b, &o), hunks(&b, &t));
    let (mut i, mut j, mut at) = (0, 0, 0);
    let mut out = String::new();
    let mut conflicted = false;
    let push = |out: &mut String, lines: &[&str]| {
        for line in lines {
            out.push_str(line);
        }
    };
    while i < ho.len() || j < ht.len() {
        // A group: hunks of either side that overlap or touch.
        let first_ours = match (ho.get(i), ht.get(j)) {
            (Some(a), Some(b)) => a.start <= b.start,
            (Some(_), None) => true,
            _ => false,
        };
        let (mut start, mut end) = if first_ours {
            (ho[i].start, ho[i].end)
        } else {
            (ht[j].start, ht[j].end)
        };
        let (oi, tj) = (i, j);
        loop {
            if ho.get(i).is_some_and(|h| h.start <= end && h.end >= start) {
                start = start.min(ho[i].start);
                end = end.max(ho[i].end);
                i += 1;
            } else if ht.get(j).is_some_and(|h| h.start <= end && h.end >= start) {
                start = start.min(ht[j].start);
                end = end.max(ht[j].end);
                j += 1;
            } else {
                break;
            }
        }
        push(&mut out, &b[at..start]);
        let ours_hunks: Vec<&Hunk> = ho[oi..i].iter().collect();
        let theirs_hunks: Vec<&Hunk> = ht[tj..j].iter().collect();
        let mine = side_text(&b, &ours_hunks, start, end);
        let other = side_text(&b, &theirs_hunks, start, end);
        if theirs_hunks.is_empty() || mine == other {
            push(&mut out, &mine);
        } else if ours_hunks.is_empty() {
            push(&mut out, &other);
        } else {
            // Lines both sides agree on at either end stay out of the
            // conflict, as git's zealous merge leaves them.
            let head = mine.iter().zip(&other).take_while(|(a, b)| a == b).count();
            let tail = mine[head..]
                .iter()
                .rev()
                .zip(other[head..].iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            push(&mut out, &mine[..head]);
            conflicted = true;
            let marker = |out: &mut String, text: String| {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&text);
            };
            marker(&mut out, format!("<<<<<<< {ours_name}\n"));
            push(&mut out, &mine[head..mine.len() - tail]);
            marker(&mut out, "=======\n".to_string());
            push(&mut out, &other[head..other.len() - tail]);
            marker(&mut out, format!(">>>>>>> {theirs_name}\n"));
            push(&mut out, &mine[mine.len() - tail..]);
        }
        at = end;
    }
    push(&mut out, &b[at..]);
    (out, conflicted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_to_different_lines_merge_cleanly() {
        let base = "a\nb\nc\nd\ne\n";
        let (out, conflict) = text(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "HEAD", "topic");
        assert_eq!((out.as_str(), conflict), ("A\nb\nc\nd\nE\n", false));
    }

    #[test]
    fn changes_to_one_line_conflict_with_git_markers() {
        let (out, conflict) = text("a\nb\nc\n", "a\nB1\nc\n", "a\nB2\nc\n", "HEAD", "topic");
        assert!(conflict);
        assert_eq!(out, "a\n<<<<<<< HEAD\nB1\n=======\nB2\n>>>>>>> topic\nc\n");
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict() {
        let (out, conflict) = text("a\nb\n", "a\nx\n", "a\nx\n", "HEAD", "t");
        assert_eq!((out.as_str(), conflict), ("a\nx\n", false));
    }
}
