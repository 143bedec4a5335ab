//! The worker's hardening lists and filters: the reviewed system call
//! lists are consistent, and the filters compile. The filters at work are
//! attacked from inside by test/ex_bashkit/worker/escape_test.exs.

use ex_bashkit_jail::seccomp;
use ex_bashkit_jail::syscalls;

use std::collections::HashSet;

#[test]
fn a_call_is_in_one_list_only() {
    let lists: [Vec<(&str, libc::c_long)>; 4] = [
        syscalls::allowed().collect(),
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
fn no_socket_calls_at_all() {
    // A worker's network is the host's (worker/egress.rs): nothing here
    // opens, connects, sends on or serves a socket.
    let allowed: HashSet<&str> = syscalls::allowed().map(|(name, _)| name).collect();
    let conditional: HashSet<&str> = syscalls::CONDITIONAL
        .iter()
        .map(|(name, _)| *name)
        .collect();
    for name in [
        "socket",
        "connect",
        "bind",
        "listen",
        "accept",
        "accept4",
        "socketpair",
        "sendto",
        "sendmsg",
        "recvfrom",
        "recvmsg",
        "setsockopt",
    ] {
        assert!(!allowed.contains(name), "{name} is allowed");
        assert!(
            !conditional.contains(name),
            "{name} is allowed with conditions"
        );
    }
}

#[test]
fn the_filters_compile() {
    let programs = seccomp::programs().expect("filters");
    assert_eq!(programs.len(), 3);
    assert!(programs.iter().all(|program| !program.is_empty()));
}
