//! The sandbox's `pip install`: requirements resolved from an index's
//! JSON API (`<index>/pypi/<name>/json`), pure-Python wheels only, each
//! checked against the index's sha256 before it is unpacked into the
//! CPython guest's site-packages. Source distributions and compiled
//! wheels are refused by name: nothing is built, nothing runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, FileSystem};

use crate::fetch::Net;
use crate::integrity::Integrity;
use crate::json::Json;
use crate::pep440::{normalize, Requirement, Specifiers, Version};
use crate::wheel;
use crate::words::Words;

/// Where the sandbox's CPython looks for installed packages.
pub const SITE_PACKAGES: &str = "/usr/local/lib/python3.14/site-packages";
const PREFIX: &str = "/usr/local";
/// The pip release whose command line this follows.
const VERSION: &str = "25.2";

const USAGE: &str = "the sandbox's pip installs pure-Python wheels: `pip install [-r FILE] \
                     [-i INDEX] [-t DIR] [--no-deps] [--pre] [-U] <requirement>...`, `pip list`";

pub struct Pip {
    pub net: Net,
    /// The most one wheel may unpack to.
    pub budget: u64,
}

#[derive(Default)]
struct Args {
    command: String,
    requirements: Vec<String>,
    files: Vec<String>,
    index: Option<String>,
    target: Option<String>,
    no_deps: bool,
    pre: bool,
    upgrade: bool,
    quiet: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut words = Words::new(args);
    while let Some(flag) = words.next_word() {
        match flag {
            "-r" | "--requirement" => parsed.files.push(words.value(flag)?),
            "-i" | "--index-url" => parsed.index = Some(words.value(flag)?),
            "-t" | "--target" => parsed.target = Some(words.value(flag)?),
            "--no-deps" => parsed.no_deps = true,
            "--pre" => parsed.pre = true,
            "-U" | "--upgrade" => parsed.upgrade = true,
            "-q" | "--quiet" => parsed.quiet = true,
            // What this pip does anyway: wheels only, no cache of its
            // own, no version check, no builds.
            "--only-binary"
            | "--prefer-binary"
            | "--no-cache-dir"
            | "--disable-pip-version-check"
            | "--no-input"
            | "--no-compile"
            | "--break-system-packages"
            | "--root-user-action"
            | "--progress-bar"
            | "--no-warn-script-location" => {
                if matches!(
                    flag,
                    "--only-binary" | "--root-user-action" | "--progress-bar"
                ) {
                    words.value(flag)?;
                }
            }
            "-V" | "--version" if parsed.command.is_empty() => parsed.command = "version".into(),
            "-h" | "--help" => parsed.command = "help".into(),
            flag if flag.starts_with('-') => {
                return Err(format!("no such option: {flag} ({USAGE})"))
            }
            word if parsed.command.is_empty() => parsed.command = word.to_string(),
            requirement => parsed.requirements.push(requirement.to_string()),
        }
    }
    Ok(parsed)
}

#[async_trait]
impl Builtin for Pip {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let args = match parse(ctx.args) {
            Ok(args) => args,
            Err(message) => return Ok(ExecResult::err(format!("ERROR: {message}\n"), 2)),
        };
        let fs = ctx.fs.clone();
        let outcome = match args.command.as_str() {
            "version" => Ok(format!(
                "pip {VERSION} from {SITE_PACKAGES}/pip (python 3.14)\n"
            )),
            "help" | "" => Ok(format!("pip: {USAGE}\n")),
            "list" => Ok(list(&fs, Path::new(SITE_PACKAGES)).await),
            "install" => self.install(&fs, ctx.cwd, ctx.env, &args).await,
            other => Err(format!("`pip {other}` is not available: {USAGE}")),
        };
        Ok(match outcome {
            Ok(_) if args.quiet => ExecResult::ok(String::new()),
            Ok(text) => ExecResult::ok(text),
            Err(message) => ExecResult::err(format!("ERROR: {message}\n"), 1),
        })
    }
}

