//! The sandbox's `npm`: `npm ci` and `npm install` (`i`, `add`), which
//! read `package.json` and the lockfile, download through the session's
//! network, and write `node_modules` and the lockfile as npm does. No
//! package's lifecycle scripts run: an install says so once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, FileSystem};

use crate::fetch::Net;
use crate::ideal::{pick, Ideal};
use crate::json::{indent_of, Json};
use crate::lockfile::{Lock, KINDS};
use crate::registry::{Registry, PACKUMENT};
use crate::reify::{Omit, Report, Site};
use crate::semver::{version, Range};
use crate::words::Words;

pub struct Npm {
    pub net: Net,
    /// The most one package may unpack to.
    pub budget: u64,
}

/// The npm release whose commands and files this one follows (the one
/// Node 20 ships).
const VERSION: &str = "10.8.2";

const USAGE: &str = "the sandbox's npm installs packages: `npm ci`, `npm install [<pkg>...]` \
                     (also `i`, `add`); lifecycle scripts are never run";

#[derive(Default)]
struct Args {
    command: String,
    specs: Vec<String>,
    omit: Omit,
    save: Save,
    exact: bool,
    no_save: bool,
    registry: Option<String>,
    lock_only: bool,
    no_lock: bool,
    legacy_peers: bool,
    silent: bool,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Save {
    #[default]
    Prod,
    Dev,
    Optional,
}

fn parse(args: &[String], production: bool) -> Result<Args, String> {
    let mut parsed = Args::default();
    parsed.omit.dev = production;
    let mut words = Words::new(args);
    while let Some(flag) = words.next_word() {
        match flag {
            "--omit" | "--include" => {
                let value = words.value(flag)?;
                for kind in value.split(',') {
                    let on = flag == "--omit";
                    match kind {
                        "dev" => parsed.omit.dev = on,
                        "optional" => parsed.omit.optional = on,
                        "peer" => parsed.omit.peer = on,
                        other => {
                            return Err(format!(
                                "{flag}: unknown kind {other:?} (dev, optional, peer)"
                            ))
                        }
                    }
                }
            }
            "--production" => parsed.omit.dev = true,
            "-D" | "--save-dev" => parsed.save = Save::Dev,
            "-O" | "--save-optional" => parsed.save = Save::Optional,
            "-P" | "--save-prod" | "-S" | "--save" => parsed.save = Save::Prod,
            "-E" | "--save-exact" => parsed.exact = true,
            "--no-save" => parsed.no_save = true,
            "--registry" => parsed.registry = Some(words.value(flag)?),
            "--package-lock-only" => parsed.lock_only = true,
            "--no-package-lock" | "--package-lock=false" => parsed.no_lock = true,
            "--legacy-peer-deps" => parsed.legacy_peers = true,
            "-s" | "--silent" | "--quiet" | "-q" => parsed.silent = true,
            // Nothing to turn off: no scripts run, no audit or funding
            // report is made, no progress bar is drawn, and documents are
            // always asked for fresh.
            "--ignore-scripts"
            | "--no-audit"
            | "--no-fund"
            | "--no-progress"
            | "--prefer-online"
            | "--no-update-notifier"
            | "--foreground-scripts" => {}
            "--audit" | "--fund" | "--progress" | "--update-notifier"
                if words.attached() == Some("false") => {}
            "--loglevel" => {
                let level = words.value(flag)?;
                parsed.silent = matches!(level.as_str(), "silent" | "error");
            }
            "-v" | "--version" if parsed.command.is_empty() => parsed.command = "version".into(),
            "-h" | "--help" => parsed.command = "help".into(),
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option {flag:?}: {USAGE}"));
            }
            word if parsed.command.is_empty() => parsed.command = word.to_string(),
            spec => parsed.specs.push(spec.to_string()),
        }
    }
    Ok(parsed)
}

