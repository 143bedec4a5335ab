//! npm's version ranges (`^1.2`, `~1.2.3`, `1.x || >=2.1 <3`, `1 - 2`),
//! as node-semver reads them without `loose` or `includePrerelease`: a
//! prerelease satisfies a range only through a comparator naming a
//! prerelease of the same `major.minor.patch`.

use semver::{Prerelease, Version};

/// A version as the registry names it (`v1.2.3`, `=1.2.3`), build
/// metadata dropped (npm orders without it).
pub fn version(text: &str) -> Option<Version> {
    let text = text.trim().trim_start_matches(['=', 'v']);
    let mut version = Version::parse(text).ok()?;
    version.build = semver::BuildMetadata::EMPTY;
    Some(version)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

#[derive(Clone, Debug)]
struct Comparator {
    op: Op,
    version: Version,
}

impl Comparator {
    fn test(&self, version: &Version) -> bool {
        match self.op {
            Op::Lt => version < &self.version,
            Op::Le => version <= &self.version,
            Op::Gt => version > &self.version,
            Op::Ge => version >= &self.version,
            Op::Eq => version == &self.version,
        }
    }
}

/// A range: any of its sets, each all of its comparators.
#[derive(Clone, Debug)]
pub struct Range {
    sets: Vec<Vec<Comparator>>,
}

/// `1`, `1.2`, `1.2.3-beta`, `1.x`, `*`: what is given, `None` where wild.
struct Partial {
    major: Option<u64>,
    minor: Option<u64>,
    patch: Option<u64>,
    pre: Prerelease,
}

impl Partial {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim_start_matches(['=', 'v']);
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Prerelease::new(pre.split('+').next()?).ok()?),
            None => (text.split('+').next()?, Prerelease::EMPTY),
        };
        let mut parts = core.split('.');
        let mut next = || -> Option<Option<u64>> {
            match parts.next() {
                None | Some("x" | "X" | "*") => Some(None),
                Some(number) => number.parse().ok().map(Some),
            }
        };
        let (major, minor, patch) = (next()?, next()?, next()?);
        if parts.next().is_some() {
            return None;
        }
        // `1.x.3` is `1.x`.
        let minor = major.and(minor);
        let patch = minor.and(patch);
        Some(Self {
            major,
            minor,
            patch,
            pre,
        })
    }

    fn at(major: u64, minor: u64, patch: u64, pre: Prerelease) -> Version {
        Version {
            major,
            minor,
            patch,
            pre,
            build: semver::BuildMetadata::EMPTY,
        }
    }

    /// The lowest version it names.
    fn floor(&self) -> Version {
        Self::at(
            self.major.unwrap_or(0),
            self.minor.unwrap_or(0),
            self.patch.unwrap_or(0),
            self.pre.clone(),
        )
    }

    /// The prerelease `-0` of a version: below all of its prereleases.
    fn zero(major: u64, minor: u64, patch: u64) -> Version {
        Self::at(
            major,
            minor,
            patch,
            Prerelease::new("0").expect("0 is a prerelease"),
        )
    }

    /// Just above every version it names (`1.2` → `<1.3.0-0`).
    fn ceiling(&self) -> Option<Version> {
        match (self.major, self.minor, self.patch) {
            (None, _, _) => None,
            (Some(major), None, _) => Some(Self::zero(major + 1, 0, 0)),
            (Some(major), Some(minor), None) => Some(Self::zero(major, minor + 1, 0)),
            (Some(_), Some(_), Some(_)) => None,
        }
    }

    fn complete(&self) -> bool {
        self.patch.is_some()
    }
}

fn cmp(op: Op, version: Version) -> Comparator {
    Comparator { op, version }
}

impl Range {
    /// npm's range grammar; `None` for what is not a range (a dist-tag,
    /// a URL).
    pub fn parse(text: &str) -> Option<Self> {
        let sets = text
            .split("||")
            .map(|set| Self::set(set.trim()))
            .collect::<Option<Vec<_>>>()?;
        Some(Self { sets })
    }

    fn set(text: &str) -> Option<Vec<Comparator>> {
        if let Some((low, high)) = text.split_once(" - ") {
            let low = Partial::parse(low.trim())?;
            let high = Partial::parse(high.trim())?;
            let mut set = vec![cmp(Op::Ge, low.floor())];
            match (high.major.is_some(), high.ceiling()) {
                (false, _) => {}
                (true, Some(ceiling)) => set.push(cmp(Op::Lt, ceiling)),
                (true, None) => set.push(cmp(Op::Le, high.floor())),
            }
            return Some(set);
        }
        // `>= 1.2` is `>=1.2`: operators join what follows them.
        let mut words: Vec<String> = Vec::new();
        for word in text.split_whitespace() {
            match words.last_mut() {
                Some(last)
                    if matches!(
                        last.as_str(),
                        "<" | "<=" | ">" | ">=" | "=" | "~" | "^" | "~>"
                    ) =>
                {
                    last.push_str(word)
                }
                _ => words.push(word.to_string()),
            }
        }
        let mut set = Vec::new();
        for word in &words {
            Self::comparator(word, &mut set)?;
        }
        Some(set)
    }

