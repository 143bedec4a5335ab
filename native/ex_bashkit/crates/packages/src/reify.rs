//! A lockfile's tree made real in `node_modules`: each package's tarball
//! downloaded (checked against its `integrity`), unpacked where the
//! lockfile puts it, its bins linked in `node_modules/.bin`, and the
//! hidden lockfile written that tells the next install what is there.
//! Lifecycle scripts are never run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::FileSystem;

use crate::fetch::Net;
use crate::integrity::Integrity;
use crate::json::Json;
use crate::lockfile::{name_of, parent_of, Lock};
use crate::registry::Registry;
use crate::tarball;

/// What `--omit` (and `NODE_ENV=production`) leave out.
#[derive(Default, Clone, Copy)]
pub struct Omit {
    pub dev: bool,
    pub optional: bool,
    pub peer: bool,
}

/// Where an install writes, and through what it downloads.
pub struct Site<'a> {
    pub fs: &'a Arc<dyn FileSystem>,
    pub project: PathBuf,
    pub net: &'a Net,
    pub registry: &'a Registry,
    /// The most one package may unpack to.
    pub budget: u64,
}

#[derive(Default)]
pub struct Report {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    /// Packages with install scripts, which were not run.
    pub scripts: Vec<String>,
    /// Optional packages for another platform, left out as npm does.
    pub skipped: usize,
}

/// How many downloads run at once.
const DOWNLOADS: usize = 8;

/// The platform packages are checked against: `process.platform` and
/// `process.arch` of the sandbox's `node`.
const OS: &str = "linux";
const CPU: &str = "x64";

impl Site<'_> {
    fn at(&self, path: &str) -> PathBuf {
        self.project.join(path)
    }

    /// Installs `lock`'s tree. `fresh` (npm ci) starts from no
    /// `node_modules`; otherwise what the hidden lockfile says is there
    /// and unchanged stays.
    pub async fn reify(&self, lock: &Lock, omit: Omit, fresh: bool) -> Result<Report, String> {
        let mut report = Report::default();
        let mut wanted: Vec<(String, Json)> = Vec::new();
        for (path, entry) in &lock.packages {
            if !inside_node_modules(path) {
                return Err(format!("{path:?}: not a path inside node_modules"));
            }
            if entry.flag("link") {
                return Err(format!(
                    "{path}: workspaces and linked packages are not supported by the sandbox's npm"
                ));
            }
            if omitted(entry, omit) {
                continue;
            }
            if !platform_ok(entry) {
                match entry.flag("optional") || entry.flag("devOptional") {
                    true => {
                        report.skipped += 1;
                        continue;
                    }
                    false => {
                        return Err(format!(
                            "{path}: unsupported platform: it is for {}, the sandbox is {OS} {CPU}",
                            platform_of(entry)
                        ))
                    }
                }
            }
            wanted.push((path.clone(), entry.clone()));
        }
        let modules = self.at("node_modules");
        let installed = match fresh {
            true => Vec::new(),
            false => self.installed().await,
        };
        if fresh && self.fs.exists(&modules).await.unwrap_or(false) {
            self.fs
                .remove(&modules, true)
                .await
                .map_err(|e| format!("cannot remove node_modules: {e}"))?;
        }
        // What stays: the same package, still there.
        let mut keep = Vec::new();
        for (path, entry) in &wanted {
            let same = installed
                .iter()
                .any(|(p, e)| p == path && same_package(e, entry));
            if same && self.fs.exists(&self.at(path)).await.unwrap_or(false) {
                keep.push(path.clone());
            }
        }
        for (path, _) in &installed {
            if keep.contains(path) {
                continue;
            }
            match wanted.iter().any(|(p, _)| p == path) {
                true => report.changed += 1,
                false => report.removed += 1,
            }
            let _ = self.fs.remove(&self.at(path), true).await;
        }
        let fetch: Vec<&(String, Json)> = wanted
            .iter()
            .filter(|(path, entry)| !keep.contains(path) && !entry.flag("inBundle"))
            .collect();
        report.added = wanted
            .iter()
            .filter(|(path, _)| !keep.contains(path) && !installed.iter().any(|(p, _)| p == path))
            .count();
        // Downloads run a few at a time; each is written as it comes, so
        // at most a few tarballs are held at once.
        for batch in fetch.chunks(DOWNLOADS) {
            let downloads = batch.iter().map(|(path, entry)| self.download(path, entry));
            let tarballs = futures_util::future::join_all(downloads).await;
            for ((path, entry), tarball) in batch.iter().zip(tarballs) {
                self.unpack(path, entry, &tarball?).await?;
            }
        }
        for (path, entry) in &wanted {
            self.link_bins(path, entry).await?;
            if entry.flag("hasInstallScript") {
                report.scripts.push(name_of(path).to_string());
            }
        }
        report.scripts.sort();
        report.scripts.dedup();
        let hidden = lock.hidden(&wanted).pretty("  ");
        if !wanted.is_empty() {
            self.fs
                .mkdir(&modules, true)
                .await
                .map_err(|e| format!("cannot create node_modules: {e}"))?;
            self.fs
                .write_file(&modules.join(".package-lock.json"), hidden.as_bytes())
                .await
                .map_err(|e| format!("cannot write node_modules/.package-lock.json: {e}"))?;
        } else if self.fs.exists(&modules).await.unwrap_or(false) {
            let _ = self
                .fs
                .remove(&modules.join(".package-lock.json"), false)
                .await;
        }
        Ok(report)
    }

    /// What the hidden lockfile says is installed.
    async fn installed(&self) -> Vec<(String, Json)> {
        let path = self.at("node_modules/.package-lock.json");
        let Ok(text) = self.fs.read_file(&path).await else {
            return Vec::new();
        };
        Lock::parse(&text, ".package-lock.json")
            .map(|lock| lock.packages)
            .unwrap_or_default()
    }

    async fn download(&self, path: &str, entry: &Json) -> Result<Vec<u8>, String> {
        let name = name_of(path);
        let url = self.registry.tarball(name, entry)?;
        let integrity = match entry.str("integrity") {
            Some(sri) => Some(
                Integrity::parse_sri(sri)
                    .ok_or_else(|| format!("{path}: an integrity npm cannot check: {sri}"))?,
            ),
            None => None,
        };
        self.net
            .get(&url, None, integrity.as_ref())
            .await
            .map_err(|e| format!("{name}@{}: {e}", entry.str("version").unwrap_or("?")))
    }

    async fn unpack(&self, path: &str, entry: &Json, tgz: &[u8]) -> Result<(), String> {
        let bins: Vec<String> = bins(entry).into_iter().map(|(_, bin)| bin).collect();
        let files = tarball::unpack(tgz, &bins, self.budget).map_err(|e| format!("{path}: {e}"))?;
        let dir = self.at(path);
        self.fs
            .mkdir(&dir, true)
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        for file in files {
            let target = dir.join(&file.path);
            if let Some(parent) = target.parent() {
                self.fs
                    .mkdir(parent, true)
                    .await
                    .map_err(|e| format!("{}: {e}", target.display()))?;
            }
            self.fs
                .write_file(&target, &file.bytes)
                .await
                .map_err(|e| format!("{}: {e}", target.display()))?;
            self.fs
                .chmod(&target, file.mode)
                .await
                .map_err(|e| format!("{}: {e}", target.display()))?;
        }
        Ok(())
    }

    /// `node_modules/.bin/<bin>` → `../<package>/<file>`, next to the
    /// package.
    async fn link_bins(&self, path: &str, entry: &Json) -> Result<(), String> {
        let name = name_of(path);
        let dir = match parent_of(path) {
            "" => self.at("node_modules/.bin"),
            parent => self.at(parent).join("node_modules/.bin"),
        };
        for (bin, file) in bins(entry) {
            let link = dir.join(&bin);
            let target = Path::new("..").join(name).join(&file);
            self.fs
                .mkdir(&dir, true)
                .await
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            if self.fs.lstat(&link).await.is_ok() {
                let _ = self.fs.remove(&link, false).await;
            }
            self.fs
                .symlink(&target, &link)
                .await
                .map_err(|e| format!("{}: {e}", link.display()))?;
            // bin-links makes the target executable too.
            let file = self.at(path).join(&file);
            if let Ok(meta) = self.fs.stat(&file).await {
                let _ = self.fs.chmod(&file, meta.mode | 0o111).await;
            }
        }
        Ok(())
    }
}

