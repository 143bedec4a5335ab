//! git's smart HTTP protocol, spoken through the session's HTTP client:
//! version 2 where the server offers it (as real git asks for it: only
//! `ls-refs` and `fetch`), else version 0/1 (stateless); pushes are always
//! version 0, as in git. Through the session's client means the same allowlist check on every request and
//! redirect, the same credential injection, and in a worker the same trip
//! to the host as `curl`. Nothing here opens a socket.

use std::sync::Arc;

use bashkit::{HttpClient, HttpMethod};

use super::error::Error;
pub use super::fetch_response::Cut;
use super::fetch_response::FetchResponse;
use super::odb::{IncomingPack, Oid};
use super::pkt_line::{pkt_line, read_pkt_lines, text, DELIM, FLUSH};

const AGENT: &str = "agent=git/2.47.3-ex_bashkit";

/// What a server says it has.
pub struct Advert {
    /// Ref name → object, in the server's order (peeled tags left out).
    pub refs: Vec<(String, Oid)>,
    /// Annotated tag's name → the object it peels to (`name^{}` lines).
    pub peeled: Vec<(String, Oid)>,
    /// The ref the server's `HEAD` names, even when it is unborn.
    head: Option<String>,
    /// Version 0: the capabilities of the first ref line. Version 2: what
    /// `fetch=` lists (`shallow`, …).
    capabilities: Vec<String>,
    /// The server answered in protocol version 2.
    v2: bool,
    /// Version 2: the server wants to be told the object format.
    object_format: bool,
    /// Where the service's requests go (after redirects).
    pub base: String,
}

impl Advert {
    /// The branch the server's `HEAD` names (`refs/heads/main`).
    pub fn head_branch(&self) -> Option<&str> {
        self.head.as_deref()
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
        // Version 2 takes `ofs-delta` and `include-tag` from every client.
        (self.v2 && capability != "shallow") || self.capabilities.iter().any(|c| c == capability)
    }

    /// A version 0 ref line's ref (an annotated tag's `name^{}` says what
    /// it peels to; an empty repository's line names no ref).
    fn note(&mut self, name: &str, oid: &str) {
        if name == "capabilities^{}" {
            return;
        }
        match name.strip_suffix("^{}") {
            Some(tag) => self.peeled.push((tag.to_string(), oid.to_string())),
            None => self.refs.push((name.to_string(), oid.to_string())),
        }
    }

