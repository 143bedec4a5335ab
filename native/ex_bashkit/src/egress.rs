//! The host's side of a worker's network (`isolation: :process`).
//!
//! A worker has no network of its own: its `curl`, `wget` and `http` hand
//! each request to the host as a frame (`worker/egress.rs`), and the
//! worker's owner (`ExBashkit.Worker.Owner`) makes it here, with the
//! session's own policy, which the worker never holds in full: the
//! allowlist is checked again (each redirect hop is a request of its own),
//! names are resolved here and private addresses refused at connect time
//! (bashkit's client pins the check to the connection), the credential
//! headers of matching `:allow_net` entries are added here (their values
//! never reach the worker), and the response is cut at its size cap while
//! it streams in. A git transfer's body is passed on as it arrives, a
//! megabyte at a time, each part sent once the owner took an earlier one
//! (`egress_took`), so neither the VM nor the worker holds a pack whole. Requests run on the interpreter threads, so a slow
//! server holds no scheduler; the answer comes back by message.

use rustler::{Atom, Binary, Encoder, Env, LocalPid, Resource, ResourceArc, Term};

use ex_bashkit_core::network::{AllowNet, CredentialRules, Credentials};

use crate::convert::Protocol;
#[cfg(all(feature = "network", feature = "git"))]
use ex_bashkit_core::sync::lock;

mod atoms {
    rustler::atoms! { ex_bashkit_egress, ex_bashkit_egress_part }
}

/// The largest response the host reads for a worker: bashkit's own
/// default for sessions, which the in-VM path applies too.
#[cfg(feature = "network")]
const MAX_RESPONSE_BYTES: usize = 10 * 1024 * 1024;

/// The size of the parts a pack is passed on to a worker in.
#[cfg(all(feature = "network", feature = "git"))]
const PART_BYTES: usize = 1 << 20;

/// How many parts may be on their way to the worker at once.
#[cfg(all(feature = "network", feature = "git"))]
const PARTS_IN_FLIGHT: usize = 4;

/// How long the owner may go without taking a part before the request
/// is given up (it died, or its worker stopped reading).
#[cfg(all(feature = "network", feature = "git"))]
const OWNER_SILENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// bashkit's default request timeout, which a worker's request carries
/// unless the script set `--max-time`.
#[cfg(feature = "network")]
const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// One session's way out: its allowlist and credentials, in the host.
pub struct EgressResource {
    #[cfg(feature = "network")]
    client: bashkit::HttpClient,
    /// The same policy for git's clones and fetches, whose responses may
    /// reach the session's `:max_git_transfer_bytes`.
    #[cfg(feature = "network")]
    transfers: bashkit::HttpClient,
    credentials: Credentials,
    /// The session's `:allow_net`, checked before the package cache
    /// answers (no request is made then).
    #[cfg(feature = "network")]
    allow_net: AllowNet,
    /// `:package_cache`: packages the worker's `npm` names by digest.
    #[cfg(feature = "network")]
    cache: Option<ex_bashkit_core::packages::Cache>,
    /// For each pack being passed on, how many more parts the owner may
    /// be sent before it says it took one (`egress_took`).
    #[cfg(all(feature = "network", feature = "git"))]
    credits:
        std::sync::Mutex<std::collections::HashMap<u64, std::sync::Arc<tokio::sync::Semaphore>>>,
}

#[rustler::resource_impl]
impl Resource for EgressResource {}

/// The egress of a session with `allow_net` (`nil` without it, or in a
/// build without the network part). Encoded here: the client inside is
/// not `RefUnwindSafe`, which rustler's return path wants.
#[rustler::nif]
fn egress_new(
    env: Env<'_>,
    allow_net: Protocol<AllowNet>,
    block_private_ips: bool,
    credentials: CredentialRules,
    max_git_transfer_bytes: u64,
    package_cache: Option<String>,
) -> Term<'_> {
    egress(
        allow_net.0,
        block_private_ips,
        credentials,
        max_git_transfer_bytes,
        package_cache,
    )
    .encode(env)
}

fn egress(
    allow_net: AllowNet,
    block_private_ips: bool,
    credentials: CredentialRules,
    max_git_transfer_bytes: u64,
    package_cache: Option<String>,
) -> Option<ResourceArc<EgressResource>> {
    let credentials = Credentials::new(&credentials, block_private_ips);
    #[cfg(feature = "network")]
    {
        let allowlist = ex_bashkit_core::network::allowlist(&allow_net, block_private_ips)?;
        let client = |max_bytes: usize| {
            let mut client = bashkit::HttpClient::with_config(
                allowlist.clone(),
                std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECS),
                max_bytes,
            );
            client.set_before_http(vec![credentials.hook()]);
            client
        };
        let transfers = usize::try_from(max_git_transfer_bytes).unwrap_or(usize::MAX);
        let transfers = streaming(client(transfers.max(MAX_RESPONSE_BYTES)), block_private_ips);
        Some(ResourceArc::new(EgressResource {
            client: client(MAX_RESPONSE_BYTES),
            transfers,
            credentials,
            allow_net,
            cache: package_cache.map(ex_bashkit_core::packages::Cache::new),
            #[cfg(feature = "git")]
            credits: Default::default(),
        }))
    }
    #[cfg(not(feature = "network"))]
    {
        let _ = (
            allow_net,
            credentials,
            max_git_transfer_bytes,
            package_cache,
        );
        None
    }
}

