//! `import` in `node`: ES modules from the session's filesystem, Node's
//! own modules (`fs`, `path`, `crypto`, also as `node:…`), JSON files as
//! their default export, and CommonJS files through `require` (their
//! `module.exports` as the default export), as Node does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::FileSystem;
use ex_bashkit_core::sync::block_on;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Error, Module, Result};

/// Node's modules this `node` has. What each exports by name is read
/// from the module itself when it is imported.
const BUILTINS: &[&str] = &[
    "fs",
    "fs/promises",
    "path",
    "crypto",
    "buffer",
    "string_decoder",
    "timers",
    "timers/promises",
    "events",
    "util",
    "util/types",
    "os",
    "querystring",
    "url",
    "assert",
    "assert/strict",
    "stream",
    "stream/promises",
    "readline",
    "readline/promises",
    "child_process",
];

/// The names a builtin module's exports go by (its own properties that
/// are identifiers), for `import { name } from "…"`.
const EXPORTED_NAMES: &str = "(m) => Object.getOwnPropertyNames(m).filter((k) => \
    /^[A-Za-z_$][\\w$]*$/.test(k) && !['default', 'length', 'name', 'prototype', 'caller', 'arguments'].includes(k))";

/// Whether `source` reads as an ES module: a line that starts with an
/// `import` or `export` declaration (Node 22's syntax detection, roughly).
pub fn is_module(file: &str, source: &str) -> bool {
    if file.ends_with(".mjs") || file.ends_with(".mts") {
        return true;
    }
    if file.ends_with(".cjs") || file.ends_with(".cts") {
        return false;
    }
    source.lines().any(|line| {
        let line = line.trim_start();
        [
            "import ", "import{", "import\"", "import'", "export ", "export{",
        ]
        .iter()
        .any(|start| line.starts_with(start))
    })
}

/// The session's files as modules, for one run.
pub struct Files {
    pub fs: Arc<dyn FileSystem>,
    pub cwd: PathBuf,
}

impl Files {
    fn file(&self, path: &Path) -> bool {
        block_on(self.fs.stat(path)).is_ok_and(|meta| meta.file_type.is_file())
    }
}

impl Resolver for Files {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        let bare = name.strip_prefix("node:").unwrap_or(name);
        if BUILTINS.contains(&bare) {
            return Ok(format!("node:{bare}"));
        }
        let dir = match Path::new(base).parent() {
            Some(dir) if base.starts_with('/') => dir.to_path_buf(),
            _ => self.cwd.clone(),
        };
        if !(name.starts_with('/') || name.starts_with("./") || name.starts_with("../")) {
            return self.package(&dir, name).ok_or_else(|| {
                let why = format!(
                    "no package {name} in a node_modules here or above; Node's modules here are {}",
                    BUILTINS.join(", ")
                );
                Error::new_resolving_message(base, name, why)
            });
        }
        let path = bashkit::normalize_path(&dir.join(name));
        self.as_file(&path)
            .ok_or_else(|| Error::new_resolving(base, name))
    }
}

impl Files {
    /// A path as a file, with Node's extensions, or as a directory's
    /// package entry or index.
    fn as_file(&self, path: &Path) -> Option<String> {
        let text = path.display().to_string();
        let found = ["", ".js", ".mjs", ".ts", ".mts", ".json"]
            .iter()
            .map(|ext| format!("{text}{ext}"))
            .find(|candidate| self.file(Path::new(candidate)));
        if found.is_some() {
            return found;
        }
        if let Some(entry) = self.manifest(path).and_then(|pkg| entry(&pkg, ".")) {
            return self.as_file(&bashkit::normalize_path(&path.join(entry)));
        }
        ["index.js", "index.mjs", "index.ts"]
            .iter()
            .map(|index| path.join(index).display().to_string())
            .find(|candidate| self.file(Path::new(candidate)))
    }

