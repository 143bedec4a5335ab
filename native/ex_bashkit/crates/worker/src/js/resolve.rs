//! Where `require(…)` and `import … from` find a module, as Node 20 does
//! (its `doc/api/modules.md` and `doc/api/esm.md`): Node's own modules
//! first, then paths, package imports (`#…`), the package itself by name,
//! and `node_modules` up from the importing file, with a package's
//! `exports` and `imports` read under Node's conditions in the order the
//! package lists them. One resolver for both: they differ where Node's
//! do (file extensions and directories for `require`, exact files for
//! `import`, the `require` or `import` condition).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use bashkit::FileSystem;
use ex_bashkit_core::sync::block_on;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// Node 20's own modules (`require('module').builtinModules`).
pub const NODE_MODULES: &[&str] = &[
    "assert",
    "assert/strict",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "dns/promises",
    "domain",
    "events",
    "fs",
    "fs/promises",
    "http",
    "http2",
    "https",
    "inspector",
    "inspector/promises",
    "module",
    "net",
    "os",
    "path",
    "path/posix",
    "path/win32",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "readline/promises",
    "repl",
    "stream",
    "stream/consumers",
    "stream/promises",
    "stream/web",
    "string_decoder",
    "sys",
    "timers",
    "timers/promises",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "util/types",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
];

/// Node's modules reached only with the `node:` prefix.
const PREFIXED_ONLY: &[&str] = &["test", "test/reporters", "sea"];

/// Which of a package's conditions apply: Node's, without `node-addons`
/// (a sandbox loads no native addon, so packages offering one fall back
/// to their JavaScript).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Require,
    Import,
}

impl Mode {
    fn matches(self, condition: &str) -> bool {
        match condition {
            "default" | "node" => true,
            "require" => self == Mode::Require,
            "import" => self == Mode::Import,
            _ => false,
        }
    }
}

/// How a resolved module is loaded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// One of Node's own modules, by its name without `node:`.
    Builtin,
    CommonJs,
    Module,
    /// A `.js` (or `.ts`) file no `"type"` decides: its syntax does.
    Detect,
    Json,
    /// A compiled addon (`.node`), which no sandbox loads.
    Addon,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Builtin => "builtin",
            Format::CommonJs => "commonjs",
            Format::Module => "module",
            Format::Detect => "detect",
            Format::Json => "json",
            Format::Addon => "addon",
        }
    }
}

/// A module found: its file (or a builtin's name) and how to load it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub path: String,
    pub format: Format,
}

/// Why a module was not found, as Node says it: its error code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

type Resolution = Result<Resolved, Failure>;

