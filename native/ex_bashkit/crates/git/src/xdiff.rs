//! Which lines changed between two files, found as git's xdiff finds them
//! (`diff.algorithm=myers`, the default, with `diff.indentHeuristic`):
//! the same preparation (common ends trimmed, lines with no partner
//! discarded, frequent ones discarded inside runs of those), the same
//! divide-and-conquer Myers search with its cost heuristics, and the same
//! sliding of changes into place. Another diff algorithm, even a minimal
//! one, pairs lines differently on real files, and `diff`, `--stat`
//! counts and `blame` would then differ from git's.

use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;

const MAX_COST_MIN: i64 = 256;
const HEUR_MIN_COST: i64 = 256;
const SNAKE_CNT: i64 = 20;
const K_HEUR: i64 = 4;
const KPDIS_RUN: i64 = 4;
const MAX_EQLIMIT: usize = 1024;
const SIMSCAN_WINDOW: i64 = 100;
const LINE_MAX: i64 = i64::MAX;

/// The changed lines of `old` and `new` (lines as split at `\n`, each
/// with its newline), as git marks them.
pub fn changed_lines(old: &[&[u8]], new: &[&[u8]]) -> (Vec<bool>, Vec<bool>) {
    let (mut a, mut b, count) = sides(old, new);
    prepare(&mut a, &mut b, count);
    compare(&mut a, &mut b);
    compact(&mut a, &mut b, true);
    compact(&mut b, &mut a, true);
    (a.changed_lines(), b.changed_lines())
}

/// The changes between `old` and `new` as runs: the old lines each removes
/// and the new lines it adds, in order.
pub fn hunks(old: &[&[u8]], new: &[&[u8]]) -> Vec<(Range<usize>, Range<usize>)> {
    let (removed, added) = changed_lines(old, new);
    runs(&removed, &added)
}

/// The changes as git's merges find them (merge-ort diffs with the
/// histogram algorithm, and slides changes without the indent
/// heuristic), as runs like [`hunks`]'.
pub fn merge_hunks(old: &[&[u8]], new: &[&[u8]]) -> Vec<(Range<usize>, Range<usize>)> {
    let (mut a, mut b, _) = sides(old, new);
    histogram(&mut a, &mut b, 1, old.len(), 1, new.len());
    compact(&mut a, &mut b, false);
    compact(&mut b, &mut a, false);
    runs(&a.changed_lines(), &b.changed_lines())
}

fn runs(removed: &[bool], added: &[bool]) -> Vec<(Range<usize>, Range<usize>)> {
    let mut hunks = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < removed.len() || j < added.len() {
        if removed.get(i) != Some(&true) && added.get(j) != Some(&true) {
            i += 1;
            j += 1;
            continue;
        }
        let (from_i, from_j) = (i, j);
        while removed.get(i) == Some(&true) {
            i += 1;
        }
        while added.get(j) == Some(&true) {
            j += 1;
        }
        hunks.push((from_i..i, from_j..j));
    }
    hunks
}

/// Myers as git's `xdl_do_diff` runs it: prepared and searched, not yet
/// slid into place.
fn myers(old: &[&[u8]], new: &[&[u8]]) -> (Vec<bool>, Vec<bool>) {
    let (mut a, mut b, count) = sides(old, new);
    prepare(&mut a, &mut b, count);
    compare(&mut a, &mut b);
    (a.changed_lines(), b.changed_lines())
}

