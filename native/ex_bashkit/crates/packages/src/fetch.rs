//! How an install reaches its registry: the session's HTTP client (its
//! `:allow_net`, credentials and, in a worker, the host's egress), every
//! URL checked against `:allow_net` before anything is asked, every
//! download checked against the digest its lockfile or index names, and
//! the host's cache of packages in front.

use std::sync::{Arc, OnceLock};

use ex_bashkit_protocol::options::AllowNet;

use crate::cache::Cache;
use crate::integrity::Integrity;

/// The request header that asks the host to answer from its cache (a
/// worker, which cannot reach the cache itself, sends it; the host takes
/// it off before any request leaves).
pub const INTEGRITY_HEADER: &str = "x-ex-bashkit-integrity";

/// Makes the session's client (`None` without a network).
pub type MakeClient = Arc<dyn Fn() -> Option<Arc<bashkit::HttpClient>> + Send + Sync>;

/// What an install may download through. Its clones share one client,
/// made on the first download: a client's TLS setup costs milliseconds,
/// and most sessions never install anything.
#[derive(Clone)]
pub struct Net {
    client: Arc<OnceLock<Option<Arc<bashkit::HttpClient>>>>,
    make: MakeClient,
    /// The session's `:allow_net`.
    allow_net: AllowNet,
    /// The host's cache, where this process can reach it (in the VM).
    cache: Option<Cache>,
    /// The host keeps the cache (in a worker): downloads name their digest
    /// to it.
    host_caches: bool,
}

/// Refuses a URL `:allow_net` does not allow, before any request.
pub fn allowed(allow_net: &AllowNet, url: &str) -> Result<(), String> {
    let allowed = match allow_net {
        AllowNet::None => {
            return Err(format!(
                "{url} is not allowed: this session has no network (give it :allow_net)"
            ))
        }
        AllowNet::All => true,
        AllowNet::Only(patterns) => patterns.iter().any(|p| url.starts_with(p.as_str())),
    };
    match allowed {
        true => Ok(()),
        false => Err(format!(
            "{url} is not allowed: it matches no pattern of the session's :allow_net"
        )),
    }
}

impl Net {
    pub fn new(
        make: MakeClient,
        allow_net: AllowNet,
        cache: Option<Cache>,
        host_caches: bool,
    ) -> Self {
        Self {
            client: Arc::default(),
            make,
            allow_net,
            cache,
            host_caches,
        }
    }

    fn http(&self) -> Option<&Arc<bashkit::HttpClient>> {
        self.client.get_or_init(|| (self.make)()).as_ref()
    }

    /// The body of `url`, checked against `integrity` where one is named.
    /// A cached copy answers without a request.
    pub async fn get(
        &self,
        url: &str,
        accept: Option<&str>,
        integrity: Option<&Integrity>,
    ) -> Result<Vec<u8>, String> {
        allowed(&self.allow_net, url)?;
        if let (Some(cache), Some(integrity)) = (&self.cache, integrity) {
            if let Some(bytes) = cache.get(integrity) {
                return Ok(bytes);
            }
        }
        let http = self
            .http()
            .ok_or_else(|| format!("{url}: this session has no network"))?;
        let mut headers = Vec::new();
        if let Some(accept) = accept {
            headers.push(("accept".to_string(), accept.to_string()));
        }
        if let (true, Some(integrity)) = (self.host_caches, integrity) {
            headers.push((INTEGRITY_HEADER.to_string(), integrity.to_string()));
        }
        let response = http
            .request_with_headers(bashkit::HttpMethod::Get, url, None, &headers)
            .await
            .map_err(|e| match e {
                bashkit::Error::Network(message) => format!("{url}: {message}"),
                other => format!("{url}: {other}"),
            })?;
        if response.status != 200 {
            return Err(format!(
                "{url}: {} {}",
                response.status,
                reason(response.status)
            ));
        }
        if let Some(integrity) = integrity {
            if !integrity.matches(&response.body) {
                return Err(format!(
                    "{url}: integrity check failed (wanted {integrity}, found {})",
                    integrity.sri_of(&response.body)
                ));
            }
            if let Some(cache) = &self.cache {
                cache.put(integrity, &response.body);
            }
        }
        Ok(response.body)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        500..=599 => "Server Error",
        _ => "",
    }
}