    fn comparator(word: &str, set: &mut Vec<Comparator>) -> Option<()> {
        let (op, rest) = ["<=", ">=", "~>", "<", ">", "=", "~", "^"]
            .iter()
            .find_map(|op| word.strip_prefix(op).map(|rest| (*op, rest)))
            .unwrap_or(("", word));
        let partial = Partial::parse(rest)?;
        let floor = partial.floor();
        match op {
            "" | "=" => {
                if partial.complete() {
                    set.push(cmp(Op::Eq, floor));
                } else if partial.major.is_some() {
                    set.push(cmp(Op::Ge, floor));
                    set.extend(partial.ceiling().map(|c| cmp(Op::Lt, c)));
                }
            }
            "~" | "~>" => {
                let Some(major) = partial.major else {
                    return Some(());
                };
                let ceiling = match partial.minor {
                    Some(minor) => Partial::zero(major, minor + 1, 0),
                    None => Partial::zero(major + 1, 0, 0),
                };
                set.extend([cmp(Op::Ge, floor), cmp(Op::Lt, ceiling)]);
            }
            "^" => {
                let Some(major) = partial.major else {
                    return Some(());
                };
                let ceiling = match (major, partial.minor, partial.patch) {
                    (0, Some(0), Some(patch)) => Partial::zero(0, 0, patch + 1),
                    (0, Some(minor), _) => Partial::zero(0, minor + 1, 0),
                    _ => Partial::zero(major + 1, 0, 0),
                };
                set.extend([cmp(Op::Ge, floor), cmp(Op::Lt, ceiling)]);
            }
            ">" => match (partial.major, partial.minor, partial.patch) {
                // `>*`: nothing.
                (None, _, _) => set.push(cmp(Op::Lt, Partial::zero(0, 0, 0))),
                (Some(major), None, _) => {
                    set.push(cmp(Op::Ge, Partial::at(major + 1, 0, 0, Prerelease::EMPTY)))
                }
                (Some(major), Some(minor), None) => set.push(cmp(
                    Op::Ge,
                    Partial::at(major, minor + 1, 0, Prerelease::EMPTY),
                )),
                _ => set.push(cmp(Op::Gt, floor)),
            },
            ">=" => {
                if partial.major.is_some() {
                    set.push(cmp(Op::Ge, floor));
                }
            }
            "<" => match partial.major {
                None => set.push(cmp(Op::Lt, Partial::zero(0, 0, 0))),
                Some(_) if partial.complete() => set.push(cmp(Op::Lt, floor)),
                Some(major) => set.push(cmp(
                    Op::Lt,
                    Partial::zero(major, partial.minor.unwrap_or(0), 0),
                )),
            },
            "<=" => match partial.ceiling() {
                Some(ceiling) => set.push(cmp(Op::Lt, ceiling)),
                None if partial.major.is_none() => {}
                None => set.push(cmp(Op::Le, floor)),
            },
            _ => return None,
        }
        Some(())
    }

    /// Whether `version` is in the range.
    pub fn satisfies(&self, version: &Version) -> bool {
        self.sets.iter().any(|set| {
            set.iter().all(|c| c.test(version))
                && (version.pre.is_empty()
                    || set.iter().any(|c| {
                        !c.version.pre.is_empty()
                            && c.version.major == version.major
                            && c.version.minor == version.minor
                            && c.version.patch == version.patch
                    }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(range: &str, version: &str) -> bool {
        Range::parse(range)
            .unwrap()
            .satisfies(&super::version(version).unwrap())
    }

    #[test]
    fn ranges_as_node_semver_reads_them() {
        for (range, yes, no) in [
            ("^1.2.3", "1.9.0", "2.0.0"),
            ("^0.2.3", "0.2.9", "0.3.0"),
            ("^0.0.3", "0.0.3", "0.0.4"),
            ("~1.2.3", "1.2.9", "1.3.0"),
            ("~1.2", "1.2.0", "1.3.0"),
            ("1.x", "1.5.0", "2.0.0"),
            ("1", "1.5.0", "0.9.0"),
            ("*", "3.0.0", "1.0.0-beta"),
            ("", "3.0.0", "1.0.0-beta"),
            (">=1.2 <2", "1.2.0", "2.0.0"),
            (">= 1.2.0", "1.2.0", "1.1.9"),
            ("1.2.3 - 2.3", "2.3.9", "2.4.0"),
            ("1.2.3 - 2.3.4", "2.3.4", "2.3.5"),
            ("<1.2", "1.1.9", "1.2.0"),
            ("<=1.2", "1.2.9", "1.3.0"),
            (">1.2", "1.3.0", "1.2.9"),
            ("1.2.3", "1.2.3", "1.2.4"),
            ("=1.2.3", "1.2.3", "1.2.4"),
            ("^1.2.3-beta.2", "1.2.3-beta.4", "1.2.4-beta.1"),
            ("^1.0.0 || ^2.0.0", "2.1.0", "3.0.0"),
            ("^2.0.0-0 || ^3", "2.0.0-rc.1", "4.0.0"),
            ("v1.2.3", "1.2.3", "1.2.2"),
        ] {
            assert!(ok(range, yes), "{range} takes {yes}");
            assert!(!ok(range, no), "{range} refuses {no}");
        }
        assert!(Range::parse("latest").is_none());
        assert!(Range::parse("github:a/b").is_none());
    }
}
