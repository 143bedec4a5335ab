//! `import` in `node`: ES modules from the session's filesystem, Node's
//! own modules (`fs`, `path`, `crypto`, also as `node:…`), JSON files as
//! their default export, and CommonJS files through `require` (their
//! `module.exports` as the default export), as Node does.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ex_bashkit_core::sync::block_on;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::promise::PromiseState;
use rquickjs::{Ctx, Error, Function, Module, Object, Result, Value};

use super::resolve::{Failure, Format, Mode, Packages};

/// The names a builtin module's exports go by (its own properties that
/// are identifiers), for `import { name } from "…"`.
const EXPORTED_NAMES: &str = "(m) => Object.getOwnPropertyNames(m).filter((k) => \
    /^[A-Za-z_$][\\w$]*$/.test(k) && !['default', 'length', 'name', 'prototype', 'caller', 'arguments'].includes(k))";

/// How deep re-exports are followed for a CommonJS file's names, and
/// how many files at most are read for one.
const MAX_REEXPORT_DEPTH: usize = 32;
const MAX_REEXPORTED_FILES: usize = 1_000;

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
    pub packages: Rc<Packages>,
    pub cwd: PathBuf,
}

/// Node's error for a module not found, thrown into the script.
pub fn thrown(ctx: &Ctx<'_>, failure: Failure) -> Error {
    super::thrown::coded(ctx, failure.code, &failure.message)
}

impl Files {
    /// The file an import in `base` is made from (a script with no path
    /// of its own, such as `[eval]`, runs in the working directory).
    fn parent(&self, base: &str) -> PathBuf {
        if base.starts_with('/') {
            PathBuf::from(base)
        } else {
            self.cwd.join(base)
        }
    }

    /// A module file's text, TypeScript's types blanked (same lines).
    fn read(&self, name: &str) -> std::result::Result<String, Failure> {
        let bytes =
            block_on(self.packages.fs().read_file(Path::new(name))).map_err(|_| Failure {
                code: "MODULE_NOT_FOUND",
                message: format!("Cannot find module '{name}'"),
            })?;
        let source = String::from_utf8_lossy(&bytes).into_owned();
        if super::typescript::is_typescript(name) {
            return super::typescript::strip(&source).map_err(|(message, line)| Failure {
                code: "ERR_TYPESCRIPT",
                message: format!("{name}:{line}: {message}"),
            });
        }
        Ok(source)
    }

    /// The names the CommonJS file `name` (`source`) exports, its
    /// re-exports' included, as Node finds them before running it.
    fn commonjs_names(
        &self,
        name: &str,
        source: &str,
        seen: &mut HashSet<String>,
        depth: usize,
    ) -> Vec<String> {
        if depth > MAX_REEXPORT_DEPTH
            || seen.len() >= MAX_REEXPORTED_FILES
            || !seen.insert(name.to_string())
        {
            return Vec::new();
        }
        let found = super::commonjs::exports(source);
        let mut names = found.names;
        for specifier in found.reexports {
            let Ok(resolved) = self
                .packages
                .resolve(&specifier, Path::new(name), Mode::Require)
            else {
                continue;
            };
            if !matches!(resolved.format, Format::CommonJs | Format::Detect) {
                continue;
            }
            let Ok(source) = self.read(&resolved.path) else {
                continue;
            };
            if resolved.format == Format::Detect && is_module(&resolved.path, &source) {
                continue;
            }
            names.extend(self.commonjs_names(&resolved.path, &source, seen, depth + 1));
        }
        names
    }
}

impl Resolver for Files {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        let parent = self.parent(base);
        match self.packages.resolve(name, &parent, Mode::Import) {
            Ok(resolved) if resolved.format == Format::Builtin => {
                Ok(format!("node:{}", resolved.path))
            }
            Ok(resolved) => Ok(resolved.path),
            Err(failure) => Err(thrown(ctx, failure)),
        }
    }
}

/// A CommonJS file as an ES module: `module.exports` its default export,
/// and each name Node's lexer finds one of its named exports.
fn commonjs_module(name: &str, names: &[String]) -> String {
    let mut source = format!("const m = globalThis.__commonjs({name:?});\nexport default m;\n");
    for (at, export) in names.iter().filter(|n| *n != "default").enumerate() {
        let identifier = export
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && export
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        let exported = if identifier {
            export.clone()
        } else {
            format!("{export:?}")
        };
        source.push_str(&format!(
            "const e{at} = m[{export:?}];\nexport {{ e{at} as {exported} }};\n"
        ));
    }
    source
}