/// git's xhistogram.c over lines `line1..line1+count1` of `a` and
/// `line2..line2+count2` of `b` (numbered from 1, as there): the longest
/// run of lines common to both that are rarest in `a` splits the
/// ranges, each side of it diffed the same way; where every common line
/// is too frequent (more than 64 times), Myers decides.
fn histogram(
    a: &mut Side,
    b: &mut Side,
    mut line1: usize,
    mut count1: usize,
    mut line2: usize,
    mut count2: usize,
) {
    loop {
        if count1 == 0 && count2 == 0 {
            return;
        }
        if count1 == 0 || count2 == 0 {
            for l in line1..line1 + count1 {
                a.set_changed(l as i64 - 1, true);
            }
            for l in line2..line2 + count2 {
                b.set_changed(l as i64 - 1, true);
            }
            return;
        }
        match find_lcs(a, b, line1, count1, line2, count2) {
            Lcs::FallBack => {
                let (old, new) = (
                    &a.lines[line1 - 1..line1 - 1 + count1],
                    &b.lines[line2 - 1..line2 - 1 + count2],
                );
                let (removed, added) = myers(old, new);
                for (k, changed) in removed.into_iter().enumerate() {
                    a.set_changed((line1 - 1 + k) as i64, changed);
                }
                for (k, changed) in added.into_iter().enumerate() {
                    b.set_changed((line2 - 1 + k) as i64, changed);
                }
                return;
            }
            Lcs::None => {
                for l in line1..line1 + count1 {
                    a.set_changed(l as i64 - 1, true);
                }
                for l in line2..line2 + count2 {
                    b.set_changed(l as i64 - 1, true);
                }
                return;
            }
            Lcs::Found {
                begin1,
                end1,
                begin2,
                end2,
            } => {
                histogram(a, b, line1, begin1 - line1, line2, begin2 - line2);
                let (last1, last2) = (line1 + count1 - 1, line2 + count2 - 1);
                count1 = last1 - end1;
                line1 = end1 + 1;
                count2 = last2 - end2;
                line2 = end2 + 1;
            }
        }
    }
}

enum Lcs {
    Found {
        begin1: usize,
        end1: usize,
        begin2: usize,
        end2: usize,
    },
    None,
    FallBack,
}

/// xhistogram.c's `find_lcs` (with `scanA` and `try_lcs`).
fn find_lcs(a: &Side, b: &Side, line1: usize, count1: usize, line2: usize, count2: usize) -> Lcs {
    const MAX_CHAIN_LENGTH: usize = 64;
    let last1 = line1 + count1 - 1;
    let last2 = line2 + count2 - 1;
    let class_a = |l: usize| a.class[l - 1];
    let class_b = |l: usize| b.class[l - 1];
    // Each class of `a`'s range: its first line there and how often it
    // occurs; each line: the next line of its class.
    let mut records: HashMap<usize, (usize, usize)> = HashMap::default();
    let mut next = vec![0usize; count1];
    for ptr in (line1..=last1).rev() {
        let record = records.entry(class_a(ptr)).or_insert((0, 0));
        if record.1 > 0 {
            next[ptr - line1] = record.0;
        }
        record.0 = ptr;
        record.1 += 1;
    }
    let count_of = |l: usize| records[&class_a(l)].1;
    let (mut begin1, mut end1, mut begin2, mut end2) = (0usize, 0usize, 0usize, 0usize);
    let mut best = MAX_CHAIN_LENGTH + 1;
    let mut has_common = false;
    let mut b_ptr = line2;
    while b_ptr <= last2 {
        let mut b_next = b_ptr + 1;
        if let Some(&(first, count)) = records.get(&class_b(b_ptr)) {
            has_common = true;
            if count <= best {
                let mut at = first;
                loop {
                    let mut np = next[at - line1];
                    let (mut as_, mut bs, mut ae, mut be, mut rc) = (at, b_ptr, at, b_ptr, count);
                    while line1 < as_ && line2 < bs && class_a(as_ - 1) == class_b(bs - 1) {
                        as_ -= 1;
                        bs -= 1;
                        if 1 < rc {
                            rc = rc.min(count_of(as_));
                        }
                    }
                    while ae < last1 && be < last2 && class_a(ae + 1) == class_b(be + 1) {
                        ae += 1;
                        be += 1;
                        if 1 < rc {
                            rc = rc.min(count_of(ae));
                        }
                    }
                    if b_next <= be {
                        b_next = be + 1;
                    }
                    if end1 - begin1 < ae - as_ || rc < best {
                        (begin1, begin2, end1, end2) = (as_, bs, ae, be);
                        best = rc;
                    }
                    if np == 0 {
                        break;
                    }
                    while np != 0 && np <= ae {
                        np = next[np - line1];
                    }
                    if np == 0 {
                        break;
                    }
                    at = np;
                }
            }
        }
        b_ptr = b_next;
    }
    if has_common && MAX_CHAIN_LENGTH < best {
        Lcs::FallBack
    } else if begin1 == 0 && begin2 == 0 {
        Lcs::None
    } else {
        Lcs::Found {
            begin1,
            end1,
            begin2,
            end2,
        }
    }
}