#[async_trait]
impl Builtin for Npm {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let production = ctx.env.get("NODE_ENV").is_some_and(|v| v == "production");
        let args = match parse(ctx.args, production) {
            Ok(args) => args,
            Err(message) => return Ok(ExecResult::err(format!("npm error {message}\n"), 1)),
        };
        let started = Instant::now();
        let fs = ctx.fs.clone();
        let outcome = match args.command.as_str() {
            "version" => return Ok(ExecResult::ok(format!("{VERSION}\n"))),
            "help" | "" => return Ok(ExecResult::ok(format!("npm: {USAGE}\n"))),
            "ci" | "clean-install" | "install-clean" | "ic" if args.specs.is_empty() => {
                self.install(&fs, ctx.cwd, ctx.env, &args, true).await
            }
            "ci" | "clean-install" | "install-clean" | "ic" => {
                Err("`npm ci` takes no packages: add them with `npm install <pkg>`".to_string())
            }
            "install" | "i" | "add" | "isntall" | "in" => {
                self.install(&fs, ctx.cwd, ctx.env, &args, false).await
            }
            other => Err(format!("`npm {other}` is not available: {USAGE}")),
        };
        Ok(match outcome {
            Ok((report, scripts)) if args.silent => ExecResult::err(scripts, 0).with_stdout(report),
            Ok((report, scripts)) => {
                let took = started.elapsed();
                ExecResult::err(scripts, 0)
                    .with_stdout(format!("{report} in {}\n", took_text(took)))
            }
            Err(message) => {
                let text: String = message
                    .lines()
                    .map(|l| format!("npm error {l}\n"))
                    .collect();
                ExecResult::err(text, 1)
            }
        })
    }
}

trait WithStdout {
    fn with_stdout(self, stdout: String) -> Self;
}

impl WithStdout for ExecResult {
    fn with_stdout(mut self, stdout: String) -> Self {
        self.stdout = stdout.into();
        self
    }
}

/// npm's way of saying how long it took.
fn took_text(took: std::time::Duration) -> String {
    match took.as_millis() {
        ms if ms < 1000 => format!("{ms}ms"),
        ms => format!("{}s", (ms + 500) / 1000),
    }
}

/// The project an npm command in `cwd` works on: the nearest directory
/// up with a `package.json` (or a `node_modules`), else `cwd`.
async fn project_of(fs: &Arc<dyn FileSystem>, cwd: &Path) -> PathBuf {
    let mut at = Some(cwd);
    while let Some(dir) = at {
        for marker in ["package.json", "node_modules"] {
            if fs.exists(&dir.join(marker)).await.unwrap_or(false) {
                return dir.to_path_buf();
            }
        }
        at = dir.parent();
    }
    cwd.to_path_buf()
}

