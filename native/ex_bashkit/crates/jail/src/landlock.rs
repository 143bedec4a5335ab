//! The worker's Landlock ruleset: no file reachable but the session's
//! mounts (as mounted) and the few read-only files a runtime reads; no TCP
//! connection or binding at all (a worker's requests go through the host,
//! `worker/egress.rs`); no signal to a process outside the worker.
//!
//! Landlock binds the calling thread and the threads it starts, so it is
//! applied while the worker has one thread, before its interpreter starts.

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use ex_bashkit_protocol::options::Mount;

/// The newest ABI this code knows; older kernels enforce what they have.
const ABI_WANTED: ABI = ABI::V6;

/// Read by the runtime whatever the session: the local time zone.
const RUNTIME_READS: &[&str] = &["/etc/localtime", "/usr/share/zoneinfo"];

/// How Landlock took: `Ok(true)` fully enforced, `Ok(false)` partly (an
/// older kernel), `Err` not at all.
pub fn apply(mounts: &[Mount]) -> Result<bool, String> {
    let status = restrict(mounts).map_err(|e| e.to_string())?;
    match status {
        RulesetStatus::FullyEnforced => Ok(true),
        RulesetStatus::PartiallyEnforced => Ok(false),
        RulesetStatus::NotEnforced => Err("this kernel has no Landlock".into()),
    }
}

fn restrict(mounts: &[Mount]) -> Result<RulesetStatus, landlock::RulesetError> {
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);

    // Every TCP connection and binding is refused: no rule allows one.
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .handle_access(AccessNet::from_all(ABI_WANTED))?
        .scope(Scope::Signal)?
        .scope(Scope::AbstractUnixSocket)?
        .create()?;

    let (writable, readable): (Vec<&Mount>, Vec<&Mount>) =
        mounts.iter().partition(|(_, _, mode)| mode.writable());
    created = created
        .add_rules(path_beneath_rules(
            writable.iter().map(|(_, host, _)| host),
            all,
        ))?
        .add_rules(path_beneath_rules(
            readable.iter().map(|(_, host, _)| host),
            read,
        ))?
        .add_rules(path_beneath_rules(RUNTIME_READS, read))?;
    Ok(created.restrict_self()?.ruleset)
}