/// The two files as sides to diff, their lines classed together, and how
/// many classes there are.
fn sides<'a>(old: &'a [&'a [u8]], new: &'a [&'a [u8]]) -> (Side<'a>, Side<'a>, usize) {
    let mut classes: HashMap<&[u8], usize> = HashMap::default();
    let old_classes = classify(&mut classes, old);
    let new_classes = classify(&mut classes, new);
    let count = classes.len();
    (
        Side::new(old, old_classes),
        Side::new(new, new_classes),
        count,
    )
}

/// Each line's class: lines of equal bytes share one, across both files.
fn classify<'a>(classes: &mut HashMap<&'a [u8], usize>, lines: &[&'a [u8]]) -> Vec<usize> {
    lines
        .iter()
        .map(|&line| {
            let next = classes.len();
            *classes.entry(line).or_insert(next)
        })
        .collect()
}

/// One file: its lines, their classes (equal lines, equal classes), and
/// which are changed (with a false sentinel either end: index `i` is
/// `changed[i + 1]`).
struct Side<'a> {
    lines: &'a [&'a [u8]],
    class: Vec<usize>,
    changed: Vec<bool>,
    /// The lines left to the search after preparation, and their classes.
    index: Vec<usize>,
    reduced: Vec<usize>,
}

impl<'a> Side<'a> {
    fn new(lines: &'a [&'a [u8]], class: Vec<usize>) -> Self {
        let n = lines.len();
        Side {
            lines,
            class,
            changed: vec![false; n + 2],
            index: Vec::new(),
            reduced: Vec::new(),
        }
    }

    fn len(&self) -> i64 {
        self.lines.len() as i64
    }

    fn is_changed(&self, i: i64) -> bool {
        self.changed[(i + 1) as usize]
    }

    fn set_changed(&mut self, i: i64, value: bool) {
        self.changed[(i + 1) as usize] = value;
    }

    fn changed_lines(&self) -> Vec<bool> {
        self.changed[1..self.changed.len() - 1].to_vec()
    }
}

/// xdl_bogosqrt: a power of two near the square root.
fn bogosqrt(mut n: i64) -> i64 {
    let mut i = 1;
    while n > 0 {
        i <<= 1;
        n >>= 2;
    }
    i
}

/// xprepare.c: trims the common ends, then keeps for the search only the
/// lines that have a partner in the other file (marking the others
/// changed), and of the lines with very many partners only those not in
/// a run of partnerless ones.
fn prepare<'a>(a: &mut Side<'a>, b: &mut Side<'a>, classes: usize) {
    let (n1, n2) = (a.lines.len(), b.lines.len());
    let lim = n1.min(n2);
    let prefix = (0..lim).take_while(|&i| a.class[i] == b.class[i]).count();
    let suffix = (0..lim - prefix)
        .take_while(|&i| a.class[n1 - 1 - i] == b.class[n2 - 1 - i])
        .count();
    let (start, end1, end2) = (prefix, n1 - suffix, n2 - suffix);
    let mut in_a = vec![0usize; classes];
    let mut in_b = vec![0usize; classes];
    for &c in &a.class {
        in_a[c] += 1;
    }
    for &c in &b.class {
        in_b[c] += 1;
    }
    let kinds = |side: &Side, end: usize, other: &[usize], n: usize| -> Vec<u8> {
        let limit = (bogosqrt(n as i64) as usize).min(MAX_EQLIMIT);
        let mut dis = vec![0u8; n];
        for i in start..end {
            let matches = other[side.class[i]];
            dis[i] = match matches {
                0 => 0,
                m if m >= limit => 2,
                _ => 1,
            };
        }
        dis
    };
    let dis1 = kinds(a, end1, &in_b, n1);
    let dis2 = kinds(b, end2, &in_a, n2);
    for (side, dis, end) in [(a, dis1, end1), (b, dis2, end2)] {
        for i in start..end {
            let keep = dis[i] == 1
                || (dis[i] == 2 && !clean_mmatch(&dis, i as i64, start as i64, end as i64 - 1));
            if keep {
                side.index.push(i);
                side.reduced.push(side.class[i]);
            } else {
                side.set_changed(i as i64, true);
            }
        }
    }
}

