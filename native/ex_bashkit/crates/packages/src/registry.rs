//! Which registry a package comes from, as npm's configuration says:
//! `--registry`, then `npm_config_registry`, then `registry=` (and
//! `@scope:registry=`) in the project's `.npmrc` and the user's. With one
//! configured, a lockfile's `resolved` URLs are fetched from it (npm's
//! `replace-registry-host=always`); without one, from where they name.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bashkit::FileSystem;

use crate::json::Json;

#[derive(Default, Debug)]
pub struct Registry {
    /// Ends in `/`.
    pub default: Option<String>,
    /// `@scope` → its registry.
    pub scopes: Vec<(String, String)>,
}

/// What npm asks a registry for: the abbreviated document of versions.
pub const PACKUMENT: &str =
    "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

impl Registry {
    /// The configuration in force for a project at `project`.
    pub async fn configured(
        fs: &Arc<dyn FileSystem>,
        project: &Path,
        env: &HashMap<String, String>,
        flag: Option<&str>,
    ) -> Self {
        let mut registry = Self::default();
        let mut files = vec![project.join(".npmrc")];
        if let Some(home) = env.get("HOME") {
            files.push(Path::new(home).join(".npmrc"));
        }
        // Later files are weaker: a key already set stays.
        for file in files {
            let Ok(text) = fs.read_file(&file).await else {
                continue;
            };
            for line in String::from_utf8_lossy(&text).lines() {
                let line = line.trim();
                if line.starts_with(['#', ';']) {
                    continue;
                }
                let Some((key, value)) = line.split_once('=') else {
                    continue;
                };
                let (key, value) = (key.trim(), value.trim());
                if key == "registry" && registry.default.is_none() {
                    registry.default = Some(slashed(value));
                } else if let Some(scope) = key.strip_suffix(":registry") {
                    if scope.starts_with('@') && !registry.scopes.iter().any(|(s, _)| s == scope) {
                        registry.scopes.push((scope.to_string(), slashed(value)));
                    }
                }
            }
        }
        let from_env = ["npm_config_registry", "NPM_CONFIG_REGISTRY"]
            .iter()
            .find_map(|key| env.get(*key).filter(|v| !v.is_empty()));
        if let Some(url) = flag.or(from_env.map(String::as_str)) {
            registry.default = Some(slashed(url));
        }
        registry
    }

    /// The registry `name` comes from.
    pub fn of(&self, name: &str) -> Option<&str> {
        let scope = name.split('/').next().filter(|_| name.starts_with('@'));
        scope
            .and_then(|scope| self.scopes.iter().find(|(s, _)| s == scope))
            .map(|(_, url)| url.as_str())
            .or(self.default.as_deref())
    }

    fn needed(&self, name: &str) -> Result<&str, String> {
        self.of(name).ok_or_else(|| {
            "no registry is configured: set one with --registry=URL, the npm_config_registry \
             variable or `registry=URL` in .npmrc (and allow it in the session's :allow_net)"
                .to_string()
        })
    }

    /// The URL of `name`'s document of versions.
    pub fn packument(&self, name: &str) -> Result<String, String> {
        Ok(format!(
            "{}{}",
            self.needed(name)?,
            name.replace('/', "%2f")
        ))
    }

    /// Where a lockfile entry's tarball is fetched from.
    pub fn tarball(&self, name: &str, entry: &Json) -> Result<String, String> {
        let resolved = entry.str("resolved");
        if let Some(url) = resolved {
            if !url.starts_with("http://") && !url.starts_with("https://") {
                return Err(format!(
                    "{name} comes from {url}: only registry tarballs install in the sandbox"
                ));
            }
        }
        match (self.of(name), resolved) {
            (Some(registry), Some(url)) => match url.rfind("/-/") {
                Some(at) => Ok(format!("{registry}{name}{}", &url[at..])),
                None => Ok(url.to_string()),
            },
            (None, Some(url)) => Ok(url.to_string()),
            (_, None) => {
                let version = entry
                    .str("version")
                    .ok_or_else(|| format!("{name}: the lockfile names no version"))?;
                let base = name.rsplit('/').next().unwrap_or(name);
                Ok(format!(
                    "{}{name}/-/{base}-{version}.tgz",
                    self.needed(name)?
                ))
            }
        }
    }
}

fn slashed(url: &str) -> String {
    match url.ends_with('/') {
        true => url.to_string(),
        false => format!("{url}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_urls_come_from_the_configured_registry() {
        let registry = Registry {
            default: Some("http://127.0.0.1:9/r/".into()),
            scopes: vec![("@s".into(), "http://127.0.0.1:8/".into())],
        };
        let entry = Json::parse(
            br#"{"version": "1.0.0", "resolved": "https://elsewhere/a/-/a-1.0.0.tgz"}"#,
        )
        .unwrap();
        assert_eq!(
            registry.tarball("a", &entry).unwrap(),
            "http://127.0.0.1:9/r/a/-/a-1.0.0.tgz"
        );
        let bare = Json::parse(br#"{"version": "2.0.0"}"#).unwrap();
        assert_eq!(
            registry.tarball("@s/b", &bare).unwrap(),
            "http://127.0.0.1:8/@s/b/-/b-2.0.0.tgz"
        );
        assert_eq!(
            registry.packument("@s/b").unwrap(),
            "http://127.0.0.1:8/@s%2fb"
        );
        let git = Json::parse(br#"{"resolved": "git+ssh://x/y.git"}"#).unwrap();
        assert!(registry.tarball("y", &git).is_err());
        assert!(Registry::default()
            .packument("a")
            .unwrap_err()
            .contains("no registry"));
    }
}
