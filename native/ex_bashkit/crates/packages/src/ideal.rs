//! The tree an install wants when no lockfile says it: each dependency's
//! version picked from its registry document as npm picks it (the
//! `latest` tag when it fits the range, else the highest that does), and
//! placed as high in `node_modules` as it can go without clashing with a
//! different version on the way up. Versions a lockfile already holds are
//! kept where they still fit.

use std::collections::{BTreeMap, HashMap};

use crate::json::Json;
use crate::lockfile::{child_path, name_of, parent_of, Lock};
use crate::registry::PACKUMENT;
use crate::reify::Site;
use crate::semver::{version, Range};

pub struct Ideal<'a> {
    site: &'a Site<'a>,
    /// Where a dependency the lockfile holds comes from, by name.
    locked: HashMap<String, Vec<Json>>,
    documents: HashMap<String, Json>,
    /// Path → lockfile entry.
    nodes: BTreeMap<String, Json>,
    /// Whether peers are left to the project (`--legacy-peer-deps`).
    pub legacy_peers: bool,
}

/// The edges of a package: its dependencies of each kind, and whether
/// missing them is fine.
fn edges(entry: &Json, root: bool) -> Vec<(String, String, Edge)> {
    let mut edges = Vec::new();
    let kinds: &[(&str, Edge)] = match root {
        true => &[
            ("dependencies", Edge::Prod),
            ("optionalDependencies", Edge::Optional),
            ("devDependencies", Edge::Dev),
            ("peerDependencies", Edge::Peer),
        ],
        false => &[
            ("dependencies", Edge::Prod),
            ("optionalDependencies", Edge::Optional),
            ("peerDependencies", Edge::Peer),
        ],
    };
    let meta = entry.get("peerDependenciesMeta");
    for (kind, edge) in kinds {
        for (name, spec) in entry.strings(kind) {
            let optional_peer = *edge == Edge::Peer
                && meta
                    .and_then(|m| m.get(&name))
                    .is_some_and(|m| m.flag("optional"));
            // An optional dependency also listed as a dependency is optional.
            if *edge == Edge::Prod
                && entry
                    .get("optionalDependencies")
                    .and_then(|o| o.get(&name))
                    .is_some()
            {
                continue;
            }
            if !optional_peer {
                edges.push((name, spec, *edge));
            }
        }
    }
    edges
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Edge {
    Prod,
    Optional,
    Dev,
    Peer,
}

impl<'a> Ideal<'a> {
    pub fn new(site: &'a Site<'a>, lock: Option<&Lock>) -> Self {
        let mut locked: HashMap<String, Vec<Json>> = HashMap::new();
        for (path, entry) in lock.map(|l| l.packages.as_slice()).unwrap_or_default() {
            locked
                .entry(name_of(path).to_string())
                .or_default()
                .push(entry.clone());
        }
        Self {
            site,
            locked,
            documents: HashMap::new(),
            nodes: BTreeMap::new(),
            legacy_peers: false,
        }
    }

    /// The path a package at `from` loads `name` from, if any.
    fn resolves(&self, from: &str, name: &str) -> Option<String> {
        let mut at = from.to_string();
        loop {
            let candidate = child_path(&at, name);
            if self.nodes.contains_key(&candidate) {
                return Some(candidate);
            }
            if at.is_empty() {
                return None;
            }
            at = parent_of(&at).to_string();
        }
    }

    /// Builds the tree for `manifest` (the project's package.json).
    pub async fn build(mut self, manifest: &Json) -> Result<Vec<(String, Json)>, String> {
        let mut queue: Vec<String> = vec![String::new()];
        while !queue.is_empty() {
            // Shallowest first, then by path, as npm walks its tree.
            queue.sort_by_key(|path| (path.matches("node_modules/").count(), path.clone()));
            let path = queue.remove(0);
            let entry = match path.as_str() {
                "" => manifest.clone(),
                _ => self.nodes[&path].clone(),
            };
            for (name, spec, edge) in edges(&entry, path.is_empty()) {
                if edge == Edge::Peer && self.legacy_peers {
                    continue;
                }
                if let Some(found) = self.resolves(&path, &name) {
                    let fits = self.nodes[&found]
                        .str("version")
                        .and_then(version)
                        .zip(Range::parse(&spec))
                        .is_some_and(|(v, r)| r.satisfies(&v));
                    if fits {
                        continue;
                    }
                }
                let chosen = match self.choose(&name, &spec).await {
                    Ok(chosen) => chosen,
                    Err(_) if edge == Edge::Optional => continue,
                    Err(e) => return Err(e),
                };
                // A peer belongs beside its dependent, where both load it.
                let from = match edge == Edge::Peer && !path.is_empty() {
                    true => parent_of(&path).to_string(),
                    false => path.clone(),
                };
                let placed = self.place(&from, &name, chosen);
                if let Some(placed) = placed {
                    queue.push(placed);
                }
            }
        }
        let flags = self.flags(manifest);
        Ok(self
            .nodes
            .into_iter()
            .map(|(path, entry)| {
                let entry = with_flags(entry, flags.get(&path).copied().unwrap_or_default());
                (path, entry)
            })
            .collect())
    }

    /// Puts `entry` where `from` loads it: the highest `node_modules` on
    /// the way up with no other version of it. `None` when one is already
    /// there (nothing new to walk).
    fn place(&mut self, from: &str, name: &str, entry: Json) -> Option<String> {
        let mut target = child_path(from, name);
        let mut at = from.to_string();
        loop {
            let candidate = child_path(&at, name);
            if self.nodes.contains_key(&candidate) {
                break;
            }
            target = candidate;
            if at.is_empty() {
                break;
            }
            at = parent_of(&at).to_string();
        }
        if self.nodes.contains_key(&target) {
            return None;
        }
        self.nodes.insert(target.clone(), entry);
        Some(target)
    }

    /// The lockfile entry of the version of `name` that `spec` picks.
    async fn choose(&mut self, name: &str, spec: &str) -> Result<Json, String> {
        if let Some(range) = Range::parse(spec) {
            let held = self.locked.get(name).into_iter().flatten().find(|entry| {
                entry
                    .str("version")
                    .and_then(version)
                    .is_some_and(|v| range.satisfies(&v))
            });
            if let Some(held) = held {
                return Ok(held.clone());
            }
        }
        if spec.contains(':') || spec.contains('/') {
            return Err(format!(
                "{name}@{spec}: only packages from a registry install in the sandbox (not git, \
                 URLs, files or aliases)"
            ));
        }
        let document = self.document(name).await?;
        let manifest = pick(&document, spec).ok_or_else(|| {
            format!("no matching version found for {name}@{spec} in the registry")
        })?;
        entry_of(name, manifest)
    }

    async fn document(&mut self, name: &str) -> Result<Json, String> {
        if let Some(document) = self.documents.get(name) {
            return Ok(document.clone());
        }
        let url = self.site.registry.packument(name)?;
        let bytes = self
            .site
            .net
            .get(&url, Some(PACKUMENT), None)
            .await
            .map_err(|e| match e.contains(" 404 ") {
                true => format!("{name}: not found in the registry ({url})"),
                false => e,
            })?;
        let document = Json::parse(&bytes).map_err(|e| format!("{url}: not JSON: {e}"))?;
        self.documents.insert(name.to_string(), document.clone());
        Ok(document)
    }

    /// dev/optional for each path, by what reaches it from the project.
    fn flags(&self, manifest: &Json) -> HashMap<String, Flags> {
        let reach = |kinds: &[Edge], follow_optional: bool| {
            let mut seen: Vec<String> = Vec::new();
            let mut queue: Vec<(String, Json)> = Vec::new();
            let root_edges = edges(manifest, true);
            for (name, _, edge) in root_edges {
                if kinds.contains(&edge) {
                    if let Some(path) = self.resolves("", &name) {
                        queue.push((path.clone(), self.nodes[&path].clone()));
                    }
                }
            }
            while let Some((path, entry)) = queue.pop() {
                if seen.contains(&path) {
                    continue;
                }
                seen.push(path.clone());
                for (name, _, edge) in edges(&entry, false) {
                    if edge == Edge::Optional && !follow_optional {
                        continue;
                    }
                    if let Some(found) = self.resolves(&path, &name) {
                        queue.push((found.clone(), self.nodes[&found].clone()));
                    }
                }
            }
            seen
        };
        let prod = reach(&[Edge::Prod, Edge::Optional, Edge::Peer], true);
        let prod_required = reach(&[Edge::Prod, Edge::Peer], false);
        let dev_required = reach(&[Edge::Dev], false);
        self.nodes
            .keys()
            .map(|path| {
                let in_prod = prod.contains(path);
                let flags = Flags {
                    dev: !in_prod,
                    optional: in_prod
                        && !prod_required.contains(path)
                        && !dev_required.contains(path),
                };
                (path.clone(), flags)
            })
            .collect()
    }
}

#[derive(Default, Clone, Copy)]
struct Flags {
    dev: bool,
    optional: bool,
}

/// The entry with npm's flags in their place (after `integrity`).
fn with_flags(mut entry: Json, flags: Flags) -> Json {
    for key in ["dev", "optional", "devOptional", "peer"] {
        entry.remove(key);
    }
    let Json::Object(fields) = &mut entry else {
        return entry;
    };
    let at = fields
        .iter()
        .position(|(k, _)| !matches!(k.as_str(), "version" | "resolved" | "integrity"))
        .unwrap_or(fields.len());
    let mut set = Vec::new();
    if flags.dev {
        set.push(("dev".to_string(), Json::Bool(true)));
    }
    if flags.optional {
        set.push(("optional".to_string(), Json::Bool(true)));
    }
    fields.splice(at..at, set);
    entry
}

/// The version `spec` picks from a registry document: a dist-tag, or for
/// a range the `latest` tag where it fits, else the highest that fits
/// (those not deprecated first).
pub fn pick<'d>(document: &'d Json, spec: &str) -> Option<&'d Json> {
    let versions = document.get("versions")?;
    let spec = match spec.trim() {
        "" => "latest",
        spec => spec,
    };
    if let Some(tagged) = document.get("dist-tags").and_then(|tags| tags.str(spec)) {
        return versions.get(tagged);
    }
    let range = Range::parse(spec)?;
    let latest = document
        .get("dist-tags")
        .and_then(|tags| tags.str("latest"));
    if let Some(latest) = latest.and_then(|l| versions.get(l).map(|m| (l, m))) {
        if version(latest.0).is_some_and(|v| range.satisfies(&v)) {
            return Some(latest.1);
        }
    }
    versions
        .entries()
        .iter()
        .filter_map(|(v, manifest)| Some((version(v)?, manifest)))
        .filter(|(v, _)| range.satisfies(v))
        .max_by(|(a, am), (b, bm)| {
            let live = |m: &Json| m.get("deprecated").is_none();
            (live(am), a).cmp(&(live(bm), b))
        })
        .map(|(_, manifest)| manifest)
}

