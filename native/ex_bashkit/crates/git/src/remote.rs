//! git's smart HTTP protocol (version 0/1, stateless), spoken through the
//! session's HTTP client: the same allowlist check on every request and
//! redirect, the same credential injection, and in a worker the same trip
//! to the host as `curl`. Nothing here opens a socket.

use std::sync::Arc;

use bashkit::{HttpClient, HttpMethod};

use super::error::Error;
use super::odb::{IncomingPack, Oid};

const AGENT: &str = "agent=git/2.47.3-ex_bashkit";

/// What a server says it has.
pub struct Advert {
    /// Ref name → object, in the server's order (peeled tags left out).
    pub refs: Vec<(String, Oid)>,
    /// Annotated tag's name → the object it peels to (`name^{}` lines).
    pub peeled: Vec<(String, Oid)>,
    pub capabilities: Vec<String>,
    /// Where the service's requests go (after redirects).
    pub base: String,
}

impl Advert {
    /// The branch the server's `HEAD` names (`symref=HEAD:refs/heads/main`).
    pub fn head_branch(&self) -> Option<&str> {
        self.capabilities
            .iter()
            .find_map(|c| c.strip_prefix("symref=HEAD:"))
    }

    pub fn get(&self, name: &str) -> Option<&Oid> {
        self.refs.iter().find(|(n, _)| n == name).map(|(_, o)| o)
    }

    /// What ref `name` finally points at: an annotated tag's object, else
    /// the ref's own.
    pub fn peeled(&self, name: &str) -> Option<&Oid> {
        self.peeled
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o)
            .or_else(|| self.get(name))
    }

    fn offers(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

/// What a fetch asks beyond its wants and haves.
#[derive(Default)]
pub struct Want<'a> {
    /// `--depth N` (`i32::MAX` for `--unshallow`): history cut N commits
    /// below each wanted tip.
    pub depth: Option<u32>,
    /// The commits this repository's history is already cut at.
    pub shallow: &'a [Oid],
    /// Annotated tags that point into what is sent come along with it.
    pub include_tag: bool,
}

/// Where the server says history is now cut (`shallow`) or no longer cut
/// (`unshallow`), told before the pack.
#[derive(Default)]
pub struct Cut {
    pub shallow: Vec<Oid>,
    pub unshallow: Vec<Oid>,
}

/// What comes before the pack: pkt-lines up to the one that starts with
/// `PACK`. Read as the response's parts arrive, which may split a line.
#[derive(Default)]
struct Preamble {
    held: Vec<u8>,
    cut: Cut,
    done: bool,
}

impl Preamble {
    /// Takes `part`; what follows the preamble goes to the pack.
    async fn take(&mut self, part: &[u8], pack: &mut IncomingPack<'_>) -> Result<(), Error> {
        if self.done {
            return pack.write(part).await;
        }
        self.held.extend_from_slice(part);
        let mut at = 0;
        while self.held.len() >= at + 4 {
            if &self.held[at..at + 4] == b"PACK" {
                self.done = true;
                let rest = self.held.split_off(at);
                self.held = Vec::new();
                return pack.write(&rest).await;
            }
            let len = pkt_len(&self.held[at..])?;
            if len < 4 {
                return Err(Error::Remote("protocol error: bad line length".into()));
            }
            let Some(line) = self.held.get(at + 4..at + len) else {
                break;
            };
            if let Some(message) = line.strip_prefix(b"ERR ") {
                return Err(Error::Remote(format!(
                    "remote error: {}",
                    String::from_utf8_lossy(message).trim_end()
                )));
            }
            let text = String::from_utf8_lossy(line);
            if let Some(oid) = text.trim_end().strip_prefix("shallow ") {
                self.cut.shallow.push(oid.to_string());
            } else if let Some(oid) = text.trim_end().strip_prefix("unshallow ") {
                self.cut.unshallow.push(oid.to_string());
            }
            at += len;
        }
        self.held.drain(..at);
        // Past the longest pkt-line without a pack, the server is not
        // sending one.
        if self.held.len() > 65_520 {
            return Err(Error::Remote(
                "protocol error: the server sent no pack".into(),
            ));
        }
        Ok(())
    }

