//! npm's lockfiles (`package-lock.json`, `npm-shrinkwrap.json` and the
//! hidden `node_modules/.package-lock.json`), versions 2 and 3: the tree
//! as paths (`node_modules/a/node_modules/b`) to entries.

use crate::json::Json;

/// The dependency kinds of a manifest, as a lockfile's root records them.
pub const KINDS: [&str; 4] = [
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
];

pub struct Lock {
    /// `packages[""]`: the project itself.
    pub root: Json,
    /// Every other entry, in the lockfile's order.
    pub packages: Vec<(String, Json)>,
}

impl Lock {
    /// A lockfile's text, `None` with why it cannot be installed from.
    pub fn parse(text: &[u8], name: &str) -> Result<Self, String> {
        let json = Json::parse(text).map_err(|e| format!("{name}: not valid JSON: {e}"))?;
        let version = match json.get("lockfileVersion") {
            Some(Json::Number(n)) => n.as_u64().unwrap_or(0),
            _ => 0,
        };
        let packages = json.get("packages");
        if version < 2 || packages.is_none() {
            return Err(format!(
                "{name} has lockfileVersion {version}, written by npm 6 or older: the sandbox's \
                 npm reads versions 2 and 3 (real npm 7 or newer rewrites it with `npm install \
                 --package-lock-only`)"
            ));
        }
        let mut root = Json::object();
        let mut entries = Vec::new();
        for (path, entry) in packages.map(Json::entries).unwrap_or_default() {
            match path.as_str() {
                "" => root = entry.clone(),
                _ => entries.push((path.clone(), entry.clone())),
            }
        }
        Ok(Self {
            root,
            packages: entries,
        })
    }

    /// Whether the lockfile was made for `manifest`'s dependencies: npm
    /// ci's check.
    pub fn in_sync(&self, manifest: &Json) -> Result<(), String> {
        for kind in KINDS {
            let wanted = sorted(manifest.strings(kind));
            let locked = sorted(self.root.strings(kind));
            if wanted != locked {
                let differs = wanted
                    .iter()
                    .find(|pair| !locked.contains(pair))
                    .or_else(|| locked.iter().find(|pair| !wanted.contains(pair)))
                    .map(|(name, spec)| format!(" ({name}@{spec} in {kind})"))
                    .unwrap_or_default();
                return Err(format!(
                    "`npm ci` can only install packages when your package.json and \
                     package-lock.json are in sync{differs}: update the lockfile with \
                     `npm install`"
                ));
            }
        }
        Ok(())
    }

    /// The lockfile npm writes for `root` and `packages`.
    pub fn to_json(&self) -> Json {
        let mut packages = vec![(String::new(), self.root.clone())];
        packages.extend(self.packages.iter().cloned());
        self.document(packages)
    }

    /// `node_modules/.package-lock.json`: what is installed, root left out.
    pub fn hidden(&self, installed: &[(String, Json)]) -> Json {
        self.document(installed.to_vec())
    }

    fn document(&self, packages: Vec<(String, Json)>) -> Json {
        let mut lock = Json::object();
        if let Some(name) = self.root.get("name") {
            lock.set("name", name.clone());
        }
        if let Some(version) = self.root.get("version") {
            lock.set("version", version.clone());
        }
        lock.set("lockfileVersion", Json::Number(3.into()));
        lock.set("requires", Json::Bool(true));
        lock.set("packages", Json::Object(packages));
        lock
    }
}

fn sorted(mut pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    pairs.sort();
    pairs
}

/// The package name a lockfile path ends in (`node_modules/@a/b` → `@a/b`).
pub fn name_of(path: &str) -> &str {
    match path.rfind("node_modules/") {
        Some(at) => &path[at + "node_modules/".len()..],
        None => path,
    }
}

/// The path of the package whose `node_modules` holds `path`'s (`""` for
/// the project).
pub fn parent_of(path: &str) -> &str {
    match path.rfind("node_modules/") {
        Some(0) | None => "",
        Some(at) => &path[..at - 1],
    }
}

/// Where a package named `name` sits inside the package at `parent`.
pub fn child_path(parent: &str, name: &str) -> String {
    match parent {
        "" => format!("node_modules/{name}"),
        _ => format!("{parent}/node_modules/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(name_of("node_modules/a/node_modules/@s/b"), "@s/b");
        assert_eq!(
            parent_of("node_modules/a/node_modules/@s/b"),
            "node_modules/a"
        );
        assert_eq!(parent_of("node_modules/@s/b"), "");
        assert_eq!(
            child_path("node_modules/a", "b"),
            "node_modules/a/node_modules/b"
        );
    }

    #[test]
    fn sync_and_versions() {
        let lock = br#"{"lockfileVersion": 3, "packages": {"": {"dependencies": {"a": "^1"}},
                        "node_modules/a": {"version": "1.0.0"}}}"#;
        let lock = Lock::parse(lock, "package-lock.json").unwrap();
        assert!(lock
            .in_sync(&Json::parse(br#"{"dependencies": {"a": "^1"}}"#).unwrap())
            .is_ok());
        let error = lock
            .in_sync(&Json::parse(br#"{"dependencies": {"a": "^2"}}"#).unwrap())
            .unwrap_err();
        assert!(error.contains("a@^2 in dependencies"), "{error}");
        let old = Lock::parse(br#"{"lockfileVersion": 1, "dependencies": {}}"#, "x")
            .err()
            .unwrap();
        assert!(old.contains("lockfileVersion 1"));
    }
}
