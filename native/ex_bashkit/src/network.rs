//! The `:allow_net` and `:block_private_ips` options, mapped onto bashkit's
//! default-deny URL allowlist. Without `:allow_net` no allowlist is
//! installed at all, and `curl`/`wget`/`http` fail before any I/O.

#[cfg(feature = "network")]
use bashkit::NetworkAllowlist;
use rustler::NifTaggedEnum;

/// `:none`, `:all` or `{:only, patterns}`.
#[derive(NifTaggedEnum)]
pub enum AllowNet {
    None,
    All,
    Only(Vec<String>),
}

impl AllowNet {
    #[cfg(feature = "network")]
    pub fn allowlist(&self, block_private_ips: bool) -> Option<NetworkAllowlist> {
        let allowlist = match self {
            AllowNet::None => return None,
            AllowNet::All => NetworkAllowlist::allow_all(),
            AllowNet::Only(patterns) => NetworkAllowlist::new().allow_many(patterns.iter()),
        };
        Some(allowlist.block_private_ips(block_private_ips))
    }
}
