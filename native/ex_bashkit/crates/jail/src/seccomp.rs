//! The worker's seccomp-bpf filters, compiled by `seccompiler` from the
//! reviewed list in `syscalls.rs`.
//!
//! Three filters, since one filter has one action for a match: the fatal
//! calls, which kill the process; `clone3`, answered `ENOSYS`; and the
//! allowlist (anything else fails with `EPERM`). The kernel runs every
//! filter and keeps the gravest answer, so the allowlist lets `clone3`
//! through to the filter that refuses it with its own error.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::syscalls;

/// Installs `programs` (from [`programs`]) on every thread of this process.
pub fn apply(programs: &[BpfProgram]) -> Result<(), String> {
    for program in programs {
        seccompiler::apply_filter_all_threads(program).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The compiled filters, in the order they are installed. Compiled once
/// per process (a zygote compiles them for the workers it forks).
pub fn programs() -> Result<Vec<BpfProgram>, String> {
    static COMPILED: OnceLock<Result<Vec<BpfProgram>, String>> = OnceLock::new();
    COMPILED.get_or_init(compile).clone()
}

fn compile() -> Result<Vec<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;

    let mut allowed: BTreeMap<i64, Vec<SeccompRule>> = syscalls::allowed()
        .map(|(_, number)| (number, vec![]))
        .collect();
    allowed.extend(conditional_rules()?);
    let unsupported: BTreeMap<i64, Vec<SeccompRule>> = syscalls::UNSUPPORTED
        .iter()
        .map(|&(_, number)| (number, vec![]))
        .collect();
    allowed.extend(unsupported.clone());
    let fatal = syscalls::fatal()
        .map(|(_, number)| (number, vec![]))
        .collect();

    // The allowlist last: it refuses `seccomp` itself.
    [
        (fatal, SeccompAction::Allow, SeccompAction::KillProcess),
        (
            unsupported,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
        ),
        (
            allowed,
            SeccompAction::Errno(libc::EPERM as u32),
            SeccompAction::Allow,
        ),
    ]
    .into_iter()
    .map(|(rules, mismatch, matched)| {
        let filter =
            SeccompFilter::new(rules, mismatch, matched, arch).map_err(|e| e.to_string())?;
        BpfProgram::try_from(filter).map_err(|e| e.to_string())
    })
    .collect()
}

/// The calls allowed only with some arguments: each rule is one allowed
/// shape (rules are alternatives, conditions within one all hold).
fn conditional_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, String> {
    let pid = std::process::id() as u64;
    let rules = vec![
        (
            libc::SYS_clone,
            vec![rule(vec![long(
                0,
                SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
                libc::CLONE_THREAD as u64,
            )?])?],
        ),
        (
            libc::SYS_prctl,
            one_of(
                0,
                &[
                    libc::PR_SET_NAME as u64,
                    libc::PR_GET_NAME as u64,
                    // mimalloc names its mappings (PR_SET_VMA).
                    0x5356_4d41,
                    libc::PR_GET_DUMPABLE as u64,
                    libc::PR_GET_NO_NEW_PRIVS as u64,
                    // seccompiler sets it before each filter it installs.
                    libc::PR_SET_NO_NEW_PRIVS as u64,
                    libc::PR_GET_SECCOMP as u64,
                ],
            )?,
        ),
        (
            libc::SYS_prlimit64,
            vec![rule(vec![int(0, 0)?, long(2, SeccompCmpOp::Eq, 0)?])?],
        ),
        (
            libc::SYS_setrlimit,
            vec![rule(vec![int(0, libc::RLIMIT_CPU as u64)?])?],
        ),
        (libc::SYS_tgkill, vec![rule(vec![int(0, pid)?])?]),
        (
            libc::SYS_ioctl,
            one_of(
                1,
                &[
                    libc::FIONBIO,
                    libc::FIOCLEX,
                    libc::FIONCLEX,
                    libc::FIONREAD,
                    libc::TCGETS,
                ]
                // The requests' C type differs between libcs.
                .map(|request| {
                    #[allow(clippy::unnecessary_cast)]
                    let request = request as u64;
                    request
                }),
            )?,
        ),
    ];
    Ok(rules)
}

/// One allowed shape: every condition holds.
fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// Argument `arg`, an `int` to the kernel (so its low 32 bits), is `value`.
fn int(arg: u8, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
        .map_err(|e| e.to_string())
}

/// Argument `arg`, a whole register (a pointer or a `long`), compared with `op`.
fn long(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(|e| e.to_string())
}

/// Argument `arg`, an `int`, is one of `values`.
fn one_of(arg: u8, values: &[u64]) -> Result<Vec<SeccompRule>, String> {
    values
        .iter()
        .map(|value| rule(vec![int(arg, *value)?]))
        .collect()
}