    fn finish(self) -> Result<Cut, Error> {
        match self.done {
            true => Ok(self.cut),
            false => Err(Error::Remote(
                "protocol error: the server sent no pack".into(),
            )),
        }
    }
}

pub fn pkt_line(data: &str) -> Vec<u8> {
    let mut out = format!("{:04x}", data.len() + 4).into_bytes();
    out.extend_from_slice(data.as_bytes());
    out
}

pub const FLUSH: &[u8] = b"0000";

/// Reads pkt-lines from `data` until a flush or the data's end: the lines
/// and where reading stopped.
fn read_pkt_lines(data: &[u8]) -> Result<(Vec<Vec<u8>>, usize), Error> {
    let mut lines = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let len = std::str::from_utf8(&data[at..at + 4])
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| Error::Remote("protocol error: bad line length".into()))?;
        if len == 0 {
            return Ok((lines, at + 4));
        }
        if len < 4 || at + len > data.len() {
            return Err(Error::Remote("protocol error: bad line length".into()));
        }
        lines.push(data[at + 4..at + len].to_vec());
        at += len;
    }
    Ok((lines, at))
}

pub struct Remote {
    client: Arc<HttpClient>,
    /// The URL as the user gave it, for messages.
    pub url: String,
}

impl Remote {
    pub fn new(client: Arc<HttpClient>, url: &str) -> Self {
        Self {
            client,
            url: url.trim_end_matches('/').to_string(),
        }
    }