impl Npm {
    /// `npm ci` (`fresh`) or `npm install`: the summary npm prints, and
    /// the note about scripts not run.
    async fn install(
        &self,
        fs: &Arc<dyn FileSystem>,
        cwd: &Path,
        env: &std::collections::HashMap<String, String>,
        args: &Args,
        fresh: bool,
    ) -> Result<(String, String), String> {
        let project = project_of(fs, cwd).await;
        let registry = Registry::configured(fs, &project, env, args.registry.as_deref()).await;
        let site = Site {
            fs,
            project: project.clone(),
            net: &self.net,
            registry: &registry,
            budget: self.budget,
        };
        let manifest_path = project.join("package.json");
        let manifest_text = match fs.read_file(&manifest_path).await {
            Ok(text) => Some(text),
            Err(_) if fresh => {
                return Err(format!(
                    "no package.json in {}: `npm ci` installs a project's lockfile",
                    project.display()
                ))
            }
            Err(_) => None,
        };
        let indent = manifest_text
            .as_deref()
            .map(indent_of)
            .unwrap_or_else(|| "  ".into());
        let mut manifest = match &manifest_text {
            Some(text) => {
                Json::parse(text).map_err(|e| format!("package.json: not valid JSON: {e}"))?
            }
            None => Json::object(),
        };
        let lock_name = ["npm-shrinkwrap.json", "package-lock.json"];
        let mut lock = None;
        let mut lock_file = project.join("package-lock.json");
        for name in lock_name {
            if let Ok(text) = fs.read_file(&project.join(name)).await {
                lock = Some(Lock::parse(&text, name)?);
                lock_file = project.join(name);
                break;
            }
        }
        if fresh {
            let Some(lock) = &lock else {
                return Err(
                    "`npm ci` can only install with an existing package-lock.json or \
                     npm-shrinkwrap.json: run `npm install` to make one"
                        .into(),
                );
            };
            lock.in_sync(&manifest)?;
        }
        let added = self.add_specs(&site, &mut manifest, args).await?;
        let lock = match &lock {
            Some(held) if held.in_sync(&manifest).is_ok() => Lock {
                root: root_entry(&manifest, &held.root),
                packages: held.packages.clone(),
            },
            held => {
                let mut ideal = Ideal::new(&site, held.as_ref());
                ideal.legacy_peers = args.legacy_peers;
                let packages = ideal.build(&manifest).await?;
                let root = root_entry(
                    &manifest,
                    &held.as_ref().map_or_else(Json::object, |l| l.root.clone()),
                );
                Lock { root, packages }
            }
        };
        let report = match args.lock_only {
            true => Report::default(),
            false => site.reify(&lock, args.omit, fresh).await?,
        };
        if !fresh {
            if !added.is_empty() && !args.no_save {
                let text = manifest.pretty(&indent);
                fs.write_file(&manifest_path, text.as_bytes())
                    .await
                    .map_err(|e| format!("cannot write package.json: {e}"))?;
            }
            if !args.no_lock && (manifest_text.is_some() || !added.is_empty()) {
                let text = lock.to_json().pretty("  ");
                fs.write_file(&lock_file, text.as_bytes())
                    .await
                    .map_err(|e| format!("cannot write {}: {e}", lock_file.display()))?;
            }
        }
        Ok((summary(&report), scripts_note(&report)))
    }

