//! The limit a failed script's message names comes from bashkit's error
//! variants (and, for its one string-typed memory variant, the exact
//! message of the variable budget), never from loose text matching.

use ex_bashkit_core::error;

use bashkit::{Error, LimitExceeded};
use std::time::Duration;

fn message(limit: LimitExceeded) -> String {
    error::message(&Error::ResourceLimit(limit))
}

#[test]
fn limits_the_options_control_are_named() {
    assert!(message(LimitExceeded::MaxCommands(5)).ends_with("(limit :max_commands)"));
    assert!(message(LimitExceeded::Timeout(Duration::from_millis(300)))
        .ends_with("(limit :timeout_ms)"));
    assert!(message(LimitExceeded::AstTooDeep(101, 100)).ends_with("(limit :max_ast_depth)"));
    let variables = LimitExceeded::Memory("variable byte limit (10000) exceeded".into());
    assert_eq!(
        message(variables),
        "resource limit exceeded: memory limit exceeded: variable byte limit (10000) exceeded \
         (limit :max_memory_bytes)"
    );
}

#[test]
fn other_memory_caps_are_not_blamed_on_max_memory_bytes() {
    for what in [
        "pr: output exceeds 1000 bytes",
        "dd padded data exceeds byte limit",
        "directory stack entry byte limit (4096) exceeded",
        "environment variable byte limit (100) exceeded",
        "variable byte limit (ten) exceeded",
    ] {
        let text = message(LimitExceeded::Memory(what.into()));
        assert!(!text.contains("(limit :"), "{text}");
    }
    // Limits no option controls carry no key.
    assert!(!message(LimitExceeded::MaxSubshellDepth(3)).contains("(limit :"));
}

#[test]
fn file_errors_name_the_path_not_the_io_prefix() {
    let gone = Error::Io(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "not found",
    ));
    assert_eq!(error::for_path("/data/x", &gone), "/data/x: not found");
    let other = Error::Execution("boom".into());
    assert_eq!(error::for_path("/y", &other), "/y: execution error: boom");
}
