//! Python's versions and version specifiers (PEP 440) and the
//! requirements packages declare (PEP 508: `name[extra] >=1, <2 ;
//! python_version >= "3.8"`), with their environment markers evaluated
//! for the sandbox's CPython 3.14 (WASI).

use std::cmp::Ordering;

/// (epoch, release, pre, post, dev), each placed where PEP 440 puts it.
type SortKey = (u64, Vec<u64>, (i8, u8, u64), (i8, u64), (i8, u64));

/// A version, ordered as PEP 440 orders them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub text: String,
    epoch: u64,
    release: Vec<u64>,
    /// (0 a, 1 b, 2 rc, number)
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
}

impl Version {
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.trim().to_ascii_lowercase();
        let lower = lower.strip_prefix('v').unwrap_or(&lower);
        let public = lower.split('+').next()?;
        let (epoch, rest) = match public.split_once('!') {
            Some((epoch, rest)) => (epoch.parse().ok()?, rest),
            None => (0, public),
        };
        let digits_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let release: Vec<u64> = rest[..digits_end]
            .trim_end_matches('.')
            .split('.')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let mut tail = rest[digits_end..].trim_start_matches(['.', '-', '_']);
        let number = |tail: &mut &str| -> u64 {
            let t = tail.trim_start_matches(['.', '-', '_']);
            let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let n = t[..end].parse().unwrap_or(0);
            *tail = t[end..].trim_start_matches(['.', '-', '_']);
            n
        };
        let mut pre = None;
        for (word, kind) in [
            ("alpha", 0),
            ("beta", 1),
            ("preview", 2),
            ("pre", 2),
            ("rc", 2),
            ("c", 2),
            ("a", 0),
            ("b", 1),
        ] {
            if let Some(rest) = tail.strip_prefix(word) {
                tail = rest;
                pre = Some((kind, number(&mut tail)));
                break;
            }
        }
        let mut post = None;
        for word in ["post", "rev", "r"] {
            if let Some(rest) = tail.strip_prefix(word) {
                tail = rest;
                post = Some(number(&mut tail));
                break;
            }
        }
        let mut dev = None;
        if let Some(rest) = tail.strip_prefix("dev") {
            tail = rest;
            dev = Some(number(&mut tail));
        }
        if !tail.is_empty() {
            return None;
        }
        Some(Self {
            text: text.trim().to_string(),
            epoch,
            release,
            pre,
            post,
            dev,
        })
    }

    pub fn is_pre(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    fn release_at(&self, at: usize) -> u64 {
        self.release.get(at).copied().unwrap_or(0)
    }

    fn key(&self) -> SortKey {
        let mut release = self.release.clone();
        while release.len() > 1 && release.last() == Some(&0) {
            release.pop();
        }
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (-1, 0, 0),
            (None, _, _) => (1, 0, 0),
            (Some((kind, n)), _, _) => (0, kind, n),
        };
        let post = self.post.map_or((-1, 0), |n| (0, n));
        let dev = self.dev.map_or((1, 0), |n| (0, n));
        (self.epoch, release, pre, post, dev)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `>=1.2, <2, !=1.5.*`: all of them.
#[derive(Clone, Debug, Default)]
pub struct Specifiers(Vec<(String, String)>);

impl Specifiers {
    pub fn parse(text: &str) -> Option<Self> {
        let mut all = Vec::new();
        for one in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let op = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"]
                .into_iter()
                .find(|op| one.starts_with(op))?;
            all.push((op.to_string(), one[op.len()..].trim().to_string()));
        }
        Some(Self(all))
    }

    /// Whether a specifier names a prerelease (then prereleases may be picked).
    pub fn names_pre(&self) -> bool {
        self.0
            .iter()
            .any(|(_, v)| Version::parse(v.trim_end_matches(".*")).is_some_and(|v| v.is_pre()))
    }

    pub fn contains(&self, version: &Version) -> bool {
        self.0.iter().all(|(op, given)| matches(op, given, version))
    }
}