    fn manifest(&self, dir: &Path) -> Option<serde_json::Value> {
        let bytes = block_on(self.fs.read_file(&dir.join("package.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// A package in a node_modules of `dir` or a directory above it, as
    /// `import` sees it (the "import" condition of its "exports").
    fn package(&self, dir: &Path, name: &str) -> Option<String> {
        let parts: Vec<&str> = name.split('/').collect();
        let scoped = if name.starts_with('@') { 2 } else { 1 };
        let package = parts.get(..scoped)?.join("/");
        let subpath = match parts.get(scoped..) {
            Some(rest) if !rest.is_empty() => format!("./{}", rest.join("/")),
            _ => ".".to_string(),
        };
        let mut at = Some(dir);
        while let Some(here) = at {
            let root = here.join("node_modules").join(&package);
            if block_on(self.fs.stat(&root)).is_ok() {
                let target = match self.manifest(&root) {
                    Some(pkg) => entry(&pkg, &subpath)?,
                    None => subpath.clone(),
                };
                return self.as_file(&bashkit::normalize_path(&root.join(target)));
            }
            at = here.parent();
        }
        None
    }
}

/// What a package's "exports" (or "main") names for `subpath`, for `import`.
fn entry(pkg: &serde_json::Value, subpath: &str) -> Option<String> {
    use serde_json::Value;
    fn pick(target: &Value) -> Option<String> {
        match target {
            Value::String(path) => Some(path.clone()),
            Value::Array(items) => items.iter().find_map(pick),
            Value::Object(conditions) => ["import", "node", "default"]
                .iter()
                .find_map(|condition| conditions.get(*condition).and_then(pick)),
            _ => None,
        }
    }
    match pkg.get("exports") {
        Some(Value::Object(map)) if map.keys().any(|key| key.starts_with('.')) => {
            map.get(subpath).and_then(pick)
        }
        Some(exports) if subpath == "." => pick(exports),
        Some(_) => None,
        None if subpath == "." => Some(
            pkg.get("main")
                .and_then(Value::as_str)
                .unwrap_or("index.js")
                .to_string(),
        ),
        None => Some(subpath.to_string()),
    }
}

impl Loader for Files {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, Declared>> {
        if let Some(builtin) = name.strip_prefix("node:") {
            if !BUILTINS.contains(&builtin) {
                return Err(Error::new_loading(name));
            }
            let names: rquickjs::Function = ctx.eval(EXPORTED_NAMES)?;
            let module: rquickjs::Value = ctx
                .globals()
                .get::<_, rquickjs::Function>("require")?
                .call((builtin,))?;
            let exports: Vec<String> = names.call((module,))?;
            let source = format!(
                "const m = globalThis.require({builtin:?});\nexport default m;\nexport const {{ {} }} = m;\n",
                exports.join(", ")
            );
            return Module::declare(ctx.clone(), name, source);
        }
        if name.ends_with(".node") {
            let why = "a native addon: node in a sandbox runs JavaScript only; use a pure JavaScript package";
            return Err(Error::new_loading_message(name, why));
        }
        let bytes = block_on(self.fs.read_file(Path::new(name)))
            .map_err(|why| Error::new_loading_message(name, why.to_string()))?;
        let source = String::from_utf8_lossy(&bytes).into_owned();
        let source = if super::typescript::is_typescript(name) {
            super::typescript::strip(&source).map_err(|(message, line)| {
                Error::new_loading_message(name, format!("line {line}: {message}"))
            })?
        } else {
            source
        };
        let source = if name.ends_with(".json") {
            format!("export default {source};")
        } else if is_module(name, &source) {
            source
        } else {
            format!("export default globalThis.require({name:?});")
        };
        Module::declare(ctx.clone(), name, source)
    }
}

#[cfg(test)]
mod tests {
    use super::is_module;

    #[test]
    fn modules_are_told_by_extension_then_by_syntax() {
        assert!(is_module("/a.mjs", "module.exports = 1"));
        assert!(!is_module("/a.cjs", "import x from 'y'"));
        assert!(is_module(
            "/a.js",
            "const a = 1;\n  import { b } from './b.js';"
        ));
        assert!(is_module("[eval]", "export default 1"));
        assert!(!is_module(
            "/a.js",
            "const fs = require('fs');\nimport('./lazy.js');"
        ));
    }
}