    /// `npm install <pkg>...`: each spec's version picked and saved in
    /// the manifest as npm saves it (`^1.2.3`, or the range given when
    /// that is narrower). Returns the names saved.
    async fn add_specs(
        &self,
        site: &Site<'_>,
        manifest: &mut Json,
        args: &Args,
    ) -> Result<Vec<String>, String> {
        let mut saved = Vec::new();
        for spec in &args.specs {
            let (name, wanted) = split_spec(spec);
            if name.is_empty() || wanted.contains(':') || name.starts_with(['.', '/']) {
                return Err(format!(
                    "{spec}: only packages from a registry install in the sandbox (not git, \
                     URLs, files or aliases)"
                ));
            }
            let url = site.registry.packument(name)?;
            let bytes = site.net.get(&url, Some(PACKUMENT), None).await?;
            let document = Json::parse(&bytes).map_err(|e| format!("{url}: not JSON: {e}"))?;
            let chosen = pick(&document, wanted)
                .and_then(|m| m.str("version"))
                .ok_or_else(|| format!("no matching version found for {spec}"))?;
            let prefixed = match args.exact {
                true => chosen.to_string(),
                false => format!("^{chosen}"),
            };
            let save = match Range::parse(wanted) {
                Some(range) if !wanted.is_empty() && !narrower(&prefixed, &range) => {
                    wanted.to_string()
                }
                _ => prefixed,
            };
            let kind = match args.save {
                Save::Prod => "dependencies",
                Save::Dev => "devDependencies",
                Save::Optional => "optionalDependencies",
            };
            for other in KINDS
                .iter()
                .filter(|k| **k != kind && **k != "peerDependencies")
            {
                if let Some(deps) = object_mut(manifest, other) {
                    deps.remove(name);
                }
            }
            if object_mut(manifest, kind).is_none() {
                manifest.set(kind, Json::object());
            }
            let deps = object_mut(manifest, kind).expect("just set");
            deps.set(name, Json::String(save));
            if let Json::Object(entries) = deps {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            saved.push(name.to_string());
        }
        Ok(saved)
    }
}

fn object_mut<'j>(json: &'j mut Json, key: &str) -> Option<&'j mut Json> {
    match json {
        Json::Object(entries) => entries
            .iter_mut()
            .find(|(k, v)| k == key && matches!(v, Json::Object(_)))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// `name@spec`, the name possibly scoped (`@s/x@^1`).
fn split_spec(spec: &str) -> (&str, &str) {
    let from = usize::from(spec.starts_with('@'));
    match spec[from..].find('@') {
        Some(at) => (&spec[..from + at], &spec[from + at + 1..]),
        None => (spec, ""),
    }
}

/// Whether every version `^x.y.z` (or the exact one) takes, `range` takes
/// too: then npm saves the former.
fn narrower(prefixed: &str, range: &Range) -> bool {
    let Some(low) = version(prefixed.trim_start_matches('^')) else {
        return false;
    };
    let high = match (prefixed.starts_with('^'), low.major, low.minor) {
        (false, _, _) => low.clone(),
        (true, 0, 0) => low.clone(),
        (true, 0, minor) => semver::Version::new(0, minor, u64::MAX >> 1),
        (true, major, _) => semver::Version::new(major, u64::MAX >> 1, 0),
    };
    range.satisfies(&low) && range.satisfies(&high)
}

/// The lockfile's entry for the project: its name, version and
/// dependencies as the manifest now has them.
fn root_entry(manifest: &Json, old: &Json) -> Json {
    let mut root = Json::object();
    for key in ["name", "version", "license"] {
        if let Some(value) = manifest.get(key).or_else(|| old.get(key)) {
            root.set(key, value.clone());
        }
    }
    for key in KINDS.iter().chain(&["bin", "engines"]) {
        if let Some(value) = manifest.get(key) {
            root.set(key, value.clone());
        }
    }
    root
}

fn summary(report: &Report) -> String {
    let count = |n: usize, what: &str| match n {
        1 => format!("{what} 1 package"),
        n => format!("{what} {n} packages"),
    };
    let mut parts = Vec::new();
    if report.added > 0 {
        parts.push(count(report.added, "added"));
    }
    if report.removed > 0 {
        parts.push(count(report.removed, "removed"));
    }
    if report.changed > 0 {
        parts.push(count(report.changed, "changed"));
    }
    match parts.is_empty() {
        true => "\nup to date".into(),
        false => format!("\n{}", parts.join(", ")),
    }
}

fn scripts_note(report: &Report) -> String {
    match report.scripts.as_slice() {
        [] => String::new(),
        names => format!(
            "npm warn lifecycle scripts are not run in the sandbox; not run for: {}\n",
            names.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let args: Vec<String> = [
            "install",
            "-D",
            "--omit=optional",
            "left-pad@^1",
            "--registry",
            "http://x/",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let parsed = parse(&args, false).unwrap();
        assert_eq!(parsed.command, "install");
        assert_eq!(parsed.specs, ["left-pad@^1"]);
        assert!(parsed.save == Save::Dev && parsed.omit.optional && !parsed.omit.dev);
        assert_eq!(parsed.registry.as_deref(), Some("http://x/"));
        assert!(parse(&["ci".into(), "--frobnicate".into()], false).is_err());
        assert!(parse(&["ci".into()], true).unwrap().omit.dev);
        assert_eq!(split_spec("@s/x@^1"), ("@s/x", "^1"));
        assert_eq!(split_spec("@s/x"), ("@s/x", ""));
        assert_eq!(split_spec("x@latest"), ("x", "latest"));
    }

    #[test]
    fn saved_ranges() {
        assert!(narrower("^4.17.21", &Range::parse("4").unwrap()));
        assert!(!narrower("^1.2.5", &Range::parse("~1.2").unwrap()));
        assert_eq!(took_text(std::time::Duration::from_millis(1600)), "2s");
    }
}