fn matches(op: &str, given: &str, version: &Version) -> bool {
    if op == "===" {
        return version.text == given;
    }
    if let Some(prefix) = given.strip_suffix(".*") {
        let Some(prefix) = Version::parse(prefix) else {
            return false;
        };
        let same = prefix.epoch == version.epoch
            && (0..prefix.release.len()).all(|at| prefix.release_at(at) == version.release_at(at));
        return match op {
            "==" => same,
            "!=" => !same,
            _ => false,
        };
    }
    let Some(given) = Version::parse(given) else {
        return false;
    };
    match op {
        "==" => version.cmp(&given) == Ordering::Equal,
        "!=" => version.cmp(&given) != Ordering::Equal,
        "<=" => version <= &given,
        ">=" => version >= &given,
        // `<V` takes no prerelease of V; `>V` no postrelease of it.
        "<" => {
            version < &given
                && !(version.is_pre() && !given.is_pre() && same_release(version, &given))
        }
        ">" => version > &given && !(version.post.is_some() && same_release(version, &given)),
        "~=" => {
            let keep = given.release.len().saturating_sub(1).max(1);
            version >= &given && (0..keep).all(|at| given.release_at(at) == version.release_at(at))
        }
        _ => false,
    }
}

fn same_release(a: &Version, b: &Version) -> bool {
    let len = a.release.len().max(b.release.len());
    a.epoch == b.epoch && (0..len).all(|at| a.release_at(at) == b.release_at(at))
}

/// A project's name as indexes compare them (`Foo_Bar` → `foo-bar`).
pub fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        match c {
            '-' | '_' | '.' => {
                if !out.ends_with('-') {
                    out.push('-');
                }
            }
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

/// One requirement (PEP 508).
#[derive(Clone, Debug)]
pub struct Requirement {
    /// As given, without its marker.
    pub text: String,
    pub name: String,
    pub extras: Vec<String>,
    pub specifiers: Specifiers,
    pub marker: Option<String>,
}

impl Requirement {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (body, marker) = match text.split_once(';') {
            Some((body, marker)) => (body.trim(), Some(marker.trim().to_string())),
            None => (text.trim(), None),
        };
        if body.contains(" @ ") || body.contains("://") {
            return Err(format!("{text}: a requirement by URL is not supported"));
        }
        let end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(body.len());
        let name = body[..end].to_string();
        if name.is_empty() {
            return Err(format!("{text}: not a requirement"));
        }
        let mut rest = body[end..].trim();
        let mut extras = Vec::new();
        if let Some(inner) = rest.strip_prefix('[') {
            let close = inner
                .find(']')
                .ok_or_else(|| format!("{text}: an unclosed ["))?;
            extras = inner[..close]
                .split(',')
                .map(normalize)
                .filter(|e| !e.is_empty())
                .collect();
            rest = inner[close + 1..].trim();
        }
        let rest = rest.trim_start_matches('(').trim_end_matches(')');
        let specifiers = Specifiers::parse(rest)
            .ok_or_else(|| format!("{text}: a version specifier pip cannot read"))?;
        Ok(Self {
            text: body.to_string(),
            name,
            extras,
            specifiers,
            marker,
        })
    }

    /// Whether it applies in the sandbox's Python with `extras` asked for.
    pub fn applies(&self, extras: &[String]) -> Result<bool, String> {
        match &self.marker {
            None => Ok(true),
            Some(marker) => Marker {
                text: marker,
                at: 0,
                extras,
            }
            .evaluate(),
        }
    }
}

/// The sandbox's Python, as markers see it.
const ENVIRONMENT: [(&str, &str); 11] = [
    ("python_version", "3.14"),
    ("python_full_version", "3.14.0"),
    ("implementation_version", "3.14.0"),
    ("os_name", "posix"),
    ("sys_platform", "wasi"),
    ("platform_system", "WASI"),
    ("platform_machine", "wasm32"),
    ("platform_release", ""),
    ("platform_version", ""),
    ("implementation_name", "cpython"),
    ("platform_python_implementation", "CPython"),
];

/// A marker expression read as it is evaluated.
struct Marker<'a> {
    text: &'a str,
    at: usize,
    extras: &'a [String],
}

#[derive(Clone)]
enum Value {
    Variable(String),
    Literal(String),
}

