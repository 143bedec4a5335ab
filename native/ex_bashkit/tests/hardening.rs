//! The worker's hardening lists and filters, compiled standalone: the
//! reviewed system call lists are consistent, and the filters compile. The
//! filters at work are attacked from inside by test/ex_bashkit/escape_test.exs.

#[path = "../src/hardening/ports.rs"]
mod ports;
#[path = "../src/hardening/seccomp.rs"]
#[allow(dead_code)] // apply: installing a filter would bind this test process
mod seccomp;
#[path = "../src/hardening/syscalls.rs"]
mod syscalls;

use std::collections::HashSet;

#[test]
fn a_call_is_in_one_list_only() {
    let lists: [Vec<(&str, libc::c_long)>; 4] = [
        syscalls::allowed(true).collect(),
        syscalls::CONDITIONAL.to_vec(),
        syscalls::UNSUPPORTED.to_vec(),
        syscalls::fatal().collect(),
    ];
    let mut seen = HashSet::new();
    for (name, number) in lists.iter().flatten() {
        assert!(seen.insert(*number), "{name} ({number}) is listed twice");
    }
}

#[test]
fn dangerous_calls_are_fatal() {
    let fatal: HashSet<&str> = syscalls::fatal().map(|(name, _)| name).collect();
    for name in [
        "execve",
        "ptrace",
        "bpf",
        "mount",
        "io_uring_setup",
        "unshare",
        "setns",
    ] {
        assert!(fatal.contains(name), "{name} is not fatal");
    }
}

#[test]
fn sockets_only_with_the_network() {
    let without: HashSet<&str> = syscalls::allowed(false).map(|(name, _)| name).collect();
    let with: HashSet<&str> = syscalls::allowed(true).map(|(name, _)| name).collect();
    assert!(!without.contains("connect") && with.contains("connect"));
    for name in ["bind", "listen", "accept", "accept4", "socketpair"] {
        assert!(!with.contains(name), "{name} is allowed");
    }
}

#[test]
fn the_filters_compile() {
    for network in [false, true] {
        let programs = seccomp::programs(network).expect("filters");
        assert_eq!(programs.len(), 3);
        assert!(programs.iter().all(|program| !program.is_empty()));
    }
}

#[test]
fn ports_of_allowlist_patterns() {
    assert_eq!(
        ports::of_pattern("https://api.example.com/v1"),
        Some(vec![443])
    );
    assert_eq!(
        ports::of_pattern("http://127.0.0.1:8080/x"),
        Some(vec![8080])
    );
    assert_eq!(ports::of_pattern("http://[::1]:9000"), Some(vec![9000]));
    assert_eq!(ports::of_pattern("http://[::1]/"), Some(vec![80]));
    assert_eq!(ports::of_pattern("example.com"), Some(vec![80, 443]));
    assert_eq!(ports::of_pattern("http://host:*"), None);
    assert_eq!(ports::of_pattern("ftp://host"), None);
}
