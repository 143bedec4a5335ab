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

/// Node's modules this `node` has, and the names each exports.
const BUILTINS: &[(&str, &str)] = &[
    (
        "fs",
        "readFileSync, writeFileSync, appendFileSync, existsSync, readdirSync, mkdirSync, \
         rmSync, unlinkSync, statSync, promises",
    ),
    (
        "fs/promises",
        "readFile, writeFile, appendFile, exists, readdir, mkdir, rm, unlink, stat",
    ),
    (
        "path",
        "sep, normalize, join, resolve, dirname, basename, extname, isAbsolute, relative, posix",
    ),
    ("crypto", "createHash, createHmac, randomUUID"),
];

/// Whether `source` reads as an ES module: a line that starts with an
/// `import` or `export` declaration (Node 22's syntax detection, roughly).
pub fn is_module(file: &str, source: &str) -> bool {
    if file.ends_with(".mjs") {
        return true;
    }
    if file.ends_with(".cjs") {
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
        if BUILTINS.iter().any(|(builtin, _)| *builtin == bare) {
            return Ok(format!("node:{bare}"));
        }
        if !(name.starts_with('/') || name.starts_with("./") || name.starts_with("../")) {
            let why = "only Node's fs, path and crypto and the session's files can be imported";
            return Err(Error::new_resolving_message(base, name, why));
        }
        let dir = match Path::new(base).parent() {
            Some(dir) if base.starts_with('/') => dir.to_path_buf(),
            _ => self.cwd.clone(),
        };
        let path = bashkit::normalize_path(&dir.join(name));
        let text = path.display().to_string();
        [
            text.clone(),
            format!("{text}.js"),
            format!("{text}.mjs"),
            format!("{text}.json"),
            format!("{text}/index.js"),
        ]
        .into_iter()
        .find(|candidate| self.file(Path::new(candidate)))
        .ok_or_else(|| Error::new_resolving(base, name))
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
            let (_, exports) = BUILTINS
                .iter()
                .find(|(known, _)| *known == builtin)
                .ok_or_else(|| Error::new_loading(name))?;
            let source = format!(
                "const m = globalThis.require({builtin:?});\nexport default m;\nexport const {{ {exports} }} = m;\n"
            );
            return Module::declare(ctx.clone(), name, source);
        }
        let bytes = block_on(self.fs.read_file(Path::new(name)))
            .map_err(|why| Error::new_loading_message(name, why.to_string()))?;
        let source = String::from_utf8_lossy(&bytes).into_owned();
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