/// xdl_clean_mmatch: whether a line with many partners sits in a run of
/// partnerless lines (and so is discarded too).
fn clean_mmatch(dis: &[u8], i: i64, mut s: i64, mut e: i64) -> bool {
    if i - s > SIMSCAN_WINDOW {
        s = i - SIMSCAN_WINDOW;
    }
    if e - i > SIMSCAN_WINDOW {
        e = i + SIMSCAN_WINDOW;
    }
    let (mut rdis0, mut rpdis0) = (0, 1);
    let mut r = 1;
    while i - r >= s {
        match dis[(i - r) as usize] {
            0 => rdis0 += 1,
            2 => rpdis0 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis0 == 0 {
        return false;
    }
    let (mut rdis1, mut rpdis1) = (0, 1);
    r = 1;
    while i + r <= e {
        match dis[(i + r) as usize] {
            0 => rdis1 += 1,
            2 => rpdis1 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis1 == 0 {
        return false;
    }
    rdis1 += rdis0;
    rpdis1 += rpdis0;
    rpdis1 * KPDIS_RUN < rpdis1 + rdis1
}

/// Where `split` cut a box, and whether each half must be searched
/// without the heuristics.
struct Split {
    i1: i64,
    i2: i64,
    min_lo: bool,
    min_hi: bool,
}

/// The forward and backward furthest-reaching diagonals, indexed by
/// diagonal from a base.
struct Diagonals {
    forward: Vec<i64>,
    backward: Vec<i64>,
    base: i64,
    max_cost: i64,
}

impl Diagonals {
    fn f(&self, d: i64) -> i64 {
        self.forward[(d + self.base) as usize]
    }
    fn set_f(&mut self, d: i64, v: i64) {
        self.forward[(d + self.base) as usize] = v;
    }
    fn b(&self, d: i64) -> i64 {
        self.backward[(d + self.base) as usize]
    }
    fn set_b(&mut self, d: i64, v: i64) {
        self.backward[(d + self.base) as usize] = v;
    }
}

/// xdl_recs_cmp: the boxes still to compare, shrunk by their common ends
/// and split at the middle snake, until one side of each is empty and the
/// other's lines are changed.
fn compare(a: &mut Side, b: &mut Side) {
    let (n1, n2) = (a.reduced.len() as i64, b.reduced.len() as i64);
    let ndiags = n1 + n2 + 3;
    let mut kv = Diagonals {
        forward: vec![0; ndiags as usize + 1],
        backward: vec![0; ndiags as usize + 1],
        base: n2 + 1,
        max_cost: bogosqrt(ndiags).max(MAX_COST_MIN),
    };
    let mut boxes = vec![(0, n1, 0, n2, false)];
    while let Some((mut off1, mut lim1, mut off2, mut lim2, need_min)) = boxes.pop() {
        let (x, y) = (&a.reduced, &b.reduced);
        while off1 < lim1 && off2 < lim2 && x[off1 as usize] == y[off2 as usize] {
            off1 += 1;
            off2 += 1;
        }
        while off1 < lim1 && off2 < lim2 && x[lim1 as usize - 1] == y[lim2 as usize - 1] {
            lim1 -= 1;
            lim2 -= 1;
        }
        if off1 == lim1 {
            for i in off2..lim2 {
                let line = b.index[i as usize] as i64;
                b.set_changed(line, true);
            }
        } else if off2 == lim2 {
            for i in off1..lim1 {
                let line = a.index[i as usize] as i64;
                a.set_changed(line, true);
            }
        } else {
            let spl = split(x, off1, lim1, y, off2, lim2, &mut kv, need_min);
            // The upper half last, so it is compared first (git's order).
            boxes.push((spl.i1, lim1, spl.i2, lim2, spl.min_hi));
            boxes.push((off1, spl.i1, off2, spl.i2, spl.min_lo));
        }
    }
}

/// xdl_split: Myers' middle snake of the box, with git's heuristics to
/// stop an expensive search at a good-enough point.
#[allow(clippy::too_many_arguments)]
fn split(
    x: &[usize],
    off1: i64,
    lim1: i64,
    y: &[usize],
    off2: i64,
    lim2: i64,
    kv: &mut Diagonals,
    need_min: bool,
) -> Split {
    let eq = |i1: i64, i2: i64| x[i1 as usize] == y[i2 as usize];
    let (dmin, dmax) = (off1 - lim2, lim1 - off2);
    let (fmid, bmid) = (off1 - off2, lim1 - lim2);
    let odd = (fmid - bmid) & 1 != 0;
    let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
    kv.set_f(fmid, off1);
    kv.set_b(bmid, lim1);
    let mut ec = 1i64;
    loop {
        let mut got_snake = false;
        if fmin > dmin {
            fmin -= 1;
            kv.set_f(fmin - 1, -1);
        } else {
            fmin += 1;
        }
        if fmax < dmax {
            fmax += 1;
            kv.set_f(fmax + 1, -1);
        } else {
            fmax -= 1;
        }
        let mut d = fmax;
        while d >= fmin {
            let mut i1 = if kv.f(d - 1) >= kv.f(d + 1) {
                kv.f(d - 1) + 1
            } else {
                kv.f(d + 1)
            };
            let prev1 = i1;
            let mut i2 = i1 - d;
            while i1 < lim1 && i2 < lim2 && eq(i1, i2) {
                i1 += 1;
                i2 += 1;
            }
            if i1 - prev1 > SNAKE_CNT {
                got_snake = true;
            }
            kv.set_f(d, i1);
            if odd && bmin <= d && d <= bmax && kv.b(d) <= i1 {
                return Split {
                    i1,
                    i2,
                    min_lo: true,
                    min_hi: true,
                };
            }
            d -= 2;
        }
        if bmin > dmin {
            bmin -= 1;
            kv.set_b(bmin - 1, LINE_MAX);
        } else {
            bmin += 1;
        }
        if bmax < dmax {
            bmax += 1;
            kv.set_b(bmax + 1, LINE_MAX);
        } else {
            bmax -= 1;
        }
        let mut d = bmax;
        while d >= bmin {
            let mut i1 = if kv.b(d - 1) < kv.b(d + 1) {
                kv.b(d - 1)
            } else {
                kv.b(d + 1) - 1
            };
            let prev1 = i1;
            let mut i2 = i1 - d;
            while i1 > off1 && i2 > off2 && eq(i1 - 1, i2 - 1) {
                i1 -= 1;
                i2 -= 1;
            }
            if prev1 - i1 > SNAKE_CNT {
                got_snake = true;
            }
            kv.set_b(d, i1);
            if !odd && fmin <= d && d <= fmax && i1 <= kv.f(d) {
                return Split {
                    i1,
                    i2,
                    min_lo: true,
                    min_hi: true,
                };
            }
            d -= 2;
        }
        if need_min {
            ec += 1;
            continue;
        }
        // A long snake past the heuristic's cost: take the most
        // promising diagonal that ends in one.
        if got_snake && ec > HEUR_MIN_COST {
            let mut best = 0;
            let mut found = None;
            let mut d = fmax;
            while d >= fmin {
                let dd = (d - fmid).abs();
                let i1 = kv.f(d);
                let i2 = i1 - d;
                let v = (i1 - off1) + (i2 - off2) - dd;
                if v > K_HEUR * ec
                    && v > best
                    && off1 + SNAKE_CNT <= i1
                    && i1 < lim1
                    && off2 + SNAKE_CNT <= i2
                    && i2 < lim2
                {
                    let mut k = 1;
                    while eq(i1 - k, i2 - k) {
                        if k == SNAKE_CNT {
                            best = v;
                            found = Some((i1, i2));
                            break;
                        }
                        k += 1;
                    }
                }
                d -= 2;
            }
            if let Some((i1, i2)) = found {
                return Split {
                    i1,
                    i2,
                    min_lo: true,
                    min_hi: false,
                };
            }
            let mut best = 0;
            let mut d = bmax;
            while d >= bmin {
                let dd = (d - bmid).abs();
                let i1 = kv.b(d);
                let i2 = i1 - d;
                let v = (lim1 - i1) + (lim2 - i2) - dd;
                if v > K_HEUR * ec
                    && v > best
                    && off1 < i1
                    && i1 <= lim1 - SNAKE_CNT
                    && off2 < i2
                    && i2 <= lim2 - SNAKE_CNT
                {
                    let mut k = 0;
                    while eq(i1 + k, i2 + k) {
                        if k == SNAKE_CNT - 1 {
                            best = v;
                            found = Some((i1, i2));
                            break;
                        }
                        k += 1;
                    }
                }
                d -= 2;
            }
            if let Some((i1, i2)) = found {
                return Split {
                    i1,
                    i2,
                    min_lo: false,
                    min_hi: true,
                };
            }
        }
        // Enough: the furthest-reaching path either way.
        if ec >= kv.max_cost {
            let (mut fbest, mut fbest1) = (-1, -1);
            let mut d = fmax;
            while d >= fmin {
                let mut i1 = kv.f(d).min(lim1);
                let mut i2 = i1 - d;
                if lim2 < i2 {
                    i1 = lim2 + d;
                    i2 = lim2;
                }
                if fbest < i1 + i2 {
                    fbest = i1 + i2;
                    fbest1 = i1;
                }
                d -= 2;
            }
            let (mut bbest, mut bbest1) = (LINE_MAX, LINE_MAX);
            let mut d = bmax;
            while d >= bmin {
                let mut i1 = off1.max(kv.b(d));
                let mut i2 = i1 - d;
                if i2 < off2 {
                    i1 = off2 + d;
                    i2 = off2;
                }
                if i1 + i2 < bbest {
                    bbest = i1 + i2;
                    bbest1 = i1;
                }
                d -= 2;
            }
            return if (lim1 + lim2) - bbest < fbest - (off1 + off2) {
                Split {
                    i1: fbest1,
                    i2: fbest - fbest1,
                    min_lo: true,
                    min_hi: false,
                }
            } else {
                Split {
                    i1: bbest1,
                    i2: bbest - bbest1,
                    min_lo: false,
                    min_hi: true,
                }
            };
        }
        ec += 1;
    }
}

// ---- sliding changes into place (xdl_change_compact) ----------------------

/// A run of changed lines: `start..end` (empty: above line `start`).
#[derive(Clone, Copy)]
struct Group {
    start: i64,
    end: i64,
}

fn group_init(side: &Side) -> Group {
    let mut g = Group { start: 0, end: 0 };
    while side.is_changed(g.end) {
        g.end += 1;
    }
    g
}

fn group_next(side: &Side, g: &mut Group) -> bool {
    if g.end == side.len() {
        return false;
    }
    g.start = g.end + 1;
    g.end = g.start;
    while side.is_changed(g.end) {
        g.end += 1;
    }
    true
}

fn group_previous(side: &Side, g: &mut Group) -> bool {
    if g.start == 0 {
        return false;
    }
    g.end = g.start - 1;
    g.start = g.end;
    while side.is_changed(g.start - 1) {
        g.start -= 1;
    }
    true
}

fn group_slide_down(side: &mut Side, g: &mut Group) -> bool {
    if g.end < side.len() && side.class[g.start as usize] == side.class[g.end as usize] {
        side.set_changed(g.start, false);
        side.set_changed(g.end, true);
        g.start += 1;
        g.end += 1;
        while side.is_changed(g.end) {
            g.end += 1;
        }
        true
    } else {
        false
    }
}

fn group_slide_up(side: &mut Side, g: &mut Group) -> bool {
    if g.start > 0 && side.class[g.start as usize - 1] == side.class[g.end as usize - 1] {
        g.start -= 1;
        g.end -= 1;
        side.set_changed(g.start, true);
        side.set_changed(g.end, false);
        while side.is_changed(g.start - 1) {
            g.start -= 1;
        }
        true
    } else {
        false
    }
}

/// Slides each run of changes in `side` as git does: merged with runs it
/// bumps into, lined up with a run of the other file where it can be,
/// else placed where the indent heuristic scores best.
fn compact(side: &mut Side, other: &mut Side, indent_heuristic: bool) {
    const MAX_SLIDING: i64 = 100;
    let mut g = group_init(side);
    let mut go = group_init(other);
    loop {
        if g.end != g.start {
            let mut groupsize;
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                groupsize = g.end - g.start;
                end_matching_other = -1;
                while group_slide_up(side, &mut g) {
                    group_previous(other, &mut go);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = g.end;
                }
                while group_slide_down(side, &mut g) {
                    group_next(other, &mut go);
                    if go.end > go.start {
                        end_matching_other = g.end;
                    }
                }
                if groupsize == g.end - g.start {
                    break;
                }
            }
            if g.end == earliest_end {
                // No room to slide.
            } else if end_matching_other != -1 {
                while go.end == go.start {
                    group_slide_up(side, &mut g);
                    group_previous(other, &mut go);
                }
            } else if indent_heuristic {
                let mut shift = earliest_end
                    .max(g.end - groupsize - 1)
                    .max(g.end - MAX_SLIDING);
                let mut best: Option<(i64, Score)> = None;
                while shift <= g.end {
                    let mut score = Score::default();
                    score.add(&measure(side, shift));
                    score.add(&measure(side, shift - groupsize));
                    if best.as_ref().is_none_or(|(_, b)| score.cmp(b) <= 0) {
                        best = Some((shift, score));
                    }
                    shift += 1;
                }
                let best_shift = best.map_or(g.end, |(s, _)| s);
                while g.end > best_shift {
                    group_slide_up(side, &mut g);
                    group_previous(other, &mut go);
                }
            }
        }
        if !group_next(side, &mut g) {
            break;
        }
        group_next(other, &mut go);
    }
}

/// What the indent heuristic looks at around a split above line `split`.
struct Measure {
    end_of_file: bool,
    indent: i64,
    pre_blank: i64,
    pre_indent: i64,
    post_blank: i64,
    post_indent: i64,
}

/// A line's indentation (a tab to the next multiple of 8), -1 for a blank
/// line, at most 200.
fn indent_of(line: &[u8]) -> i64 {
    const MAX_INDENT: i64 = 200;
    let mut indent = 0;
    for &c in line {
        // git's own isspace: no vertical tab, no form feed.
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            return indent;
        }
        if c == b' ' {
            indent += 1;
        } else if c == b'\t' {
            indent += 8 - indent % 8;
        }
        if indent >= MAX_INDENT {
            return MAX_INDENT;
        }
    }
    -1
}

fn measure(side: &Side, split: i64) -> Measure {
    const MAX_BLANKS: i64 = 20;
    let n = side.len();
    let (end_of_file, indent) = match split >= n {
        true => (true, -1),
        false => (false, indent_of(side.lines[split as usize])),
    };
    let (mut pre_blank, mut pre_indent) = (0, -1);
    let mut i = split - 1;
    while i >= 0 {
        pre_indent = indent_of(side.lines[i as usize]);
        if pre_indent != -1 {
            break;
        }
        pre_blank += 1;
        if pre_blank == MAX_BLANKS {
            pre_indent = 0;
            break;
        }
        i -= 1;
    }
    let (mut post_blank, mut post_indent) = (0, -1);
    let mut i = split + 1;
    while i < n {
        post_indent = indent_of(side.lines[i as usize]);
        if post_indent != -1 {
            break;
        }
        post_blank += 1;
        if post_blank == MAX_BLANKS {
            post_indent = 0;
            break;
        }
        i += 1;
    }
    Measure {
        end_of_file,
        indent,
        pre_blank,
        pre_indent,
        post_blank,
        post_indent,
    }
}

#[derive(Default)]
struct Score {
    effective_indent: i64,
    penalty: i64,
}

impl Score {
    /// git's score_add_split, with its empirically found weights.
    fn add(&mut self, m: &Measure) {
        if m.pre_indent == -1 && m.pre_blank == 0 {
            self.penalty += 1;
        }
        if m.end_of_file {
            self.penalty += 21;
        }
        let post_blank = if m.indent == -1 { 1 + m.post_blank } else { 0 };
        let total_blank = m.pre_blank + post_blank;
        self.penalty += -30 * total_blank;
        self.penalty += 6 * post_blank;
        let indent = if m.indent != -1 {
            m.indent
        } else {
            m.post_indent
        };
        let any_blanks = total_blank != 0;
        self.effective_indent += indent;
        if indent == -1 || m.pre_indent == -1 {
        } else if indent > m.pre_indent {
            self.penalty += if any_blanks { 10 } else { -4 };
        } else if indent == m.pre_indent {
        } else if m.post_indent != -1 && m.post_indent > indent {
            self.penalty += if any_blanks { 17 } else { 24 };
        } else {
            self.penalty += if any_blanks { 17 } else { 23 };
        }
    }

    fn cmp(&self, other: &Score) -> i64 {
        let indents = (self.effective_indent > other.effective_indent) as i64
            - (self.effective_indent < other.effective_indent) as i64;
        60 * indents + (self.penalty - other.penalty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&[u8]> {
        text.as_bytes().split_inclusive(|&b| b == b'\n').collect()
    }

    #[test]
    fn an_inserted_function_goes_where_git_puts_it() {
        let old = lines("fn a() {\n    1\n}\n\nfn c() {\n    3\n}\n");
        let new = lines("fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    3\n}\n");
        let (removed, added) = changed_lines(&old, &new);
        assert!(removed.iter().all(|c| !c));
        // git adds `fn b() {`, `    2`, `}` and the blank line after them.
        assert_eq!(
            added,
            [false, false, false, false, true, true, true, true, false, false, false]
        );
    }

    #[test]
    fn unrelated_files_change_every_line() {
        let (removed, added) = changed_lines(&lines("a\nb\n"), &lines("c\nd\ne\n"));
        assert_eq!(removed, [true, true]);
        assert_eq!(added, [true, true, true]);
    }

    #[test]
    fn merges_pair_lines_with_the_histogram_algorithm() {
        // As `git diff --diff-algorithm=histogram --no-indent-heuristic`
        // and `--diff-algorithm=myers` pair these (checked with git 2.47).
        let (old, new) = (lines("b\nx\na\na\ny\na\n"), lines("y\na\ny\nb\na\na\n"));
        assert_eq!(merge_hunks(&old, &new), vec![(0..4, 0..0), (6..6, 2..6)]);
        assert_eq!(hunks(&old, &new), vec![(0..3, 0..1), (5..5, 3..5)]);
    }
}
