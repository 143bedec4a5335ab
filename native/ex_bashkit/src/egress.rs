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
//! it streams in. Requests run on the interpreter threads, so a slow
//! server holds no scheduler; the answer comes back by message.

use rustler::{Atom, Binary, Encoder, Env, LocalPid, Resource, ResourceArc, Term};

use ex_bashkit_core::network::{AllowNet, CredentialRules, Credentials};

use crate::convert::Protocol;

mod atoms {
    rustler::atoms! { ex_bashkit_egress }
}

/// The largest response the host reads for a worker: bashkit's own
/// default for sessions, which the in-VM path applies too.
#[cfg(feature = "network")]
const MAX_RESPONSE_BYTES: usize = 10 * 1024 * 1024;

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
) -> Term<'_> {
    egress(
        allow_net.0,
        block_private_ips,
        credentials,
        max_git_transfer_bytes,
    )
    .encode(env)
}

fn egress(
    allow_net: AllowNet,
    block_private_ips: bool,
    credentials: CredentialRules,
    max_git_transfer_bytes: u64,
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
        Some(ResourceArc::new(EgressResource {
            client: client(MAX_RESPONSE_BYTES),
            transfers: client(transfers.max(MAX_RESPONSE_BYTES)),
            credentials,
        }))
    }
    #[cfg(not(feature = "network"))]
    {
        let _ = (allow_net, credentials, max_git_transfer_bytes);
        None
    }
}

/// A call's fresh credential values (header functions): they replace the
/// session's from now on, as in the VM.
#[rustler::nif]
fn egress_credentials(egress: ResourceArc<EgressResource>, rules: CredentialRules) -> Atom {
    egress.credentials.replace(&rules);
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
        let outcome = send(&egress, request).await;
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