/// A package's `exports` or `imports` value, its objects' keys in the
/// order the file lists them (condition order decides).
#[derive(Clone, Debug)]
pub enum Target {
    Path(String),
    List(Vec<Target>),
    Map(Vec<(String, Target)>),
    Null,
    /// A number or a boolean: an invalid target.
    Invalid,
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TargetVisitor;
        impl<'de> Visitor<'de> for TargetVisitor {
            type Value = Target;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an exports target")
            }
            fn visit_str<E>(self, v: &str) -> Result<Target, E> {
                Ok(Target::Path(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Target, E> {
                Ok(Target::Null)
            }
            fn visit_none<E>(self) -> Result<Target, E> {
                Ok(Target::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Target, E> {
                Ok(Target::Invalid)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Target, E> {
                Ok(Target::Invalid)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Target, E> {
                Ok(Target::Invalid)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Target, E> {
                Ok(Target::Invalid)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Target, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Target::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Target, A::Error> {
                let mut entries: Vec<(String, Target)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Target>()? {
                    // A repeated key keeps its first place and its last value, as in JSON.parse.
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = value,
                        None => entries.push((key, value)),
                    }
                }
                Ok(Target::Map(entries))
            }
        }
        deserializer.deserialize_any(TargetVisitor)
    }
}

/// What resolution reads of a `package.json`.
#[derive(Debug, Default, Deserialize)]
pub struct Manifest {
    #[serde(default, deserialize_with = "string_or_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "string_or_none")]
    pub main: Option<String>,
    #[serde(default, rename = "type", deserialize_with = "string_or_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub exports: Option<Target>,
    #[serde(default)]
    pub imports: Option<Target>,
}

fn string_or_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => Some(text),
        _ => None,
    })
}

impl Manifest {
    fn exports(&self) -> Option<&Target> {
        self.exports.as_ref().filter(|t| !matches!(t, Target::Null))
    }
}

/// What a target resolved to: a path in the package, another module
/// (an `imports` target naming a package), nothing for this condition
/// set (Node's `undefined`: the next one is tried), or excluded (`null`).
enum Hit {
    Path(PathBuf),
    Module(Resolved),
    Undefined,
    Excluded,
}

/// The session's files as Node's module resolution reads them, with
/// each `package.json` read once per run (as Node caches them).
pub struct Packages {
    fs: Arc<dyn FileSystem>,
    manifests: RefCell<HashMap<PathBuf, Option<Rc<Manifest>>>>,
    /// What each path looked up is (`None`: nothing), as Node keeps
    /// its stat cache: files found stay found for the run; what was
    /// missing is forgotten when the script changes files (`changes`).
    kinds: RefCell<HashMap<PathBuf, Option<Kind>>>,
    changes: Rc<Cell<u64>>,
    seen_changes: Cell<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Other,
}

impl Packages {
    /// The resolver of one run on `fs`; `changes` counts what the run
    /// changed on the files (the host's count).
    pub fn new(fs: Arc<dyn FileSystem>, changes: Rc<Cell<u64>>) -> Rc<Self> {
        Rc::new(Packages {
            fs,
            manifests: RefCell::new(HashMap::new()),
            kinds: RefCell::new(HashMap::new()),
            seen_changes: Cell::new(changes.get()),
            changes,
        })
    }

    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    fn kind(&self, path: &Path) -> Option<Kind> {
        if self.changes.get() != self.seen_changes.get() {
            self.seen_changes.set(self.changes.get());
            self.kinds.borrow_mut().retain(|_, kind| kind.is_some());
            self.manifests
                .borrow_mut()
                .retain(|_, manifest| manifest.is_some());
        }
        if let Some(known) = self.kinds.borrow().get(path) {
            return *known;
        }
        let kind = block_on(self.fs.stat(path)).ok().map(|meta| {
            if meta.file_type.is_file() {
                Kind::File
            } else if meta.file_type.is_dir() {
                Kind::Dir
            } else {
                Kind::Other
            }
        });
        self.kinds.borrow_mut().insert(path.to_path_buf(), kind);
        kind
    }

    fn is_file(&self, path: &Path) -> bool {
        self.kind(path) == Some(Kind::File)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.kind(path) == Some(Kind::Dir)
    }

    /// The `package.json` in `dir`: `None` when there is none; an
    /// unreadable one is an error, as in Node.
    fn manifest(&self, dir: &Path) -> Result<Option<Rc<Manifest>>, Failure> {
        if let Some(known) = self.manifests.borrow().get(dir) {
            return Ok(known.clone());
        }
        let file = dir.join("package.json");
        let found = if self.is_file(&file) {
            block_on(self.fs.read_file(&file))
        } else {
            Err(bashkit::Error::Internal(String::new()))
        };
        let manifest = match found {
            Ok(bytes) => match serde_json::from_slice::<Manifest>(&bytes) {
                Ok(manifest) => Some(Rc::new(manifest)),
                Err(why) => {
                    return Err(Failure {
                        code: "ERR_INVALID_PACKAGE_CONFIG",
                        message: format!("Invalid package config {}: {why}", file.display()),
                    })
                }
            },
            Err(_) => None,
        };
        self.manifests
            .borrow_mut()
            .insert(dir.to_path_buf(), manifest.clone());
        Ok(manifest)
    }

    /// The directory of the nearest `package.json` above `file`, not
    /// looking past a `node_modules` (Node's package scope).
    fn scope(&self, file: &Path) -> Option<(PathBuf, Rc<Manifest>)> {
        let mut at = file.parent();
        while let Some(dir) = at {
            if dir.file_name().is_some_and(|name| name == "node_modules") {
                return None;
            }
            if let Ok(Some(manifest)) = self.manifest(dir) {
                return Some((dir.to_path_buf(), manifest));
            }
            at = dir.parent();
        }
        None
    }

    /// How the file at `path` loads, by its extension, then by its
    /// package's `"type"`.
    pub fn format(&self, path: &str) -> Format {
        let extension = Path::new(path).extension().and_then(|e| e.to_str());
        match extension {
            Some("mjs" | "mts") => Format::Module,
            Some("cjs" | "cts") => Format::CommonJs,
            Some("json") => Format::Json,
            Some("node") => Format::Addon,
            _ => match self.scope(Path::new(path)) {
                Some((_, manifest)) => match manifest.kind.as_deref() {
                    Some("module") => Format::Module,
                    Some("commonjs") => Format::CommonJs,
                    _ => Format::Detect,
                },
                None => Format::Detect,
            },
        }
    }

    fn found(&self, path: &Path) -> Resolved {
        let path = path.display().to_string();
        let format = self.format(&path);
        Resolved { path, format }
    }

    /// Resolves `specifier` imported or required by the module in the
    /// file `parent` (a path; `[eval]` and the like in the directory the
    /// program runs in).
    pub fn resolve(&self, specifier: &str, parent: &Path, mode: Mode) -> Resolution {
        if let Some(builtin) = builtin(specifier) {
            return builtin;
        }
        let dir = parent.parent().unwrap_or(Path::new("/"));
        match mode {
            Mode::Require => self.require(specifier, parent, dir),
            Mode::Import => self.import(specifier, parent, dir),
        }
    }

    fn require(&self, specifier: &str, parent: &Path, dir: &Path) -> Resolution {
        let not_found = || Failure {
            code: "MODULE_NOT_FOUND",
            message: format!(
                "Cannot find module '{specifier}'\nRequire stack:\n- {}",
                parent.display()
            ),
        };
        if is_path(specifier) {
            let path = bashkit::normalize_path(&dir.join(specifier));
            let found = if specifier.ends_with('/') {
                self.directory(&path)?
            } else {
                match self.file(&path) {
                    Some(file) => Some(file),
                    None => self.directory(&path)?,
                }
            };
            return found.map(|p| self.found(&p)).ok_or_else(not_found);
        }
        if specifier.starts_with('#') {
            let hit = self.imports(specifier, parent, Mode::Require)?;
            return self.matched(hit, parent, Mode::Require);
        }
        let (name, subpath) = split_name(specifier).ok_or_else(not_found)?;
        if let Some(hit) = self.itself(name, &subpath, parent, Mode::Require)? {
            return self.matched(hit, parent, Mode::Require);
        }
        for modules in node_modules_dirs(dir) {
            // Nothing is inside a node_modules that is not there.
            if !self.is_dir(&modules) {
                continue;
            }
            let root = modules.join(name);
            if let Some(manifest) = self.manifest(&root)? {
                if let Some(exports) = manifest.exports() {
                    let hit = self.exports(&root, &subpath, exports, None, Mode::Require)?;
                    return self.matched(hit, parent, Mode::Require);
                }
            }
            let path = modules.join(specifier);
            if let Some(file) = self.file(&path) {
                return Ok(self.found(&file));
            }
            if let Some(file) = self.directory(&path)? {
                return Ok(self.found(&file));
            }
        }
        Err(not_found())
    }

    fn import(&self, specifier: &str, parent: &Path, dir: &Path) -> Resolution {
        let hit = if let Some(path) = specifier.strip_prefix("file://") {
            Hit::Path(bashkit::normalize_path(Path::new(&percent_decode(path))))
        } else if is_path(specifier) {
            Hit::Path(bashkit::normalize_path(
                &dir.join(percent_decode(specifier)),
            ))
        } else if specifier.starts_with('#') {
            self.imports(specifier, parent, Mode::Import)?
        } else {
            return self.package(specifier, parent, dir);
        };
        self.matched(hit, parent, Mode::Import)
    }

    /// Node's PACKAGE_RESOLVE (for `import`).
    fn package(&self, specifier: &str, parent: &Path, dir: &Path) -> Resolution {
        let (name, subpath) = split_name(specifier).ok_or_else(|| Failure {
            code: "ERR_INVALID_MODULE_SPECIFIER",
            message: format!(
                "Invalid module \"{specifier}\" is not a valid package name imported from {}",
                parent.display()
            ),
        })?;
        if let Some(hit) = self.itself(name, &subpath, parent, Mode::Import)? {
            return self.matched(hit, parent, Mode::Import);
        }
        for modules in node_modules_dirs(dir) {
            let root = modules.join(name);
            if !self.is_dir(&root) {
                continue;
            }
            let manifest = self.manifest(&root)?;
            if let Some(exports) = manifest.as_deref().and_then(Manifest::exports) {
                let hit = self.exports(&root, &subpath, exports, Some(parent), Mode::Import)?;
                return self.matched(hit, parent, Mode::Import);
            }
            if subpath == "." {
                let main = manifest.as_deref().and_then(|m| m.main.as_deref());
                return self.legacy_main(&root, main, parent);
            }
            let path = root.join(&subpath[2..]);
            return self.matched(Hit::Path(path), parent, Mode::Import);
        }
        Err(Failure {
            code: "ERR_MODULE_NOT_FOUND",
            message: format!(
                "Cannot find package '{name}' imported from {}",
                parent.display()
            ),
        })
    }

    /// A package's `main` for `import`, Node's legacy way (with `require`'s
    /// extensions and indexes).
    fn legacy_main(&self, root: &Path, main: Option<&str>, parent: &Path) -> Resolution {
        let mut tries = Vec::new();
        if let Some(main) = main {
            let base = bashkit::normalize_path(&root.join(main));
            tries.push(base.clone());
            for ext in [".js", ".json", ".node"] {
                tries.push(PathBuf::from(format!("{}{ext}", base.display())));
            }
            for index in ["index.js", "index.json", "index.node"] {
                tries.push(base.join(index));
            }
        }
        for index in ["index.js", "index.json", "index.node"] {
            tries.push(root.join(index));
        }
        tries
            .into_iter()
            .find(|path| self.is_file(path))
            .map(|path| self.found(&path))
            .ok_or_else(|| Failure {
                code: "ERR_MODULE_NOT_FOUND",
                message: format!(
                    "Cannot find package '{}' imported from {}",
                    root.display(),
                    parent.display()
                ),
            })
    }

    /// What a target names, checked as the importer's loader checks it:
    /// a file for both; a directory or nothing is Node's error.
    fn matched(&self, hit: Hit, parent: &Path, mode: Mode) -> Resolution {
        match hit {
            Hit::Module(resolved) => Ok(resolved),
            Hit::Path(path) if self.is_file(&path) => Ok(self.found(&path)),
            Hit::Path(path) => {
                // TypeScript's convention: `./x.js` names `x.ts` until it is compiled.
                let text = path.display().to_string();
                if let Some(stem) = text.strip_suffix(".js") {
                    for ext in [".ts", ".tsx"] {
                        let typescript = PathBuf::from(format!("{stem}{ext}"));
                        if self.is_file(&typescript) {
                            return Ok(self.found(&typescript));
                        }
                    }
                }
                Err(match mode {
                    Mode::Import if self.is_dir(&path) => Failure {
                        code: "ERR_UNSUPPORTED_DIR_IMPORT",
                        message: format!(
                            "Directory import '{}' is not supported resolving ES modules imported from {}",
                            path.display(),
                            parent.display()
                        ),
                    },
                    Mode::Import => Failure {
                        code: "ERR_MODULE_NOT_FOUND",
                        message: format!(
                            "Cannot find module '{}' imported from {}",
                            path.display(),
                            parent.display()
                        ),
                    },
                    Mode::Require => Failure {
                        code: "MODULE_NOT_FOUND",
                        message: format!(
                            "Cannot find module '{}'\nRequire stack:\n- {}",
                            path.display(),
                            parent.display()
                        ),
                    },
                })
            }
            Hit::Undefined | Hit::Excluded => Err(Failure {
                code: "MODULE_NOT_FOUND",
                message: format!("Cannot find module imported from {}", parent.display()),
            }),
        }
    }

    /// `require`'s LOAD_AS_FILE: the path, then with Node's extensions
    /// (and TypeScript's, after them).
    fn file(&self, path: &Path) -> Option<PathBuf> {
        if self.is_file(path) {
            return Some(path.to_path_buf());
        }
        let text = path.display().to_string();
        [".js", ".json", ".node", ".ts", ".cts"]
            .iter()
            .map(|ext| PathBuf::from(format!("{text}{ext}")))
            .find(|candidate| self.is_file(candidate))
    }

    /// `require`'s LOAD_INDEX.
    fn index(&self, dir: &Path) -> Option<PathBuf> {
        ["index.js", "index.json", "index.node", "index.ts"]
            .iter()
            .map(|index| dir.join(index))
            .find(|candidate| self.is_file(candidate))
    }

    /// `require`'s LOAD_AS_DIRECTORY: the package's `main`, then its index.
    fn directory(&self, dir: &Path) -> Result<Option<PathBuf>, Failure> {
        if let Some(main) = self
            .manifest(dir)?
            .and_then(|m| m.main.clone())
            .filter(|m| !m.is_empty())
        {
            let path = bashkit::normalize_path(&dir.join(&main));
            if let Some(found) = self.file(&path).or_else(|| self.index(&path)) {
                return Ok(Some(found));
            }
        }
        Ok(self.index(dir))
    }

    /// A package importing itself by its own name (PACKAGE_SELF_RESOLVE).
    fn itself(
        &self,
        name: &str,
        subpath: &str,
        parent: &Path,
        mode: Mode,
    ) -> Result<Option<Hit>, Failure> {
        let Some((root, manifest)) = self.scope(parent) else {
            return Ok(None);
        };
        match manifest.exports() {
            Some(exports) if manifest.name.as_deref() == Some(name) => {
                let base = (mode == Mode::Import).then_some(parent);
                self.exports(&root, subpath, exports, base, mode).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// PACKAGE_EXPORTS_RESOLVE.
    fn exports(
        &self,
        root: &Path,
        subpath: &str,
        exports: &Target,
        base: Option<&Path>,
        mode: Mode,
    ) -> Result<Hit, Failure> {
        let config = root.join("package.json");
        let imported_from = base
            .map(|b| format!(" imported from {}", b.display()))
            .unwrap_or_default();
        let subpaths = match exports {
            Target::Map(entries) => {
                let dotted = entries.iter().filter(|(k, _)| k.starts_with('.')).count();
                if dotted != 0 && dotted != entries.len() {
                    return Err(Failure {
                        code: "ERR_INVALID_PACKAGE_CONFIG",
                        message: format!(
                            "Invalid package config {}. \"exports\" cannot contain some keys starting with '.' and some not. The exports object must either be an object of package subpath keys or an object of main entry condition name keys only.",
                            config.display()
                        ),
                    });
                }
                dotted != 0
            }
            _ => false,
        };
        let hit = if subpath == "." {
            let main = if subpaths {
                match exports {
                    Target::Map(entries) => entries.iter().find(|(k, _)| k == ".").map(|(_, t)| t),
                    _ => None,
                }
            } else {
                Some(exports)
            };
            match main {
                Some(target) => self.target(root, target, None, false, subpath, base, mode)?,
                None => Hit::Undefined,
            }
        } else if let (true, Target::Map(entries)) = (subpaths, exports) {
            self.patterns(root, subpath, entries, false, base, mode)?
        } else {
            Hit::Undefined
        };
        match hit {
            Hit::Undefined | Hit::Excluded => Err(Failure {
                code: "ERR_PACKAGE_PATH_NOT_EXPORTED",
                message: if subpath == "." {
                    format!(
                        "No \"exports\" main defined in {}{imported_from}",
                        config.display()
                    )
                } else {
                    format!(
                        "Package subpath '{subpath}' is not defined by \"exports\" in {}{imported_from}",
                        config.display()
                    )
                },
            }),
            hit => Ok(hit),
        }
    }

    /// PACKAGE_IMPORTS_RESOLVE.
    fn imports(&self, specifier: &str, parent: &Path, mode: Mode) -> Result<Hit, Failure> {
        if specifier == "#" || specifier.starts_with("#/") {
            return Err(Failure {
                code: "ERR_INVALID_MODULE_SPECIFIER",
                message: format!(
                    "Invalid module \"{specifier}\" is not a valid internal imports specifier name imported from {}",
                    parent.display()
                ),
            });
        }
        let scope = self.scope(parent);
        if let Some((root, manifest)) = &scope {
            if let Some(Target::Map(entries)) = &manifest.imports {
                match self.patterns(root, specifier, entries, true, Some(parent), mode)? {
                    Hit::Undefined | Hit::Excluded => {}
                    hit => return Ok(hit),
                }
            }
        }
        let within = scope
            .map(|(root, _)| format!(" in package {}", root.join("package.json").display()))
            .unwrap_or_default();
        Err(Failure {
            code: "ERR_PACKAGE_IMPORT_NOT_DEFINED",
            message: format!(
                "Package import specifier \"{specifier}\" is not defined{within} imported from {}",
                parent.display()
            ),
        })
    }

    /// PACKAGE_IMPORTS_EXPORTS_RESOLVE: an exact key, else the most
    /// specific `*` pattern that matches.
    fn patterns(
        &self,
        root: &Path,
        key: &str,
        entries: &[(String, Target)],
        imports: bool,
        base: Option<&Path>,
        mode: Mode,
    ) -> Result<Hit, Failure> {
        if !key.contains('*') {
            if let Some((_, target)) = entries.iter().find(|(k, _)| k == key) {
                return self.target(root, target, None, imports, key, base, mode);
            }
        }
        let mut patterns: Vec<&(String, Target)> = entries
            .iter()
            .filter(|(k, _)| k.matches('*').count() == 1)
            .collect();
        patterns.sort_by(|a, b| pattern_order(&a.0, &b.0));
        for (pattern, target) in patterns {
            let star = pattern.find('*').unwrap_or(0);
            let (prefix, trailer) = (&pattern[..star], &pattern[star + 1..]);
            if key.starts_with(prefix)
                && key != prefix
                && (trailer.is_empty() || (key.ends_with(trailer) && key.len() >= pattern.len()))
            {
                let matched = &key[prefix.len()..key.len() - trailer.len()];
                return self.target(root, target, Some(matched), imports, pattern, base, mode);
            }
        }
        Ok(Hit::Undefined)
    }

    /// PACKAGE_TARGET_RESOLVE.
    #[allow(clippy::too_many_arguments)]
    fn target(
        &self,
        root: &Path,
        target: &Target,
        matched: Option<&str>,
        imports: bool,
        key: &str,
        base: Option<&Path>,
        mode: Mode,
    ) -> Result<Hit, Failure> {
        let invalid = |target: &str| Failure {
            code: "ERR_INVALID_PACKAGE_TARGET",
            message: format!(
                "Invalid \"{}\" target \"{target}\" defined for '{key}' in the package config {}{}",
                if imports { "imports" } else { "exports" },
                root.join("package.json").display(),
                base.map(|b| format!(" imported from {}", b.display()))
                    .unwrap_or_default()
            ),
        };
        match target {
            Target::Path(path) => {
                let path = match matched {
                    Some(matched) => path.replace('*', matched),
                    None => path.clone(),
                };
                if !path.starts_with("./") {
                    let url = path.contains("://") || path.starts_with("node:");
                    if !imports || path.starts_with("../") || path.starts_with('/') || url {
                        return Err(invalid(&path));
                    }
                    let from = root.join("package.json");
                    // A package name (Node's PACKAGE_RESOLVE), never an
                    // import of `imports` again: `"#a": "#b"` names a
                    // package called `#b`, which is nowhere (no loop).
                    if path.starts_with('#') {
                        return Err(Failure {
                            code: match mode {
                                Mode::Import => "ERR_MODULE_NOT_FOUND",
                                Mode::Require => "MODULE_NOT_FOUND",
                            },
                            message: format!(
                                "Cannot find package '{path}' imported from {}",
                                from.display()
                            ),
                        });
                    }
                    return self.resolve(&path, &from, mode).map(Hit::Module);
                }
                let bad_segment = |text: &str| {
                    text.split(['/', '\\']).any(|segment| {
                        let segment = percent_decode(segment).to_ascii_lowercase();
                        segment.is_empty()
                            || segment == "."
                            || segment == ".."
                            || segment == "node_modules"
                    })
                };
                if bad_segment(&path[2..]) {
                    return Err(invalid(&path));
                }
                if matched.is_some_and(bad_segment) {
                    return Err(Failure {
                        code: "ERR_INVALID_MODULE_SPECIFIER",
                        message: format!(
                            "Invalid module \"{key}\" request is not a valid match in pattern \"{key}\" for the \"{}\" resolution of {}",
                            if imports { "imports" } else { "exports" },
                            root.join("package.json").display()
                        ),
                    });
                }
                Ok(Hit::Path(root.join(&path[2..])))
            }
            Target::Map(conditions) => {
                for (condition, value) in conditions {
                    if !mode.matches(condition) {
                        continue;
                    }
                    match self.target(root, value, matched, imports, key, base, mode)? {
                        Hit::Undefined => continue,
                        hit => return Ok(hit),
                    }
                }
                Ok(Hit::Undefined)
            }
            Target::List(items) => {
                if items.is_empty() {
                    return Ok(Hit::Excluded);
                }
                let mut last = Ok(Hit::Undefined);
                for item in items {
                    match self.target(root, item, matched, imports, key, base, mode) {
                        Ok(Hit::Undefined) => continue,
                        Ok(Hit::Excluded) => last = Ok(Hit::Excluded),
                        Err(failure) if failure.code == "ERR_INVALID_PACKAGE_TARGET" => {
                            last = Err(failure)
                        }
                        other => return other,
                    }
                }
                last
            }
            Target::Null => Ok(Hit::Excluded),
            Target::Invalid => Err(invalid("(not a string)")),
        }
    }
}

/// Node's own module `specifier` names, if any; `node:` names one or fails.
fn builtin(specifier: &str) -> Option<Resolution> {
    let found = |name: &str| {
        Some(Ok(Resolved {
            path: name.to_string(),
            format: Format::Builtin,
        }))
    };
    match specifier.strip_prefix("node:") {
        Some(name) if NODE_MODULES.contains(&name) || PREFIXED_ONLY.contains(&name) => found(name),
        Some(_) => Some(Err(Failure {
            code: "ERR_UNKNOWN_BUILTIN_MODULE",
            message: format!("No such built-in module: {specifier}"),
        })),
        None if NODE_MODULES.contains(&specifier) => found(specifier),
        None => None,
    }
}

fn is_path(specifier: &str) -> bool {
    specifier.starts_with('/')
        || specifier.starts_with("./")
        || specifier.starts_with("../")
        || specifier == "."
        || specifier == ".."
}

/// A package specifier's name (`lodash`, `@scope/name`) and its subpath
/// (`.` or `./rest`); `None` for a name Node rejects.
fn split_name(specifier: &str) -> Option<(&str, String)> {
    let end = if specifier.starts_with('@') {
        let slash = specifier.find('/')?;
        specifier[slash + 1..]
            .find('/')
            .map_or(specifier.len(), |next| slash + 1 + next)
    } else {
        specifier.find('/').unwrap_or(specifier.len())
    };
    let name = &specifier[..end];
    if name.is_empty()
        || name.starts_with('.')
        || name.contains('\\')
        || name.contains('%')
        || name.ends_with('/')
    {
        return None;
    }
    Some((name, format!(".{}", &specifier[end..])))
}

/// The `node_modules` directories `require` and `import` look in, from
/// `dir` up to the root (none inside a `node_modules` itself).
fn node_modules_dirs(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .filter(|at| at.file_name().is_none_or(|name| name != "node_modules"))
        .map(|at| at.join("node_modules"))
        .collect()
}

/// Node's PATTERN_KEY_COMPARE: longer prefixes first, then longer keys.
fn pattern_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let base = |k: &str| k.find('*').map_or(k.len(), |at| at + 1);
    match base(b).cmp(&base(a)) {
        Ordering::Equal => {}
        other => return other,
    }
    match (a.contains('*'), b.contains('*')) {
        (false, _) => return Ordering::Greater,
        (_, false) => return Ordering::Less,
        _ => {}
    }
    b.len().cmp(&a.len())
}

fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_and_subpaths() {
        assert_eq!(split_name("lodash"), Some(("lodash", ".".into())));
        assert_eq!(
            split_name("lodash/fp/map"),
            Some(("lodash", "./fp/map".into()))
        );
        assert_eq!(split_name("@a/b"), Some(("@a/b", ".".into())));
        assert_eq!(split_name("@a/b/c.js"), Some(("@a/b", "./c.js".into())));
        assert_eq!(split_name("@a"), None);
        assert_eq!(split_name(".hidden"), None);
    }

    #[test]
    fn patterns_sort_as_node_sorts_them() {
        let mut keys = vec!["./*", "./a/*", "./a/*.js"];
        keys.sort_by(|a, b| pattern_order(a, b));
        assert_eq!(keys, vec!["./a/*.js", "./a/*", "./*"]);
    }

    #[test]
    fn node_modules_are_looked_for_upwards_but_not_inside_node_modules() {
        let dirs = node_modules_dirs(Path::new("/app/node_modules/a/lib"));
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(
            dirs,
            [
                "/app/node_modules/a/lib/node_modules",
                "/app/node_modules/a/node_modules",
                "/app/node_modules",
                "/node_modules"
            ]
        );
    }

    #[test]
    fn condition_objects_keep_their_order() {
        let target: Target =
            serde_json::from_str(r#"{"import": "./a.mjs", "require": "./a.cjs", "default": null}"#)
                .unwrap();
        match target {
            Target::Map(entries) => {
                let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
                assert_eq!(keys, ["import", "require", "default"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