/// What is installed in `site`: (normalized name, version, dist-info dir).
async fn installed(fs: &Arc<dyn FileSystem>, site: &Path) -> Vec<(String, String, String)> {
    let Ok(entries) = fs.read_dir(site).await else {
        return Vec::new();
    };
    entries
        .into_iter()
        .filter_map(|entry| {
            let stem = entry.name.strip_suffix(".dist-info")?;
            let (name, version) = stem.rsplit_once('-')?;
            Some((normalize(name), version.to_string(), entry.name.clone()))
        })
        .collect()
}

async fn list(fs: &Arc<dyn FileSystem>, site: &Path) -> String {
    let mut rows = installed(fs, site).await;
    rows.sort();
    let width = rows
        .iter()
        .map(|(n, _, _)| n.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = format!(
        "{:width$} Version\n{} -------\n",
        "Package",
        "-".repeat(width)
    );
    for (name, version, _) in rows {
        out.push_str(&format!("{name:width$} {version}\n"));
    }
    out
}

/// A version picked for a requirement, with what it needs.
struct Chosen {
    name: String,
    version: String,
    url: String,
    filename: String,
    integrity: Integrity,
    requires: Vec<String>,
    requested: bool,
}

impl Pip {
    async fn install(
        &self,
        fs: &Arc<dyn FileSystem>,
        cwd: &Path,
        env: &HashMap<String, String>,
        args: &Args,
    ) -> Result<String, String> {
        let mut wanted: Vec<(Requirement, bool)> = Vec::new();
        for text in &args.requirements {
            if text.starts_with(['.', '/']) || text.ends_with(".whl") || text.ends_with(".tar.gz") {
                return Err(format!(
                    "{text}: only requirements from an index install in the sandbox (not files or URLs)"
                ));
            }
            wanted.push((Requirement::parse(text)?, true));
        }
        for file in &args.files {
            let path = cwd.join(file);
            let text = fs
                .read_file(&path)
                .await
                .map_err(|e| format!("Could not open requirements file: {file}: {e}"))?;
            for line in String::from_utf8_lossy(&text).lines() {
                let line = line.split(" #").next().unwrap_or_default().trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if line.starts_with('-') {
                    return Err(format!(
                        "{file}: options in a requirements file are not supported: {line}"
                    ));
                }
                wanted.push((Requirement::parse(line)?, true));
            }
        }
        if wanted.is_empty() {
            return Err("You must give at least one requirement to install".into());
        }
        let index = index_of(fs, env, args.index.as_deref()).await?;
        let site = match &args.target {
            Some(target) => cwd.join(target),
            None => PathBuf::from(SITE_PACKAGES),
        };
        let prefix = match &args.target {
            Some(_) => site.clone(),
            None => PathBuf::from(PREFIX),
        };
        let present = installed(fs, &site).await;
        let mut out = String::new();
        let mut chosen: Vec<Chosen> = Vec::new();
        let mut queue = wanted;
        while !queue.is_empty() {
            let (requirement, requested) = queue.remove(0);
            let key = normalize(&requirement.name);
            if let Some(already) = chosen.iter().find(|c| normalize(&c.name) == key) {
                let version = Version::parse(&already.version);
                if !version.is_some_and(|v| requirement.specifiers.contains(&v)) {
                    return Err(format!(
                        "Cannot install {}: {} {} is picked and another requirement wants {}",
                        requirement.name,
                        already.name,
                        already.version,
                        requirement_text(&requirement)
                    ));
                }
                continue;
            }
            let held = present.iter().find(|(name, _, _)| *name == key);
            if let Some((_, version, _)) = held {
                let fits =
                    Version::parse(version).is_some_and(|v| requirement.specifiers.contains(&v));
                if fits && !(args.upgrade && requested) {
                    out.push_str(&format!(
                        "Requirement already satisfied: {} in {} ({version})\n",
                        requirement.name,
                        site.display()
                    ));
                    continue;
                }
            }
            out.push_str(&format!("Collecting {}\n", requirement_text(&requirement)));
            let pick = self.pick(&index, &requirement, args.pre).await?;
            if !args.no_deps {
                for text in &pick.requires {
                    let dependency = Requirement::parse(text)?;
                    if dependency.applies(&requirement.extras)? {
                        queue.push((dependency, false));
                    }
                }
            }
            chosen.push(Chosen { requested, ..pick });
        }
        if chosen.is_empty() {
            return Ok(out);
        }
        for pick in &chosen {
            let bytes = self.net.get(&pick.url, None, Some(&pick.integrity)).await?;
            out.push_str(&format!(
                "  Downloaded {} ({} bytes)\n",
                pick.filename,
                bytes.len()
            ));
            let files = wheel::unpack(&bytes, &site, &prefix, pick.requested, self.budget)
                .map_err(|e| format!("{}: {e}", pick.filename))?;
            // An older version goes first, as pip uninstalls it.
            let key = normalize(&pick.name);
            if let Some((_, _, dist_info)) = present.iter().find(|(name, _, _)| *name == key) {
                remove_installed(fs, &site, dist_info).await;
            }
            for file in files {
                if let Some(parent) = file.path.parent() {
                    fs.mkdir(parent, true)
                        .await
                        .map_err(|e| format!("{}: {e}", parent.display()))?;
                }
                fs.write_file(&file.path, &file.bytes)
                    .await
                    .map_err(|e| format!("{}: {e}", file.path.display()))?;
                let _ = fs.chmod(&file.path, file.mode).await;
            }
        }
        let names: Vec<&str> = chosen.iter().map(|c| c.name.as_str()).collect();
        out.push_str(&format!(
            "Installing collected packages: {}\n",
            names.join(", ")
        ));
        let done: Vec<String> = chosen
            .iter()
            .map(|c| format!("{}-{}", c.name, c.version))
            .collect();
        out.push_str(&format!("Successfully installed {}\n", done.join(" ")));
        Ok(out)
    }

    /// The newest version `requirement` allows that has a pure-Python
    /// wheel for Python 3.14.
    async fn pick(
        &self,
        index: &str,
        requirement: &Requirement,
        pre: bool,
    ) -> Result<Chosen, String> {
        let name = normalize(&requirement.name);
        let url = format!("{index}pypi/{name}/json");
        let bytes = self
            .net
            .get(&url, Some("application/json"), None)
            .await
            .map_err(|e| match e.contains(" 404 ") {
                true => format!(
                    "Could not find a version that satisfies the requirement {} (no such project \
                     on the index)",
                    requirement_text(requirement)
                ),
                false => e,
            })?;
        let document = Json::parse(&bytes).map_err(|e| format!("{url}: not JSON: {e}"))?;
        let allow_pre = pre || requirement.specifiers.names_pre();
        let mut versions: Vec<(Version, &Json)> = document
            .get("releases")
            .map(Json::entries)
            .unwrap_or_default()
            .iter()
            .filter_map(|(v, files)| Some((Version::parse(v)?, files)))
            .filter(|(v, _)| requirement.specifiers.contains(v) && (allow_pre || !v.is_pre()))
            .collect();
        versions.sort_by(|a, b| b.0.cmp(&a.0));
        let python = Version::parse("3.14.0").expect("a version");
        let mut compiled_only = None;
        for (version, files) in versions {
            let Json::Array(files) = files else { continue };
            let live: Vec<&Json> = files.iter().filter(|f| !f.flag("yanked")).collect();
            if live.is_empty() {
                continue;
            }
            let python_ok = |file: &Json| {
                file.str("requires_python")
                    .and_then(Specifiers::parse)
                    .is_none_or(|spec| spec.contains(&python))
            };
            let wheel = live
                .iter()
                .find(|f| python_ok(f) && f.str("filename").is_some_and(wheel::pure));
            let Some(file) = wheel else {
                compiled_only.get_or_insert(version.text.clone());
                continue;
            };
            if compiled_only.is_some() {
                // pip would build the newer one from source; this one cannot.
                break;
            }
            let filename = file.str("filename").unwrap_or_default().to_string();
            let sha256 = file
                .get("digests")
                .and_then(|d| d.str("sha256"))
                .and_then(|hex| Integrity::hex("sha256", hex))
                .ok_or_else(|| format!("{filename}: the index names no sha256 for it"))?;
            let url = file
                .str("url")
                .ok_or_else(|| format!("{filename}: the index names no URL for it"))?
                .to_string();
            let requires = self.requires(index, &name, &version, &document).await?;
            return Ok(Chosen {
                name: document
                    .get("info")
                    .and_then(|i| i.str("name"))
                    .unwrap_or(&requirement.name)
                    .to_string(),
                version: version.text.clone(),
                url,
                filename,
                integrity: sha256,
                requires,
                requested: false,
            });
        }
        Err(match compiled_only {
            Some(version) => format!(
                "{} {version} has no pure-Python wheel (only compiled wheels or a source \
                 distribution): the sandbox's pip installs pure-Python wheels only",
                requirement.name
            ),
            None => format!(
                "Could not find a version that satisfies the requirement {}",
                requirement_text(requirement)
            ),
        })
    }

    /// `requires_dist` of one version (the project's document has the
    /// latest's only).
    async fn requires(
        &self,
        index: &str,
        name: &str,
        version: &Version,
        document: &Json,
    ) -> Result<Vec<String>, String> {
        let info = document.get("info");
        let latest = info.and_then(|i| i.str("version"));
        let info = match latest == Some(version.text.as_str()) {
            true => info.cloned(),
            false => {
                let url = format!("{index}pypi/{name}/{}/json", version.text);
                let bytes = self.net.get(&url, Some("application/json"), None).await?;
                let document = Json::parse(&bytes).map_err(|e| format!("{url}: not JSON: {e}"))?;
                document.get("info").cloned()
            }
        };
        Ok(match info.as_ref().and_then(|i| i.get("requires_dist")) {
            Some(Json::Array(list)) => list
                .iter()
                .filter_map(|r| match r {
                    Json::String(text) => Some(text.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        })
    }
}

/// Removes what an installed version's RECORD lists, and its dist-info.
async fn remove_installed(fs: &Arc<dyn FileSystem>, site: &Path, dist_info: &str) {
    let record = site.join(dist_info).join("RECORD");
    if let Ok(text) = fs.read_file(&record).await {
        for line in String::from_utf8_lossy(&text).lines() {
            let path = line.split(',').next().unwrap_or_default();
            if path.is_empty() || path.split('/').any(|p| p == "..") || path.starts_with('/') {
                continue;
            }
            let _ = fs.remove(&site.join(path), false).await;
        }
    }
    let _ = fs.remove(&site.join(dist_info), true).await;
}

fn requirement_text(requirement: &Requirement) -> &str {
    &requirement.text
}

/// The index's base URL (its JSON API is under `pypi/`), from `-i`,
/// `PIP_INDEX_URL` or `index-url` in pip's configuration files; a pip
/// index URL's trailing `simple/` is dropped.
async fn index_of(
    fs: &Arc<dyn FileSystem>,
    env: &HashMap<String, String>,
    flag: Option<&str>,
) -> Result<String, String> {
    let mut url = flag
        .map(str::to_string)
        .or_else(|| env.get("PIP_INDEX_URL").cloned());
    if url.is_none() {
        let mut files = vec![PathBuf::from("/etc/pip.conf")];
        if let Some(home) = env.get("HOME") {
            files.insert(0, Path::new(home).join(".pip/pip.conf"));
            files.insert(0, Path::new(home).join(".config/pip/pip.conf"));
        }
        for file in files {
            let Ok(text) = fs.read_file(&file).await else {
                continue;
            };
            let found = String::from_utf8_lossy(&text).lines().find_map(|line| {
                let (key, value) = line.split_once('=')?;
                (key.trim() == "index-url" || key.trim() == "index_url")
                    .then(|| value.trim().to_string())
            });
            if found.is_some() {
                url = found;
                break;
            }
        }
    }
    let url = url.ok_or(
        "no index is configured: set one with --index-url URL, the PIP_INDEX_URL variable or \
         `index-url` in pip.conf (and allow it in the session's :allow_net)",
    )?;
    let base = url.trim_end_matches('/');
    let base = base.strip_suffix("/simple").unwrap_or(base);
    Ok(format!("{base}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let words: Vec<String> = [
            "install",
            "-r",
            "req.txt",
            "attrs>=22",
            "--index-url=http://x/simple",
            "-U",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let args = parse(&words).unwrap();
        assert_eq!(args.command, "install");
        assert_eq!(args.requirements, ["attrs>=22"]);
        assert_eq!(args.files, ["req.txt"]);
        assert!(args.upgrade);
        assert!(parse(&["install".into(), "--editable".into()]).is_err());
    }
}
