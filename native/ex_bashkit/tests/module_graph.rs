//! The workspace's shape, checked from the sources. In each crate the
//! modules form a DAG: a module only uses modules below it (NIFs →
//! sessions, jobs, callbacks → runtime), never one that uses it back; an
//! edge is a `crate::<module>` path. Across crates, the core and the
//! worker never reach the VM: rustler is the NIF crate's alone.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The workspace's crates, by the directory of each.
const CRATES: [&str; 5] = [
    ".",
    "crates/protocol",
    "crates/core",
    "crates/jail",
    "crates/worker",
];

fn crate_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn module_graph(name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir(name).join("src");
    let mut graph = BTreeMap::new();
    for entry in fs::read_dir(&src).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let module = match path.file_stem().and_then(|s| s.to_str()) {
            Some(name) if path.extension().is_some_and(|e| e == "rs") => name.to_string(),
            _ => continue,
        };
        if module == "lib" {
            continue; // the wiring: it names every module
        }
        let text = fs::read_to_string(&path).expect("a readable source file");
        let uses = text
            .match_indices("crate::")
            .map(|(at, prefix)| {
                text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|used| !used.is_empty() && *used != module && used.chars().all(is_lower))
            .collect();
        graph.insert(module, uses);
    }
    graph
}

fn is_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
}

/// A cycle through `module`, if there is one, found depth first.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    module: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == module) {
        let mut cycle = path[at..].to_vec();
        cycle.push(module.to_string());
        return Some(cycle);
    }
    path.push(module.to_string());
    for used in graph.get(module).into_iter().flatten() {
        if let Some(cycle) = cycle_from(graph, used, path) {
            return Some(cycle);
        }
    }
    path.pop();
    None
}

#[test]
fn the_module_graph_is_acyclic() {
    for name in CRATES {
        let graph = module_graph(name);
        assert!(graph.len() >= 4, "{name}: found only {:?}", graph.keys());
        for module in graph.keys() {
            if let Some(cycle) = cycle_from(&graph, module, &mut Vec::new()) {
                panic!("{name}: module cycle: {}", cycle.join(" → "));
            }
        }
    }
}

#[test]
fn every_used_module_exists() {
    for name in CRATES {
        let graph = module_graph(name);
        for (module, uses) in &graph {
            for used in uses {
                // `atoms` and friends are real modules; anything else is a
                // typo in this test's parsing or a module that moved.
                assert!(
                    graph.contains_key(used),
                    "{name}: {module} uses crate::{used}, which is not a module in src/"
                );
            }
        }
    }
}

/// Every Rust source file under `dir`.
fn sources(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

#[test]
fn only_the_nif_crate_knows_the_vm() {
    for name in ["crates/core", "crates/jail", "crates/worker"] {
        let dir = crate_dir(name);
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
        let depends = manifest
            .lines()
            .any(|line| !line.trim_start().starts_with('#') && line.contains("rustler"));
        assert!(!depends, "{name}/Cargo.toml depends on rustler");
        let files = sources(&dir.join("src"));
        assert!(files.len() >= 4, "{name}: found only {files:?}");
        for file in files {
            let text = fs::read_to_string(&file).expect("a readable source file");
            for vm in ["rustler", "enif_"] {
                assert!(!text.contains(vm), "{} names {vm}", file.display());
            }
        }
    }
}
