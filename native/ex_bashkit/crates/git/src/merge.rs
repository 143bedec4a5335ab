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
        async move { repo.commit_links(&oid).await.map_or(0, |(time, _)| time) }
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
        let Ok((_, parents)) = repo.commit_links(&oid).await else {
            continue;
        };
        for parent in parents {
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

/// One change of a three-way merge, as git's xmerge keeps it: the lines
/// it covers in the base (`i0`, `chg0`), in ours (`i1`, `chg1`) and in
/// theirs (`i2`, `chg2`), and whose it is.
#[derive(Clone, Copy)]
struct Change {
    mode: Mode,
    i0: usize,
    chg0: usize,
    i1: usize,
    chg1: usize,
    i2: usize,
    chg2: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Conflict,
    Ours,
    Theirs,
    /// Both sides made the same change (found when a conflict is refined).
    Same,
}

/// A side's changes against the base: base lines `i1..i1+chg1` became
/// the side's `i2..i2+chg2` (git's `xdchange_t`), found as merge-ort
/// finds them.
fn script(old: &[&str], new: &[&str]) -> Vec<(usize, usize, usize, usize)> {
    let old: Vec<&[u8]> = old.iter().map(|l| l.as_bytes()).collect();
    let new: Vec<&[u8]> = new.iter().map(|l| l.as_bytes()).collect();
    super::xdiff::merge_hunks(&old, &new)
        .into_iter()
        .map(|(removed, added)| (removed.start, removed.len(), added.start, added.len()))
        .collect()
}

/// A change one side made alone (`change` in its script), placed at `at`
/// in the other side, which keeps the base's lines there.
fn one_side(mode: Mode, change: (usize, usize, usize, usize), at: isize) -> Change {
    let (i0, chg0, i, chg) = change;
    let at = at as usize;
    match mode {
        Mode::Theirs => Change {
            mode,
            i0,
            chg0,
            i1: at,
            chg1: chg0,
            i2: i,
            chg2: chg,
        },
        _ => Change {
            mode,
            i0,
            chg0,
            i1: i,
            chg1: chg,
            i2: at,
            chg2: chg0,
        },
    }
}

/// git's `xdl_append_merge`: a change that touches the last one joins it
/// (a conflict if they are not the same side's).
fn append(changes: &mut Vec<Change>, change: Change) {
    if let Some(last) = changes.last_mut() {
        if change.i1 <= last.i1 + last.chg1 || change.i2 <= last.i2 + last.chg2 {
            if change.mode != last.mode {
                last.mode = Mode::Conflict;
            }
            last.chg0 = change.i0 + change.chg0 - last.i0;
            last.chg1 = change.i1 + change.chg1 - last.i1;
            last.chg2 = change.i2 + change.chg2 - last.i2;
            return;
        }
    }
    changes.push(change);
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Merges text as git's xmerge does at its default level (`zealous`):
/// the result, and whether it has conflicts (marked as git marks them,
/// `ours`/`theirs` naming the sides).
pub fn text(
    base: &str,
    ours: &str,
    theirs: &str,
    ours_name: &str,
    theirs_name: &str,
) -> (String, bool) {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (mut x1, mut x2) = (
        script(&b, &o).into_iter().peekable(),
        script(&b, &t).into_iter().peekable(),
    );
    let (n0, n1, n2) = (b.len() as isize, o.len() as isize, t.len() as isize);
    let mut changes: Vec<Change> = Vec::new();
    // Walk both sides' changes in base order, as `xdl_do_merge` does.
    loop {
        let (a, c) = match (x1.peek().copied(), x2.peek().copied()) {
            (Some(a), Some(c)) => (a, c),
            (Some(a), None) => {
                append(
                    &mut changes,
                    one_side(Mode::Ours, a, a.0 as isize + n2 - n0),
                );
                x1.next();
                continue;
            }
            (None, Some(c)) => {
                append(
                    &mut changes,
                    one_side(Mode::Theirs, c, c.0 as isize + n1 - n0),
                );
                x2.next();
                continue;
            }
            (None, None) => break,
        };
        if a.0 + a.1 < c.0 {
            let at = c.2 as isize - c.0 as isize + a.0 as isize;
            append(&mut changes, one_side(Mode::Ours, a, at));
            x1.next();
            continue;
        }
        if c.0 + c.1 < a.0 {
            let at = a.2 as isize - a.0 as isize + c.0 as isize;
            append(&mut changes, one_side(Mode::Theirs, c, at));
            x2.next();
            continue;
        }
        let same = a.0 == c.0 && a.1 == c.1 && a.3 == c.3 && o[a.2..a.2 + a.3] == t[c.2..c.2 + c.3];
        if !same {
            let off = a.0 as isize - c.0 as isize;
            let ffo = off + a.1 as isize - c.1 as isize;
            let (mut i0, mut i1, mut i2) = (a.0 as isize, a.2 as isize, c.2 as isize);
            if off > 0 {
                i0 -= off;
                i1 -= off;
            } else {
                i2 += off;
            }
            let mut chg0 = a.0 as isize + a.1 as isize - i0;
            let mut chg1 = a.2 as isize + a.3 as isize - i1;
            let mut chg2 = c.2 as isize + c.3 as isize - i2;
            if ffo < 0 {
                chg0 -= ffo;
                chg1 -= ffo;
            } else {
                chg2 += ffo;
            }
            append(
                &mut changes,
                Change {
                    mode: Mode::Conflict,
                    i0: i0 as usize,
                    chg0: chg0 as usize,
                    i1: i1 as usize,
                    chg1: chg1 as usize,
                    i2: i2 as usize,
                    chg2: chg2 as usize,
                },
            );
        }
        let (end1, end2) = (a.0 + a.1, c.0 + c.1);
        if end1 >= end2 {
            x2.next();
        }
        if end2 >= end1 {
            x1.next();
        }
    }
    let changes = simplify(refine(changes, &o, &t));
    // Out: ours' lines, each change as its mode says (git's
    // `xdl_fill_merge_buffer`).
    let mut out = String::new();
    let copy = |out: &mut String, lines: &[&str], newline: bool| {
        for line in lines {
            out.push_str(line);
        }
        if newline && !lines.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
    };
    let mut at = 0;
    let mut conflicted = false;
    for m in &changes {
        match m.mode {
            Mode::Same => continue,
            Mode::Conflict => {
                conflicted = true;
                copy(&mut out, &o[at..m.i1], false);
                out.push_str(&format!("<<<<<<< {ours_name}\n"));
                copy(&mut out, &o[m.i1..m.i1 + m.chg1], true);
                out.push_str("=======\n");
                copy(&mut out, &t[m.i2..m.i2 + m.chg2], true);
                out.push_str(&format!(">>>>>>> {theirs_name}\n"));
            }
            Mode::Ours => {
                copy(&mut out, &o[at..m.i1], false);
                copy(&mut out, &o[m.i1..m.i1 + m.chg1], false);
            }
            Mode::Theirs => {
                copy(&mut out, &o[at..m.i1], false);
                copy(&mut out, &t[m.i2..m.i2 + m.chg2], false);
            }
        }
        at = m.i1 + m.chg1;
    }
    copy(&mut out, &o[at..], false);
    (out, conflicted)
}

/// git's `xdl_refine_conflicts`: each conflict narrowed to the lines the
/// two sides really differ in (a diff of the one against the other),
/// split where they agree.
fn refine(changes: Vec<Change>, ours: &[&str], theirs: &[&str]) -> Vec<Change> {
    let mut out = Vec::with_capacity(changes.len());
    for mut m in changes {
        if m.mode != Mode::Conflict || m.chg1 == 0 || m.chg2 == 0 {
            out.push(m);
            continue;
        }
        let found = script(&ours[m.i1..m.i1 + m.chg1], &theirs[m.i2..m.i2 + m.chg2]);
        if found.is_empty() {
            m.mode = Mode::Same;
            out.push(m);
            continue;
        }
        for (i1, chg1, i2, chg2) in found {
            out.push(Change {
                mode: Mode::Conflict,
                i1: m.i1 + i1,
                chg1,
                i2: m.i2 + i2,
                chg2,
                ..m
            });
        }
    }
    out
}

/// git's `xdl_simplify_non_conflicts`: two conflicts with at most three
/// lines between them become one (it reads shorter that way).
fn simplify(mut changes: Vec<Change>) -> Vec<Change> {
    let mut k = 0;
    while k + 1 < changes.len() {
        let (m, next) = (changes[k], changes[k + 1]);
        let (begin, end) = (m.i1 + m.chg1, next.i1);
        if m.mode != Mode::Conflict || next.mode != Mode::Conflict || end.saturating_sub(begin) > 3
        {
            k += 1;
        } else {
            changes[k].chg1 = next.i1 + next.chg1 - m.i1;
            changes[k].chg2 = next.i2 + next.chg2 - m.i2;
            changes.remove(k + 1);
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_splits_where_the_sides_agree_for_more_than_three_lines() {
        let base = "x\n1\n2\n3\ny\n";
        let ours = "x\nO1\nk1\nk2\nk3\nk4\nO2\ny\n";
        let theirs = "x\nT1\nk1\nk2\nk3\nk4\nT2\ny\n";
        let (out, conflict) = text(base, ours, theirs, "ours", "theirs");
        assert!(conflict);
        assert_eq!(
            out,
            "x\n<<<<<<< ours\nO1\n=======\nT1\n>>>>>>> theirs\nk1\nk2\nk3\nk4\n\
             <<<<<<< ours\nO2\n=======\nT2\n>>>>>>> theirs\ny\n"
        );
    }

    #[test]
    fn conflicts_three_lines_apart_or_closer_are_one() {
        let base = "x\n1\n2\n3\ny\n";
        let ours = "x\nO1\nend\n\nO2\ny\n";
        let theirs = "x\nT1\nend\n\nT2\ny\n";
        let (out, _) = text(base, ours, theirs, "ours", "theirs");
        assert_eq!(
            out,
            "x\n<<<<<<< ours\nO1\nend\n\nO2\n=======\nT1\nend\n\nT2\n>>>>>>> theirs\ny\n"
        );
    }

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