    async fn request(
        &self,
        method: HttpMethod,
        url: &str,
        body: Option<&[u8]>,
        headers: &[(String, String)],
    ) -> Result<(bashkit::HttpResponse, String), Error> {
        let mut url = url.to_string();
        // Redirects are followed here, each one a request of its own, so
        // the allowlist judges every place the server sends us.
        for _ in 0..5 {
            let response = self
                .client
                .request_with_headers(method, &url, body, headers)
                .await
                .map_err(|e| match e.to_string() {
                    too_large if too_large.contains("response too large") => {
                        Error::Remote(format!(
                            "unable to access '{}/': the server sent more than the session's \
                         :max_git_transfer_bytes allows ({} bytes; raise it in :limits)",
                            self.url,
                            self.client.max_response_bytes()
                        ))
                    }
                    other => Error::Remote(format!("unable to access '{}/': {other}", self.url)),
                })?;
            match response.status {
                301 | 302 | 303 | 307 | 308 => {
                    let location = response
                        .headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case("location"))
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| {
                            Error::Remote(format!(
                                "unable to access '{}/': redirect without a location",
                                self.url
                            ))
                        })?;
                    url = join_url(&url, &location);
                }
                _ => return Ok((response, url)),
            }
        }
        Err(Error::Remote(format!(
            "unable to access '{}/': too many redirects",
            self.url
        )))
    }

    /// A service's request (`git-upload-pack`, `git-receive-pack`).
    async fn post(
        &self,
        advert: &Advert,
        service: &str,
        body: &[u8],
    ) -> Result<bashkit::HttpResponse, Error> {
        let url = format!("{}/{service}", advert.base);
        let headers = [
            (
                "Content-Type".to_string(),
                format!("application/x-{service}-request"),
            ),
            (
                "Accept".to_string(),
                format!("application/x-{service}-result"),
            ),
        ];
        let (response, _) = self
            .request(HttpMethod::Post, &url, Some(body), &headers)
            .await?;
        if response.status != 200 {
            return Err(Error::Remote(format!(
                "unable to access '{}/': The requested URL returned error: {}",
                self.url, response.status
            )));
        }
        Ok(response)
    }

    /// The refs a service (`git-upload-pack`, `git-receive-pack`) offers.
    pub async fn discover(&self, service: &str) -> Result<Advert, Error> {
        let suffix = format!("/info/refs?service={service}");
        let url = format!("{}{suffix}", self.url);
        let (response, landed) = self.request(HttpMethod::Get, &url, None, &[]).await?;
        match response.status {
            200 => {}
            401 | 403 => {
                return Err(Error::Remote(format!(
                    "Authentication failed for '{}/'",
                    self.url
                )))
            }
            404 => {
                return Err(Error::Remote(format!(
                    "repository '{}/' not found",
                    self.url
                )))
            }
            status => {
                return Err(Error::Remote(format!(
                    "unable to access '{}/': The requested URL returned error: {status}",
                    self.url
                )))
            }
        }
        let smart = response.headers.iter().any(|(k, v)| {
            k.eq_ignore_ascii_case("content-type")
                && v == &format!("application/x-{service}-advertisement")
        });
        if !smart {
            return Err(Error::Remote(format!(
                "'{}/' does not speak git's smart HTTP protocol (the sandbox's git has no dumb HTTP)",
                self.url
            )));
        }
        let body = &response.body;
        let (header, used) = read_pkt_lines(body)?;
        if header.first().map(|l| l.starts_with(b"# service=")) != Some(true) {
            return Err(Error::Remote(
                "protocol error: no service announcement".into(),
            ));
        }
        let (lines, _) = read_pkt_lines(&body[used..])?;
        let mut refs = Vec::new();
        let mut peeled = Vec::new();
        let mut capabilities = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let line = String::from_utf8_lossy(line);
            let line = line.trim_end_matches('\n');
            let (refline, caps) = match line.split_once('\0') {
                Some((r, c)) => (r, Some(c)),
                None => (line, None),
            };
            if i == 0 {
                if let Some(caps) = caps {
                    capabilities = caps.split(' ').map(str::to_string).collect();
                }
            }
            let Some((oid, name)) = refline.split_once(' ') else {
                continue;
            };
            if name == "capabilities^{}" {
                continue;
            }
            if let Some(tag) = name.strip_suffix("^{}") {
                peeled.push((tag.to_string(), oid.to_string()));
                continue;
            }
            refs.push((name.to_string(), oid.to_string()));
        }
        // After a redirect, the service lives where the refs came from.
        let base = landed
            .strip_suffix(&suffix)
            .unwrap_or(&self.url)
            .to_string();
        Ok(Advert {
            refs,
            peeled,
            capabilities,
            base,
        })
    }

    /// The pack of what `wants` reaches beyond `haves`, cut where
    /// `want` asks, written `into` storage as it arrives.
    pub async fn fetch_pack(
        &self,
        advert: &Advert,
        wants: &[Oid],
        haves: &[Oid],
        want: &Want<'_>,
        into: &mut IncomingPack<'_>,
    ) -> Result<Cut, Error> {
        let cut = want.depth.is_some() || !want.shallow.is_empty();
        if cut && !advert.offers("shallow") {
            return Err(Error::Remote(
                "Server does not support shallow clients".into(),
            ));
        }
        let mut capabilities = String::new();
        for (capability, asked) in [
            ("ofs-delta", true),
            ("shallow", cut),
            ("include-tag", want.include_tag),
        ] {
            if asked && advert.offers(capability) {
                capabilities.push(' ');
                capabilities.push_str(capability);
            }
        }
        let mut body = Vec::new();
        for (i, oid) in wants.iter().enumerate() {
            let line = if i == 0 {
                format!("want {oid}{capabilities} {AGENT}\n")
            } else {
                format!("want {oid}\n")
            };
            body.extend(pkt_line(&line));
        }
        for oid in want.shallow {
            body.extend(pkt_line(&format!("shallow {oid}\n")));
        }
        if let Some(depth) = want.depth {
            body.extend(pkt_line(&format!("deepen {depth}\n")));
        }
        body.extend_from_slice(FLUSH);
        for have in haves {
            body.extend(pkt_line(&format!("have {have}\n")));
        }
        body.extend(pkt_line("done\n"));
        // The response is taken as it arrives: where history is cut
        // (when asked), ACK/NAK, then the pack, written to storage in parts.
        let mut preamble = Preamble::default();
        let storage = &mut *into;
        let (request, mut parts) =
            super::streamed::streaming(self.post(advert, "git-upload-pack", &body));
        let receive = async move {
            while let Some(part) = parts.recv().await {
                // On a failure the receiver goes, which ends the request.
                preamble.take(&part, storage).await?;
            }
            Ok::<_, Error>(preamble)
        };
        let (response, received) = tokio::join!(request, receive);
        // Why the pack could not be stored comes before how the request
        // ended (which is then that it was cut short).
        let mut preamble = received?;
        let response = response?;
        // A transport that does not stream answers with the body whole.
        preamble.take(&response.body, into).await?;
        preamble.finish()
    }

    /// Sends ref updates (`old new name`) and the pack they need; answers
    /// each ref's outcome as the server reports it.
    pub async fn push(
        &self,
        advert: &Advert,
        updates: &[(Oid, Oid, String)],
        pack: Option<Vec<u8>>,
    ) -> Result<Vec<(String, Result<(), String>)>, Error> {
        let mut body = Vec::new();
        for (i, (old, new, name)) in updates.iter().enumerate() {
            let line = if i == 0 {
                format!("{old} {new} {name}\0report-status {AGENT}\n")
            } else {
                format!("{old} {new} {name}\n")
            };
            body.extend(pkt_line(&line));
        }
        body.extend_from_slice(FLUSH);
        if let Some(pack) = pack {
            body.extend(pack);
        }
        let response = self.post(advert, "git-receive-pack", &body).await?;
        let (lines, _) = read_pkt_lines(&response.body)?;
        let mut outcomes = Vec::new();
        for line in lines {
            let line = String::from_utf8_lossy(&line).trim_end().to_string();
            if let Some(status) = line.strip_prefix("unpack ") {
                if status != "ok" {
                    return Err(Error::Remote(format!("remote unpack failed: {status}")));
                }
            } else if let Some(name) = line.strip_prefix("ok ") {
                outcomes.push((name.to_string(), Ok(())));
            } else if let Some(rest) = line.strip_prefix("ng ") {
                let (name, why) = rest.split_once(' ').unwrap_or((rest, ""));
                outcomes.push((name.to_string(), Err(why.to_string())));
            }
        }
        Ok(outcomes)
    }
}