/// git's transfers through the transport that passes a pack on to the
/// worker as it arrives (`egress_request`).
#[cfg(all(feature = "network", feature = "git"))]
fn streaming(mut client: bashkit::HttpClient, block_private_ips: bool) -> bashkit::HttpClient {
    if let Ok(transport) = ex_bashkit_core::pack_transport::PackTransport::new(block_private_ips) {
        client.set_transport(std::sync::Arc::new(transport));
    }
    client
}

/// Without git, no transfers to stream.
#[cfg(all(feature = "network", not(feature = "git")))]
fn streaming(client: bashkit::HttpClient, _block_private_ips: bool) -> bashkit::HttpClient {
    client
}

/// A call's fresh credential values (header functions): they replace the
/// session's from now on, as in the VM.
#[rustler::nif]
fn egress_credentials(egress: ResourceArc<EgressResource>, rules: CredentialRules) -> Atom {
    egress.credentials.replace(&rules);
    crate::atoms::ok()
}

/// The owner passed part of request `id`'s pack on to the worker, and one
/// more may come; or (`wanted` false) the worker stopped waiting for it,
/// and the request ends.
#[rustler::nif]
fn egress_took(egress: ResourceArc<EgressResource>, id: u64, wanted: bool) -> Atom {
    #[cfg(all(feature = "network", feature = "git"))]
    if let Some(credit) = lock(&egress.credits).get(&id) {
        match wanted {
            true => credit.add_permits(1),
            false => credit.close(),
        }
    }
    let _ = (egress, id, wanted);
    crate::atoms::ok()
}

/// A worker's request: `{method, url, headers, body | nil, timeout_ms,
/// max_bytes}`.
type Request<'a> = (
    String,
    String,
    Vec<(String, String)>,
    Option<Binary<'a>>,
    u64,
    u64,
);

/// Makes `request` and sends `{:ex_bashkit_egress, id, {:ok, {status,
/// headers, body}} | {:error, message}}` to `to` when it is answered.
#[rustler::nif]
fn egress_request(
    egress: ResourceArc<EgressResource>,
    request: Request<'_>,
    to: LocalPid,
    id: u64,
) -> Result<Atom, String> {
    let (method, url, headers, body, timeout_ms, max_bytes) = request;
    let body = body.map(|body| body.as_slice().to_vec());
    let pool = ex_bashkit_core::runtime::interpreters()?;
    pool.spawn(pool.assign(), async move {
        let request = Outgoing {
            method: &method,
            url: &url,
            headers: &headers,
            body,
            timeout_ms,
            max_bytes,
        };
        let outcome = match package(&headers) {
            Some(integrity) => send_package(&egress, request, integrity).await,
            None => send_streaming(&egress, request, &to, id).await,
        };
        let _ = crate::envs::send(&to, |env| {
            let outcome = match outcome {
                Ok((status, headers, body)) => {
                    Ok((status, headers, crate::terms::bytes(env, &body)))
                }
                Err(message) => Err(message),
            };
            (atoms::ex_bashkit_egress(), id, outcome).encode(env)
        });
    });
    Ok(crate::atoms::ok())
}

type Answer = Result<(u16, Vec<(String, String)>, Vec<u8>), String>;