/// A registry version's manifest as a lockfile records it.
pub fn entry_of(name: &str, manifest: &Json) -> Result<Json, String> {
    let version = manifest
        .str("version")
        .ok_or_else(|| format!("{name}: the registry's document names no version"))?;
    let dist = manifest.get("dist");
    let tarball = dist
        .and_then(|d| d.str("tarball"))
        .ok_or_else(|| format!("{name}@{version}: the registry names no tarball"))?;
    let integrity = match dist.and_then(|d| d.str("integrity")) {
        Some(sri) => sri.to_string(),
        None => {
            let shasum = dist
                .and_then(|d| d.str("shasum"))
                .and_then(|hex| crate::integrity::Integrity::hex("sha1", hex))
                .ok_or_else(|| format!("{name}@{version}: the registry names no digest"))?;
            shasum.to_string()
        }
    };
    let mut entry = Json::object();
    entry.set("version", Json::String(version.to_string()));
    entry.set("resolved", Json::String(tarball.to_string()));
    entry.set("integrity", Json::String(integrity));
    for key in [
        "hasInstallScript",
        "license",
        "dependencies",
        "optionalDependencies",
        "bin",
        "engines",
        "os",
        "cpu",
        "funding",
        "peerDependencies",
        "peerDependenciesMeta",
        "deprecated",
    ] {
        if let Some(value) = manifest.get(key) {
            if key == "bin" {
                if let Json::String(file) = value {
                    let base = name.rsplit('/').next().unwrap_or(name);
                    entry.set(
                        "bin",
                        Json::from_strings([(base.to_string(), file.clone())]),
                    );
                    continue;
                }
            }
            entry.set(key, value.clone());
        }
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_as_npm() {
        let document = Json::parse(
            br#"{"dist-tags": {"latest": "1.2.0", "next": "2.0.0-rc.1"},
                 "versions": {"1.2.0": {"version": "1.2.0"}, "1.3.0": {"version": "1.3.0"},
                              "1.4.0": {"version": "1.4.0", "deprecated": "no"},
                              "2.0.0-rc.1": {"version": "2.0.0-rc.1"}}}"#,
        )
        .unwrap();
        let picked = |spec| pick(&document, spec).and_then(|m| m.str("version"));
        assert_eq!(picked("^1.0.0"), Some("1.2.0"));
        assert_eq!(picked("^1.3.0"), Some("1.3.0"));
        assert_eq!(picked("^1.4.0"), Some("1.4.0"));
        assert_eq!(picked("next"), Some("2.0.0-rc.1"));
        assert_eq!(picked(""), Some("1.2.0"));
        assert_eq!(picked("^3"), None);
    }
}