    /// The lines every version 2 command starts with.
    fn command(&self, name: &str) -> Vec<u8> {
        let mut body = pkt_line(&format!("command={name}\n"));
        body.extend(pkt_line(&format!("{AGENT}\n")));
        if self.object_format {
            body.extend(pkt_line("object-format=sha1\n"));
        }
        body.extend_from_slice(DELIM);
        body
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
        let mut headers = vec![
            (
                "Content-Type".to_string(),
                format!("application/x-{service}-request"),
            ),
            (
                "Accept".to_string(),
                format!("application/x-{service}-result"),
            ),
        ];
        if advert.v2 {
            headers.push(version_2());
        }
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
    /// `git-upload-pack` is asked for protocol version 2, as real git asks;
    /// a server that answers in version 0 is spoken to in version 0.
    pub async fn discover(&self, service: &str) -> Result<Advert, Error> {
        let suffix = format!("/info/refs?service={service}");
        let url = format!("{}{suffix}", self.url);
        let headers: Vec<_> = (service == "git-upload-pack")
            .then(version_2)
            .into_iter()
            .collect();
        let (response, landed) = self.request(HttpMethod::Get, &url, None, &headers).await?;
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
        // After a redirect, the service lives where the refs came from.
        let base = landed
            .strip_suffix(&suffix)
            .unwrap_or(&self.url)
            .to_string();
        let (first, used) = read_pkt_lines(&response.body)?;
        if first.first().map(|l| l.as_slice()) == Some(b"version 2\n") {
            let mut advert = Advert {
                refs: Vec::new(),
                peeled: Vec::new(),
                head: None,
                capabilities: Vec::new(),
                v2: true,
                object_format: false,
                base,
            };
            for line in &first[1..] {
                let line = text(line);
                if let Some(features) = line.strip_prefix("fetch=") {
                    advert.capabilities = features.split(' ').map(str::to_string).collect();
                }
                advert.object_format |= line.starts_with("object-format=");
            }
            if !first.iter().any(|l| l.starts_with(b"ls-refs")) {
                return Err(Error::Remote(
                    "protocol error: the server offers no ls-refs".into(),
                ));
            }
            self.list_refs(&mut advert).await?;
            return Ok(advert);
        }
        if first.first().map(|l| l.starts_with(b"# service=")) != Some(true) {
            return Err(Error::Remote(
                "protocol error: no service announcement".into(),
            ));
        }
        let (lines, _) = read_pkt_lines(&response.body[used..])?;
        let mut advert = Advert {
            refs: Vec::new(),
            peeled: Vec::new(),
            head: None,
            capabilities: Vec::new(),
            v2: false,
            object_format: false,
            base,
        };
        for (i, line) in lines.iter().enumerate() {
            let line = text(line);
            let (refline, caps) = match line.split_once('\0') {
                Some((r, c)) => (r, Some(c)),
                None => (line.as_str(), None),
            };
            if i == 0 {
                if let Some(caps) = caps {
                    advert.capabilities = caps.split(' ').map(str::to_string).collect();
                }
            }
            if let Some((oid, name)) = refline.split_once(' ') {
                advert.note(name, oid);
            }
        }
        advert.head = advert
            .capabilities
            .iter()
            .find_map(|c| c.strip_prefix("symref=HEAD:"))
            .map(str::to_string);
        Ok(advert)
    }

    /// Version 2's `ls-refs`: every ref, what each tag peels to, where
    /// `HEAD` points (unborn too, as real git asks when the server offers).
    async fn list_refs(&self, advert: &mut Advert) -> Result<(), Error> {
        let mut body = advert.command("ls-refs");
        body.extend(pkt_line("symrefs\n"));
        body.extend(pkt_line("peel\n"));
        body.extend(pkt_line("unborn\n"));
        body.extend_from_slice(FLUSH);
        let response = self.post(advert, "git-upload-pack", &body).await?;
        let (lines, _) = read_pkt_lines(&response.body)?;
        for line in lines {
            let line = text(&line);
            if let Some(message) = line.strip_prefix("ERR ") {
                return Err(Error::Remote(format!("remote error: {message}")));
            }
            let mut fields = line.split(' ');
            let (Some(oid), Some(name)) = (fields.next(), fields.next()) else {
                continue;
            };
            for attribute in fields {
                if let Some(target) = attribute.strip_prefix("symref-target:") {
                    if name == "HEAD" {
                        advert.head = Some(target.to_string());
                    }
                } else if let Some(peeled) = attribute.strip_prefix("peeled:") {
                    advert.peeled.push((name.to_string(), peeled.to_string()));
                }
            }
            if oid != "unborn" {
                advert.refs.push((name.to_string(), oid.to_string()));
            }
        }
        Ok(())
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
        let asked: Vec<&str> = [
            ("ofs-delta", true),
            ("shallow", cut && !advert.v2),
            ("include-tag", want.include_tag),
        ]
        .into_iter()
        .filter(|&(capability, asked)| asked && advert.offers(capability))
        .map(|(capability, _)| capability)
        .collect();
        let mut body = Vec::new();
        if advert.v2 {
            // Version 2: the command, then one argument a line.
            body = advert.command("fetch");
            for argument in asked.iter().chain(&["no-progress"]) {
                body.extend(pkt_line(&format!("{argument}\n")));
            }
        }
        for (i, oid) in wants.iter().enumerate() {
            let line = match (i, advert.v2) {
                (0, false) => {
                    let capabilities: String = asked.iter().map(|c| format!(" {c}")).collect();
                    format!("want {oid}{capabilities} {AGENT}\n")
                }
                _ => format!("want {oid}\n"),
            };
            body.extend(pkt_line(&line));
        }
        for oid in want.shallow {
            body.extend(pkt_line(&format!("shallow {oid}\n")));
        }
        if let Some(depth) = want.depth {
            body.extend(pkt_line(&format!("deepen {depth}\n")));
        }
        if !advert.v2 {
            body.extend_from_slice(FLUSH);
        }
        for have in haves {
            body.extend(pkt_line(&format!("have {have}\n")));
        }
        body.extend(pkt_line("done\n"));
        if advert.v2 {
            body.extend_from_slice(FLUSH);
        }
        // The response is taken as it arrives: where history is cut
        // (when asked), then the pack, written to storage in parts.
        let mut reading = FetchResponse::new(advert.v2);
        let storage = &mut *into;
        let (request, mut parts) =
            super::streamed::streaming(self.post(advert, "git-upload-pack", &body));
        let receive = async move {
            while let Some(part) = parts.recv().await {
                // On a failure the receiver goes, which ends the request.
                reading.take(&part, storage).await?;
            }
            Ok::<_, Error>(reading)
        };
        let (response, received) = tokio::join!(request, receive);
        // Why the pack could not be stored comes before how the request
        // ended (which is then that it was cut short).
        let mut reading = received?;
        let response = response?;
        // A transport that does not stream answers with the body whole.
        reading.take(&response.body, into).await?;
        reading.finish()
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

/// The header that asks for protocol version 2.
fn version_2() -> (String, String) {
    ("Git-Protocol".to_string(), "version=2".to_string())
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
    fn redirects_resolve_against_the_url() {
        assert_eq!(join_url("http://h:1/a/b", "/c"), "http://h:1/c");
        assert_eq!(join_url("http://h:1/a/b", "c"), "http://h:1/a/c");
        assert_eq!(join_url("http://h/a", "https://o/x"), "https://o/x");
    }
}