/// The request, made with the session's policy; the body of a successful
/// git transfer is sent on as it arrives, each part as
/// `{:ex_bashkit_egress_part, id, part}` before the answer (whose body is
/// then empty), so the host never holds a pack whole.
async fn send_streaming(
    egress: &EgressResource,
    request: Outgoing<'_>,
    to: &LocalPid,
    id: u64,
) -> Answer {
    #[cfg(all(feature = "network", feature = "git"))]
    if request.max_bytes > MAX_RESPONSE_BYTES as u64 {
        use ex_bashkit_core::pack_transport::streamed;
        let (answer, mut parts) = streamed::streaming(send(egress, request));
        let credit = std::sync::Arc::new(tokio::sync::Semaphore::new(PARTS_IN_FLIGHT));
        lock(&egress.credits).insert(id, credit.clone());
        // One part sent once the owner took an earlier one, so a worker
        // slower than the network holds the network back, not the VM.
        let pass_on = |part: Vec<u8>| {
            let credit = credit.clone();
            async move {
                let waited = tokio::time::timeout(OWNER_SILENCE, credit.acquire_owned()).await;
                let Ok(Ok(permit)) = waited else {
                    return false;
                };
                permit.forget();
                crate::envs::send(to, |env| {
                    let part = crate::terms::bytes(env, &part);
                    (atoms::ex_bashkit_egress_part(), id, part).encode(env)
                })
                .is_ok()
            }
        };
        let forward = async {
            // Parts of a megabyte: one message each, not one per read.
            let mut held = Vec::new();
            while let Some(part) = parts.recv().await {
                held.extend_from_slice(&part);
                if held.len() >= PART_BYTES && !pass_on(std::mem::take(&mut held)).await {
                    // The owner is gone or stuck: the request ends here.
                    return;
                }
            }
            if !held.is_empty() {
                pass_on(held).await;
            }
        };
        let outcome = tokio::join!(answer, forward).0;
        lock(&egress.credits).remove(&id);
        return outcome;
    }
    let _ = (to, id);
    send(egress, request).await
}

/// The digest a worker's `npm` names for a download, which the host's
/// package cache may answer (the header itself never leaves the host).
fn package(headers: &[(String, String)]) -> Option<String> {
    #[cfg(feature = "network")]
    return headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(ex_bashkit_core::packages::INTEGRITY_HEADER))
        .map(|(_, value)| value.clone());
    #[cfg(not(feature = "network"))]
    return {
        let _ = headers;
        None
    };
}

/// A package download: from the host's cache when it holds the digest
/// (after the same `:allow_net` check a request gets), else made whole
/// and kept in the cache when it hashes as named.
async fn send_package(egress: &EgressResource, request: Outgoing<'_>, integrity: String) -> Answer {
    #[cfg(feature = "network")]
    {
        use ex_bashkit_core::packages::{fetch, integrity::Integrity, INTEGRITY_HEADER};
        let integrity = Integrity::parse_sri(&integrity);
        if let (Some(cache), Some(integrity)) = (&egress.cache, &integrity) {
            fetch::allowed(&egress.allow_net, request.url)
                .map_err(|e| format!("access denied: {e}"))?;
            if let Some(bytes) = cache.get(integrity) {
                return Ok((200, Vec::new(), bytes));
            }
        }
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .filter(|(name, _)| !name.eq_ignore_ascii_case(INTEGRITY_HEADER))
            .cloned()
            .collect();
        let answer = send(
            egress,
            Outgoing {
                headers: &headers,
                ..request
            },
        )
        .await?;
        if let (Some(cache), Some(integrity), 200) = (&egress.cache, &integrity, answer.0) {
            cache.put(integrity, &answer.2);
        }
        Ok(answer)
    }
    #[cfg(not(feature = "network"))]
    {
        let _ = integrity;
        send(egress, request).await
    }
}

/// A worker's request as the host makes it.
#[cfg_attr(not(feature = "network"), allow(dead_code))]
struct Outgoing<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(String, String)],
    body: Option<Vec<u8>>,
    timeout_ms: u64,
    /// What the worker's client takes: past curl's cap, git's.
    max_bytes: u64,
}

/// The request, made with the session's policy; `Err` with the message
/// curl reads its exit code from.
async fn send(egress: &EgressResource, request: Outgoing<'_>) -> Answer {
    // Without the network part no egress exists to be asked.
    #[cfg(not(feature = "network"))]
    {
        let _ = (egress, request);
        Err("access denied: this build has no network".into())
    }
    #[cfg(feature = "network")]
    {
        let Outgoing {
            method,
            url,
            headers,
            body,
            timeout_ms,
            max_bytes,
        } = request;
        let Some(method) = ex_bashkit_core::network::http_method(method) else {
            return Err(format!("access denied: method {method:?} is not supported"));
        };
        // bashkit counts request timeouts in whole seconds (1 to 600), and
        // builds a client of its own for a request with one: the default is
        // left to the shared client, whose connections and setup are reused.
        let seconds = timeout_ms.div_ceil(1000).max(1);
        let timeout = (seconds != DEFAULT_TIMEOUT_SECS).then_some(seconds);
        // The worker names its cap; the host holds it to the session's.
        let client = match max_bytes > MAX_RESPONSE_BYTES as u64 {
            true => &egress.transfers,
            false => &egress.client,
        };
        client
            .request_with_timeouts(method, url, body.as_deref(), headers, timeout, None)
            .await
            .map(|response| (response.status, response.headers, response.body))
            .map_err(|error| match error {
                // The message alone: the worker's transport gives it to
                // curl, which picks its exit code from its words.
                bashkit::Error::Network(message) => message,
                other => ex_bashkit_core::error::message(&other),
            })
    }
}
