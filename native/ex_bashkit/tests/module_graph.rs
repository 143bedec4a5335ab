//! The crate's modules form a DAG: a module only uses modules below it
//! (NIFs → sessions, jobs, callbacks → runtime), never one that uses it
//! back. Checked from the sources: an edge is a `crate::<module>` path.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
    let graph = module_graph();
    assert!(graph.len() > 10, "found only {:?}", graph.keys());
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module, &mut Vec::new()) {
            panic!("module cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn every_used_module_exists() {
    let graph = module_graph();
    for (module, uses) in &graph {
        for used in uses {
            // `atoms` and friends are real modules; anything else is a typo
            // in this test's parsing or a module that moved.
            assert!(
                graph.contains_key(used),
                "{module} uses crate::{used}, which is not a module in src/"
            );
        }
    }
}
