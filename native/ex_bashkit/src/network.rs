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

/// Headers injected into the requests a pattern matches (`{pattern,
/// headers: ...}` entries of `:allow_net`), as a `before_http` hook: after
/// the allowlist check, replacing any header of the same name the script
/// set. bashkit's own `credential()` matches with private addresses
/// blocked whatever the session says; this matches as the session does.
#[cfg(feature = "network")]
pub fn credentials_hook(
    credentials: &[(String, Vec<(String, String)>)],
    block_private_ips: bool,
) -> bashkit::hooks::Interceptor<bashkit::hooks::HttpRequestEvent> {
    let rules: Vec<(NetworkAllowlist, Vec<(String, String)>)> = credentials
        .iter()
        .map(|(pattern, headers)| {
            let matcher = NetworkAllowlist::new()
                .allow(pattern)
                .block_private_ips(block_private_ips);
            (matcher, headers.clone())
        })
        .collect();
    Box::new(move |mut request| {
        for (matcher, headers) in &rules {
            if matcher.is_allowed(&request.url) {
                request.headers.retain(|(name, _)| {
                    !headers
                        .iter()
                        .any(|(injected, _)| injected.eq_ignore_ascii_case(name))
                });
                request.headers.extend(headers.iter().cloned());
            }
        }
        bashkit::hooks::HookAction::Continue(request)
    })
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
