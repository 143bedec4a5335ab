//! The `:allow_net` and `:block_private_ips` options, mapped onto bashkit's
//! default-deny URL allowlist. Without `:allow_net` no allowlist is
//! installed at all, and `curl`/`wget`/`http` fail before any I/O.

#[cfg(feature = "network")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "network")]
use bashkit::NetworkAllowlist;

pub use ex_bashkit_protocol::options::{AllowNet, CredentialRules, Headers};

/// Headers injected into the requests a pattern matches (`{pattern,
/// headers: ...}` entries of `:allow_net`), through a `before_http` hook:
/// after the allowlist check, replacing any header of the same name the
/// script set. bashkit's own `credential()` matches with private addresses
/// blocked whatever the session says; this matches as the session does.
/// A call may bring fresh values (header functions, resolved in Elixir
/// before each call): they replace the session's from that call on.
#[derive(Clone, Default)]
pub struct Credentials {
    #[cfg(feature = "network")]
    rules: Arc<Mutex<Vec<(NetworkAllowlist, Headers)>>>,
    #[cfg(feature = "network")]
    block_private_ips: bool,
}

impl Credentials {
    #[cfg_attr(not(feature = "network"), allow(unused_variables))]
    pub fn new(rules: &CredentialRules, block_private_ips: bool) -> Self {
        let credentials = Self {
            #[cfg(feature = "network")]
            rules: Arc::default(),
            #[cfg(feature = "network")]
            block_private_ips,
        };
        credentials.replace(rules);
        credentials
    }

    /// The values from now on.
    #[cfg_attr(not(feature = "network"), allow(unused_variables))]
    pub fn replace(&self, rules: &CredentialRules) {
        #[cfg(feature = "network")]
        {
            let compiled = rules
                .iter()
                .map(|(pattern, headers)| {
                    let matcher = NetworkAllowlist::new()
                        .allow(pattern)
                        .block_private_ips(self.block_private_ips);
                    (matcher, headers.clone())
                })
                .collect();
            *crate::sync::lock(&self.rules) = compiled;
        }
    }

    #[cfg(feature = "network")]
    pub fn hook(&self) -> bashkit::hooks::Interceptor<bashkit::hooks::HttpRequestEvent> {
        let rules = self.rules.clone();
        Box::new(move |mut request| {
            for (matcher, headers) in crate::sync::lock(&rules).iter() {
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
}

/// The allowlist `:allow_net` makes; `None` for no network at all.
#[cfg(feature = "network")]
pub fn allowlist(allow_net: &AllowNet, block_private_ips: bool) -> Option<NetworkAllowlist> {
    {
        let allowlist = match allow_net {
            AllowNet::None => return None,
            AllowNet::All => NetworkAllowlist::allow_all(),
            AllowNet::Only(patterns) => NetworkAllowlist::new().allow_many(patterns.iter()),
        };
        Some(allowlist.block_private_ips(block_private_ips))
    }
}

/// The HTTP method named `name` (`"GET"`, any case), if bashkit's client
/// has it.
#[cfg(feature = "network")]
pub fn http_method(name: &str) -> Option<bashkit::HttpMethod> {
    use bashkit::HttpMethod;
    Some(match name.to_ascii_uppercase().as_str() {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        "HEAD" => HttpMethod::Head,
        "PATCH" => HttpMethod::Patch,
        _ => return None,
    })
}
