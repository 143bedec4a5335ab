//! The worker's Landlock ruleset: no file reachable but the session's
//! mounts (as mounted) and the few read-only files a runtime reads; no TCP
//! connection but to the ports of the `:allow_net` allowlist; no signal to
//! a process outside the worker.
//!
//! Landlock binds the calling thread and the threads it starts, so it is
//! applied while the worker has one thread, before its interpreter starts.

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use crate::mounts::{Mount, MountMode};
use crate::network::AllowNet;

/// The newest ABI this code knows; older kernels enforce what they have.
const ABI_WANTED: ABI = ABI::V6;

/// Read by the runtime whatever the session: the local time zone.
const RUNTIME_READS: &[&str] = &["/etc/localtime", "/usr/share/zoneinfo"];

/// Read to resolve names and check certificates, with `:allow_net`.
const NETWORK_READS: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/usr/share/ca-certificates",
    "/usr/lib/ssl",
];

/// How Landlock took: `Ok(true)` fully enforced, `Ok(false)` partly (an
/// older kernel), `Err` not at all.
pub fn apply(mounts: &[Mount], allow_net: &AllowNet) -> Result<bool, String> {
    let status = restrict(mounts, allow_net).map_err(|e| e.to_string())?;
    match status {
        RulesetStatus::FullyEnforced => Ok(true),
        RulesetStatus::PartiallyEnforced => Ok(false),
        RulesetStatus::NotEnforced => Err("this kernel has no Landlock".into()),
    }
}

fn restrict(
    mounts: &[Mount],
    allow_net: &AllowNet,
) -> Result<RulesetStatus, landlock::RulesetError> {
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);
    let ports = tcp_ports(allow_net);

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .scope(Scope::Signal)?
        .scope(Scope::AbstractUnixSocket)?;
    // Every TCP connection is refused unless listed; binding always is.
    ruleset = match ports {
        Some(_) => ruleset.handle_access(AccessNet::from_all(ABI_WANTED))?,
        None => ruleset.handle_access(AccessNet::BindTcp)?,
    };
    let mut created = ruleset.create()?;

    let (writable, readable): (Vec<&Mount>, Vec<&Mount>) = mounts
        .iter()
        .partition(|(_, _, mode)| matches!(mode, MountMode::ReadWrite));
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
    if !matches!(allow_net, AllowNet::None) {
        created = created.add_rules(path_beneath_rules(NETWORK_READS, read))?;
    }
    if let Some(ports) = ports {
        created = created.add_rules(ports.into_iter().map(|port| {
            Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
        }))?;
    }
    Ok(created.restrict_self()?.ruleset)
}

/// The TCP ports a session may connect to: none without `:allow_net`,
/// those its allowlist names (a URL's port, or its scheme's), or `None`
/// (any) for `:all` or a pattern whose port cannot be told.
fn tcp_ports(allow_net: &AllowNet) -> Option<Vec<u16>> {
    match allow_net {
        AllowNet::None => Some(vec![]),
        AllowNet::All => None,
        AllowNet::Only(patterns) => {
            let mut ports = Vec::new();
            for pattern in patterns {
                ports.extend(super::ports::of_pattern(pattern)?);
            }
            ports.sort_unstable();
            ports.dedup();
            Some(ports)
        }
    }
}