impl Loader for Files {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, Declared>> {
        if name.starts_with("node:") {
            let names: rquickjs::Function = ctx.eval(EXPORTED_NAMES)?;
            let module: rquickjs::Value = ctx
                .globals()
                .get::<_, rquickjs::Function>("__commonjs")?
                .call((name,))?;
            let exports: Vec<String> = names.call((module,))?;
            let source = format!(
                "const m = globalThis.__commonjs({name:?});\nexport default m;\nexport const {{ {} }} = m;\n",
                exports.join(", ")
            );
            return Module::declare(ctx.clone(), name, source);
        }
        let format = self.packages.format(name);
        if format == Format::Addon {
            let why = "a native addon: node in a sandbox runs JavaScript only; use a pure JavaScript package";
            return Err(Error::new_loading_message(name, why));
        }
        let source = self
            .read(name)
            .map_err(|failure| Error::new_loading_message(name, failure.message))?;
        let source = match format {
            Format::Json => format!("export default {source};"),
            Format::Module => source,
            Format::Detect if is_module(name, &source) => source,
            _ => {
                let names = self.commonjs_names(name, &source, &mut HashSet::new(), 0);
                let mut unique = HashSet::new();
                let names: Vec<String> = names
                    .into_iter()
                    .filter(|n| unique.insert(n.clone()))
                    .collect();
                commonjs_module(name, &names)
            }
        };
        let module = super::compiled::module(ctx, name, source)?;
        meta(&module, name)?;
        Ok(module)
    }
}

/// The prelude's part of Node's modules (`require`): `__host.resolve`
/// (where a module is, as `[file, format]`), `__host.source` (a file's
/// text and how it loads), `__host.main` (the program's own file, and
/// whether it is an ES module) and `__host.builtinModules`.
pub fn install<'js>(ctx: &Ctx<'js>, packages: &Rc<Packages>, main: (String, bool)) -> Result<()> {
    use super::host::{encode, failed};
    let object: Object = ctx.globals().get("__host")?;
    let p = packages.clone();
    object.set(
        "resolve",
        Function::new(
            ctx.clone(),
            move |name: String, parent: String, mode: String| {
                let mode = if mode == "import" {
                    Mode::Import
                } else {
                    Mode::Require
                };
                encode(match p.resolve(&name, Path::new(&parent), mode) {
                    Ok(resolved) => Ok(serde_json::json!([resolved.path, resolved.format.name()])),
                    Err(failure) => failed(failure.code, failure.message),
                })
            },
        )?,
    )?;
    let files = Files {
        packages: packages.clone(),
        cwd: PathBuf::from("/"),
    };
    object.set(
        "source",
        Function::new(ctx.clone(), move |file: String, format: String| {
            encode(match files.read(&file) {
                Ok(source) => {
                    let kind = match format.as_str() {
                        "json" => "json",
                        "module" => "module",
                        "detect" if is_module(&file, &source) => "module",
                        _ => "commonjs",
                    };
                    Ok(serde_json::json!([kind, source]))
                }
                Err(failure) => failed(failure.code, failure.message),
            })
        })?,
    )?;
    // require() of an ES module, as Node 20.19 and later do it: its
    // namespace, once it has run; a graph that awaits at its top level
    // cannot be required.
    object.set(
        "requireModule",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, file: String| -> Result<Value<'js>> {
            let wrapper = Module::declare(
                ctx.clone(),
                format!("{file}#require"),
                format!("export * as ns from {};", serde_json::json!(file)),
            )?;
            let (module, done) = wrapper.eval()?;
            match done.state() {
                PromiseState::Pending => Err(thrown(&ctx, Failure {
                    code: "ERR_REQUIRE_ASYNC_MODULE",
                    message: "require() cannot be used on an ESM graph with top-level await. Use import() instead.".into(),
                })),
                _ => {
                    done.finish::<Value>()?;
                    module.get("ns")
                }
            }
        })?,
    )?;
    object.set(
        "main",
        Function::new(ctx.clone(), move || {
            vec![main.0.clone(), main.1.to_string()]
        })?,
    )?;
    object.set(
        "nodeExports",
        Function::new(ctx.clone(), |name: String| {
            node_exports()
                .get(&name)
                .cloned()
                .unwrap_or_else(|| "[]".into())
        })?,
    )?;
    object.set(
        "builtinModules",
        Function::new(ctx.clone(), || {
            serde_json::to_string(super::resolve::NODE_MODULES).unwrap_or_default()
        })?,
    )?;
    Ok(())
}

/// The names each of Node 20's own modules exports (`Object.keys` of
/// it in Node 20.20, `node_exports.json`), each as a JSON array.
fn node_exports() -> &'static std::collections::HashMap<String, String> {
    static EXPORTS: std::sync::OnceLock<std::collections::HashMap<String, String>> =
        std::sync::OnceLock::new();
    EXPORTS.get_or_init(|| {
        let all: std::collections::HashMap<String, Vec<String>> =
            serde_json::from_str(include_str!("node_exports.json")).unwrap_or_default();
        all.into_iter()
            .map(|(name, keys)| (name, serde_json::to_string(&keys).unwrap_or_default()))
            .collect()
    })
}

/// `import.meta`: the module's `url`, `filename` and `dirname`, as Node 20.11 gives them.
pub fn meta<T>(module: &Module<'_, T>, file: &str) -> Result<()> {
    let meta = module.meta()?;
    meta.set("url", format!("file://{file}"))?;
    meta.set("filename", file)?;
    let dir = Path::new(file)
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    meta.set("dirname", dir)?;
    Ok(())
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