impl Marker<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, word: &str) -> bool {
        self.skip_space();
        let rest = self.rest();
        let boundary = rest[word.len().min(rest.len())..]
            .chars()
            .next()
            .is_none_or(|c| {
                !c.is_ascii_alphanumeric() || !word.chars().all(|w| w.is_ascii_alphabetic())
            });
        if rest.starts_with(word) && boundary {
            self.at += word.len();
            return true;
        }
        false
    }

    fn evaluate(mut self) -> Result<bool, String> {
        let value = self.or()?;
        self.skip_space();
        match self.rest().is_empty() {
            true => Ok(value),
            false => Err(format!("a marker pip cannot read: {}", self.text)),
        }
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut value = self.and()?;
        while self.eat("or") {
            let right = self.and()?;
            value = value || right;
        }
        Ok(value)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut value = self.atom()?;
        while self.eat("and") {
            let right = self.atom()?;
            value = value && right;
        }
        Ok(value)
    }

    fn atom(&mut self) -> Result<bool, String> {
        if self.eat("(") {
            let value = self.or()?;
            if !self.eat(")") {
                return Err(format!("a marker pip cannot read: {}", self.text));
            }
            return Ok(value);
        }
        let left = self.value()?;
        let op = [
            "===", "==", "!=", "<=", ">=", "~=", "<", ">", "not in", "in",
        ]
        .into_iter()
        .find(|op| self.eat(op))
        .ok_or_else(|| format!("a marker pip cannot read: {}", self.text))?;
        let right = self.value()?;
        Ok(self.compare(&left, op, &right))
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_space();
        let rest = self.rest();
        if let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let end = rest[1..]
                .find(quote)
                .ok_or_else(|| format!("a marker pip cannot read: {}", self.text))?;
            let literal = rest[1..1 + end].to_string();
            self.at += end + 2;
            return Ok(Value::Literal(literal));
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(format!("a marker pip cannot read: {}", self.text));
        }
        let name = rest[..end].to_string();
        self.at += end;
        Ok(Value::Variable(name))
    }

    fn compare(&self, left: &Value, op: &str, right: &Value) -> bool {
        // `extra == "x"`: any of the extras asked for.
        for (var, other) in [(left, right), (right, left)] {
            if let (Value::Variable(name), Value::Literal(wanted)) = (var, other) {
                if name == "extra" {
                    let hit = self.extras.iter().any(|e| *e == normalize(wanted));
                    return match op {
                        "==" => hit,
                        "!=" => !hit,
                        _ => false,
                    };
                }
            }
        }
        let resolve = |value: &Value| match value {
            Value::Literal(text) => text.clone(),
            Value::Variable(name) => ENVIRONMENT
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.to_string())
                .unwrap_or_default(),
        };
        let (a, b) = (resolve(left), resolve(right));
        match op {
            "in" => b.contains(&a),
            "not in" => !b.contains(&a),
            _ => match (Version::parse(&a), Specifiers::parse(&format!("{op}{b}"))) {
                (Some(version), Some(spec))
                    if Version::parse(&b).is_some() || b.ends_with(".*") =>
                {
                    spec.contains(&version)
                }
                _ => match op {
                    "==" | "===" => a == b,
                    "!=" => a != b,
                    "<" => a < b,
                    "<=" => a <= b,
                    ">" => a > b,
                    ">=" => a >= b,
                    _ => false,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn versions_order_as_pep_440() {
        let order = [
            "1.0.dev1",
            "1.0a1.dev1",
            "1.0a1",
            "1.0b2",
            "1.0rc1",
            "1.0",
            "1.0.post1",
            "1.1",
            "2!0.1",
        ];
        for pair in order.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(v("1.0").cmp(&v("1.0.0")), Ordering::Equal);
    }

    #[test]
    fn specifiers_and_requirements() {
        let spec = Specifiers::parse(">=1.21.1,<3").unwrap();
        assert!(spec.contains(&v("2.2.3")) && !spec.contains(&v("3.0.0")));
        assert!(Specifiers::parse("~=2.2").unwrap().contains(&v("2.9")));
        assert!(!Specifiers::parse("~=2.2.1").unwrap().contains(&v("2.3")));
        assert!(Specifiers::parse("==1.2.*").unwrap().contains(&v("1.2.9")));
        assert!(!Specifiers::parse("<2").unwrap().contains(&v("2.0rc1")));
        let req = Requirement::parse("PySocks!=1.5.7,>=1.5.6; extra == \"socks\"").unwrap();
        assert_eq!(req.name, "PySocks");
        assert!(!req.applies(&[]).unwrap());
        assert!(req.applies(&["socks".into()]).unwrap());
        let req =
            Requirement::parse("tomli>=1; python_version < '3.11' or sys_platform == 'win32'")
                .unwrap();
        assert!(!req.applies(&[]).unwrap());
        let req = Requirement::parse("attrs[tests] (>=22)").unwrap();
        assert_eq!(req.extras, ["tests"]);
        assert!(req.specifiers.contains(&v("23.1")));
        assert_eq!(normalize("Foo_Bar.baz"), "foo-bar-baz");
    }
}
