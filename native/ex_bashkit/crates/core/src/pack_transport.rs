//! The HTTP transport of git's clones and fetches.
//!
//! bashkit's `HttpClient` runs the session's policy first (the allowlist,
//! the private-address check, the credential hooks) and then hands the
//! request to this transport, which makes it as bashkit's own would: no
//! redirects followed (git follows them, each one checked again), no
//! decompression, no proxy from the environment, and connected only to the
//! addresses the policy checked. What it adds: the body of a successful
//! response goes to whoever made the request as it arrives
//! (`ex_bashkit_git::streamed`), so that a pack of hundreds of megabytes is
//! written to storage in parts instead of being held whole.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bashkit::{HttpResponse, HttpTransport, HttpTransportError, HttpTransportRequest};

pub use ex_bashkit_git::streamed;

/// How long a connection may take to open (bashkit's own default).
const CONNECT_SECS: u64 = 10;

pub struct PackTransport {
    block_private_ips: bool,
    /// The client of requests that need no pinning: kept, so its
    /// connections are reused.
    client: reqwest::Client,
}

impl PackTransport {
    pub fn new(block_private_ips: bool) -> Result<Self, String> {
        Ok(Self {
            block_private_ips,
            client: builder().build().map_err(|e| e.to_string())?,
        })
    }

