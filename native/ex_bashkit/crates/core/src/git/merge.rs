//! Three-way merges as git's `ort` strategy makes them for the common
//! cases: the merge base, each path taken from the side that changed it,
//! and a line merge (diff3) where both did, with git's conflict markers.

use std::collections::{BinaryHeap, HashMap};

use super::odb::Oid;
use super::repo::Repo;

/// The best common ancestor of `a` and `b`: a common ancestor no other
/// common ancestor descends from (the newest, where there are several).
pub async fn base(repo: &Repo, a: &str, b: &str) -> Option<Oid> {
    bases(repo, a, b).await.into_iter().next()
}

/// Whether `a` is `b` or one of its ancestors.
pub async fn is_ancestor(repo: &Repo, a: &str, b: &str) -> bool {
    a == b
        || paint_down_to_common(repo, b, a)
            .await
            .iter()
            .any(|o| o == a)
}

/// Every best common ancestor of `a` and `b`, newest first: those no other
/// common ancestor descends from.
pub async fn bases(repo: &Repo, a: &str, b: &str) -> Vec<Oid> {
    if a == b {
        return vec![a.to_string()];
    }
    let found = paint_down_to_common(repo, a, b).await;
    let mut best = Vec::new();
    for (i, candidate) in found.iter().enumerate() {
        let mut redundant = false;
        for (j, other) in found.iter().enumerate() {
            if i != j
                && paint_down_to_common(repo, other, candidate)
                    .await
                    .contains(candidate)
            {
                redundant = true;
                break;
            }
        }
        if !redundant {
            best.push(candidate.clone());
        }
    }
    best
}

const FROM_ONE: u8 = 1;
const FROM_TWO: u8 = 2;
const STALE: u8 = 4;

/// git's walk for merge bases: from both commits at once, newest commit
/// date first, marking each commit with the side(s) it was reached from;
/// a commit reached from both is a common ancestor and what lies below it
/// is stale. The walk ends when only stale commits are left.
async fn paint_down_to_common(repo: &Repo, one: &str, two: &str) -> Vec<Oid> {
    let mut marks: HashMap<Oid, u8> = HashMap::new();
    let mut queue: BinaryHeap<(i64, u64, Oid)> = BinaryHeap::new();
    let mut order = u64::MAX;
    let mut push = |queue: &mut BinaryHeap<(i64, u64, Oid)>, time: i64, oid: Oid| {
        order -= 1;
        queue.push((time, order, oid));
    };
    let time_of = |oid: &str| {
        let oid = oid.to_string();
        async move { repo.commit(&oid).await.map_or(0, |c| c.committer.time) }
    };
    marks.insert(one.to_string(), FROM_ONE);
    push(&mut queue, time_of(one).await, one.to_string());
    *marks.entry(two.to_string()).or_default() |= FROM_TWO;
    push(&mut queue, time_of(two).await, two.to_string());
    let mut found = Vec::new();
    while queue
        .iter()
        .any(|(_, _, oid)| marks.get(oid).is_some_and(|m| m & STALE == 0))
    {
        let Some((_, _, oid)) = queue.pop() else {
            break;
        };
        let mut flags = marks.get(&oid).copied().unwrap_or(0) & (FROM_ONE | FROM_TWO | STALE);
        if flags == FROM_ONE | FROM_TWO {
            if !found.contains(&oid) {
                found.push(oid.clone());
            }
            flags |= STALE;
        }
        let Ok(commit) = repo.commit(&oid).await else {
            continue;
        };
        for parent in commit.parents {
            let mark = marks.entry(parent.clone()).or_default();
            if *mark & flags == flags {
                continue;
            }
            *mark |= flags;
            let time = time_of(&parent).await;
            push(&mut queue, time, parent);
        }
    }
    found
}

/// A change one side made: base lines `start..end` became `lines`.
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

/// What `side` changed of `base`, as git's xdiff pairs their lines.
fn hunks<'a>(base: &[&'a str], side: &[&'a str]) -> Vec<Hunk<'a>> {
    let bytes =
        |lines: &[&'a str]| -> Vec<&'a [u8]> { lines.iter().map(|l| l.as_bytes()).collect() };
    super::xdiff::hunks(&bytes(base), &bytes(side))
        .into_iter()
        .map(|(removed, added)| Hunk {
            start: removed.start,
            end: removed.end,
            lines: side[added].to_vec(),
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