fn pkt_len(data: &[u8]) -> Result<usize, Error> {
    let head = data
        .get(..4)
        .ok_or_else(|| Error::Remote("protocol error: truncated".into()))?;
    let len = std::str::from_utf8(head)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| Error::Remote("protocol error: bad line length".into()))?;
    Ok(if len == 0 { 4 } else { len })
}

/// `location` relative to `url`, as a browser resolves it.
fn join_url(url: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let host_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    if location.starts_with('/') {
        return format!("{}{location}", &url[..host_end]);
    }
    let dir_end = url
        .rfind('/')
        .filter(|&i| i >= host_end)
        .unwrap_or(host_end);
    format!("{}/{location}", &url[..dir_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkt_lines_round_trip() {
        let mut data = pkt_line("want abc\n");
        data.extend(pkt_line("done\n"));
        data.extend_from_slice(FLUSH);
        let (lines, used) = read_pkt_lines(&data).unwrap();
        assert_eq!(lines, vec![b"want abc\n".to_vec(), b"done\n".to_vec()]);
        assert_eq!(used, data.len());
        assert!(read_pkt_lines(b"zzzz").is_err());
    }

    #[test]
    fn redirects_resolve_against_the_url() {
        assert_eq!(join_url("http://h:1/a/b", "/c"), "http://h:1/c");
        assert_eq!(join_url("http://h:1/a/b", "c"), "http://h:1/a/c");
        assert_eq!(join_url("http://h/a", "https://o/x"), "https://o/x");
    }
}