    /// The client for a request to `url`: connected to the addresses the
    /// policy resolved and checked (`pinned`), when it blocks private ones.
    fn client_for(
        &self,
        url: &str,
        pinned: &[IpAddr],
    ) -> Result<reqwest::Client, HttpTransportError> {
        if !self.block_private_ips {
            return Ok(self.client.clone());
        }
        let url = reqwest::Url::parse(url)
            .map_err(|e| HttpTransportError::Transport(format!("invalid URL: {e}")))?;
        let host = url.host_str().unwrap_or_default();
        if host.parse::<IpAddr>().is_ok() || host.starts_with('[') {
            // An address the policy judged as it is written.
            return Ok(self.client.clone());
        }
        if pinned.is_empty() {
            // The policy could not resolve it; neither is it resolved here,
            // where a second answer could name a private address.
            return Err(HttpTransportError::Transport(format!(
                "could not resolve host: {host}"
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = pinned.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
        builder()
            .resolve_to_addrs(host, &addrs)
            .build()
            .map_err(|e| HttpTransportError::Transport(e.to_string()))
    }
}

fn builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(CONNECT_SECS))
        .user_agent("git/2.47.3-ex_bashkit")
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_proxy()
}

/// rustls wants a process-wide provider; bashkit installs the same one
/// when its own client is built first.
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn failed(e: &reqwest::Error) -> HttpTransportError {
    match e.is_timeout() {
        true => HttpTransportError::Timeout,
        // Without the URL: the session's own words name it.
        false => HttpTransportError::Transport(format!("request failed: {}", clean(e))),
    }
}

fn clean(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

fn too_large(max: usize) -> HttpTransportError {
    HttpTransportError::TooLarge(format!("exceeded {max} bytes limit"))
}

#[bashkit::async_trait]
impl HttpTransport for PackTransport {
    async fn execute(
        &self,
        request: HttpTransportRequest,
    ) -> Result<HttpResponse, HttpTransportError> {
        let client = self.client_for(&request.url, &request.pinned_addrs)?;
        let method = reqwest::Method::from_bytes(request.method.as_str().as_bytes())
            .map_err(|e| HttpTransportError::Transport(e.to_string()))?;
        let mut outgoing = client
            .request(method, &request.url)
            .timeout(request.timeout);
        for (name, value) in &request.headers {
            outgoing = outgoing.header(name.as_str(), value.as_str());
        }
        if let Some(body) = request.body {
            outgoing = outgoing.body(body);
        }
        let mut response = outgoing
            .send()
            .await
            .map_err(|e| failed(&e.without_url()))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let max = request.max_response_bytes;
        if response
            .content_length()
            .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > max))
        {
            return Err(too_large(max));
        }
        let sender = (status == 200).then(streamed::sender).flatten();
        let (mut body, mut read) = (Vec::new(), 0usize);
        while let Some(part) = response
            .chunk()
            .await
            .map_err(|e| failed(&e.without_url()))?
        {
            read += part.len();
            if read > max {
                return Err(too_large(max));
            }
            match &sender {
                Some(sender) => sender.send(part.to_vec()).await.map_err(|_| {
                    HttpTransportError::Transport("the response's reader stopped".into())
                })?,
                None => body.extend_from_slice(&part),
            }
        }
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bashkit::{HttpClient, HttpMethod, NetworkAllowlist};
    use std::net::Ipv4Addr;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server on 127.0.0.1 that answers every connection with `status`
    /// and `body`, then closes it.
    async fn serve(status: &'static str, body: Vec<u8>) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut request = vec![0; 4096];
                    let _ = stream.read(&mut request).await;
                    let head = format!("HTTP/1.1 {status}\r\nconnection: close\r\n\r\n");
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                });
            }
        });
        port
    }

    /// bashkit's client, its policy allowing the server, with this
    /// transport.
    fn client(port: u16, max: usize) -> HttpClient {
        let allowlist = NetworkAllowlist::new()
            .allow(format!("http://127.0.0.1:{port}/"))
            .block_private_ips(false);
        let mut client = HttpClient::with_config(allowlist, Duration::from_secs(30), max);
        client.set_transport(Arc::new(PackTransport::new(false).unwrap()));
        client
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_successful_body_goes_to_its_reader_in_parts() {
        runtime().block_on(async {
            let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            let port = serve("200 OK", body.clone()).await;
            let client = client(port, 1 << 20);
            let url = format!("http://127.0.0.1:{port}/pack");
            let (answer, mut parts) = streamed::streaming(client.get(&url));
            let read = async {
                let mut read = Vec::new();
                while let Some(part) = parts.recv().await {
                    read.extend(part);
                }
                read
            };
            let (answer, read) = tokio::join!(answer, read);
            let answer = answer.unwrap();
            assert_eq!((answer.status, answer.body.len()), (200, 0));
            assert_eq!(read, body);
        });
    }

    #[test]
    fn without_a_reader_or_success_the_body_comes_whole() {
        runtime().block_on(async {
            let port = serve("404 Not Found", b"no such repository".to_vec()).await;
            let client = client(port, 1 << 20);
            let url = format!("http://127.0.0.1:{port}/x");
            let (answer, mut parts) = streamed::streaming(client.get(&url));
            let (answer, part) = tokio::join!(answer, parts.recv());
            let answer = answer.unwrap();
            assert_eq!(answer.status, 404);
            assert_eq!(answer.body, b"no such repository");
            assert!(part.is_none());
            let answer = client.request(HttpMethod::Get, &url, None).await;
            assert_eq!(answer.unwrap().body, b"no such repository");
        });
    }

    #[test]
    fn a_body_past_its_cap_is_refused_as_it_arrives() {
        runtime().block_on(async {
            let port = serve("200 OK", vec![7; 100_000]).await;
            let client = client(port, 50_000);
            let url = format!("http://127.0.0.1:{port}/pack");
            let (answer, mut parts) = streamed::streaming(client.get(&url));
            let drain = async { while parts.recv().await.is_some() {} };
            let (answer, ()) = tokio::join!(answer, drain);
            let why = answer.unwrap_err().to_string();
            assert!(why.contains("response too large"), "{why}");
        });
    }

    #[test]
    fn a_name_is_connected_only_to_the_addresses_the_policy_checked() {
        runtime().block_on(async {
            let port = serve("200 OK", b"pinned".to_vec()).await;
            let transport = PackTransport::new(true).unwrap();
            // A name no resolver knows reaches the address it was pinned to.
            let url = format!("http://pack.invalid:{port}/x");
            let loopback = [IpAddr::V4(Ipv4Addr::LOCALHOST)];
            let pinned = transport.client_for(&url, &loopback).unwrap();
            let body = pinned.get(&url).send().await.unwrap().bytes().await.unwrap();
            assert_eq!(&body[..], b"pinned");
            // Unpinned, it is not resolved here a second time.
            let refused = transport.client_for(&url, &[]);
            assert!(
                matches!(refused, Err(HttpTransportError::Transport(why)) if why.contains("could not resolve host"))
            );
        });
    }
}