/// A package's bins as npm normalizes them: (the link's name, the file
/// inside the package).
pub fn bins(entry: &Json) -> Vec<(String, String)> {
    entry
        .strings("bin")
        .into_iter()
        .filter_map(|(name, file)| {
            // A bin's name is one path component: the last of what is given.
            let name = Path::new(&name).file_name()?.to_str()?.to_string();
            if name.is_empty() || name.starts_with('.') {
                return None;
            }
            Some((name, tarball::bin_path(&file)?))
        })
        .collect()
}

/// A lockfile path npm could have written: `node_modules/` then plain
/// names, never climbing out of the project.
fn inside_node_modules(path: &str) -> bool {
    path.starts_with("node_modules/")
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'))
}

fn same_package(a: &Json, b: &Json) -> bool {
    a.str("version") == b.str("version")
        && a.str("resolved") == b.str("resolved")
        && a.str("integrity") == b.str("integrity")
}

fn omitted(entry: &Json, omit: Omit) -> bool {
    (entry.flag("dev") && omit.dev)
        || (entry.flag("optional") && omit.optional)
        || (entry.flag("devOptional") && omit.dev && omit.optional)
        || (entry.flag("peer") && omit.peer)
}

/// npm-install-checks' platform check: `os`/`cpu` lists where `!x`
/// excludes and any plain entry must name ours.
fn platform_ok(entry: &Json) -> bool {
    let fits = |key: &str, ours: &str| {
        let Some(Json::Array(list)) = entry.get(key) else {
            return true;
        };
        let names: Vec<&str> = list
            .iter()
            .filter_map(|v| match v {
                Json::String(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        if names.iter().any(|n| n.strip_prefix('!') == Some(ours)) {
            return false;
        }
        let plain: Vec<&&str> = names.iter().filter(|n| !n.starts_with('!')).collect();
        plain.is_empty() || plain.iter().any(|n| **n == ours || **n == "any")
    };
    fits("os", OS) && fits("cpu", CPU)
}

fn platform_of(entry: &Json) -> String {
    let list = |key: &str| match entry.get(key) {
        Some(Json::Array(list)) => list
            .iter()
            .filter_map(|v| match v {
                Json::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(","),
        _ => "any".into(),
    };
    format!("os {} cpu {}", list("os"), list("cpu"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfile_paths_stay_in_node_modules() {
        assert!(inside_node_modules("node_modules/a/node_modules/@s/b"));
        for path in [
            "node_modules/../../etc",
            "packages/a",
            "node_modules//a",
            "node_modules/./a",
            "/node_modules/a",
        ] {
            assert!(!inside_node_modules(path), "{path}");
        }
    }
}
