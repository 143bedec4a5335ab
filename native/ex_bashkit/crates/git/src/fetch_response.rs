//! A fetch's response, read as its parts arrive (a part may end inside a
//! line): where the server says history is cut, then the pack, written to
//! storage as it comes. Protocol v0/v1 sends pkt-lines and then the pack
//! bare; protocol v2 sends sections, the pack inside `packfile`'s lines on
//! band 1 (progress on 2, an error on 3).

use std::ops::Range;

use super::error::Error;
use super::odb::{IncomingPack, Oid};
use super::pkt_line::{packet, text, Packet};

/// Where the server says history is now cut (`shallow`) or no longer cut
/// (`unshallow`), told before the pack.
#[derive(Default)]
pub struct Cut {
    pub shallow: Vec<Oid>,
    pub unshallow: Vec<Oid>,
}

impl Cut {
    fn note(&mut self, line: &str) {
        if let Some(oid) = line.strip_prefix("shallow ") {
            self.shallow.push(oid.to_string());
        } else if let Some(oid) = line.strip_prefix("unshallow ") {
            self.unshallow.push(oid.to_string());
        }
    }
}

/// Which protocol's response is read.
pub enum FetchResponse {
    V0(Preamble),
    V2(Sections),
}

impl FetchResponse {
    pub fn new(v2: bool) -> Self {
        match v2 {
            true => Self::V2(Sections::default()),
            false => Self::V0(Preamble::default()),
        }
    }

    pub async fn take(&mut self, part: &[u8], pack: &mut IncomingPack<'_>) -> Result<(), Error> {
        match self {
            Self::V0(preamble) => preamble.take(part, pack).await,
            Self::V2(sections) => sections.take(part, pack).await,
        }
    }

    pub fn finish(self) -> Result<Cut, Error> {
        let (cut, packed) = match self {
            Self::V0(preamble) => (preamble.cut, preamble.done),
            Self::V2(sections) => (sections.cut, sections.ended),
        };
        match packed {
            true => Ok(cut),
            false => Err(no_pack()),
        }
    }
}

fn no_pack() -> Error {
    Error::Remote("protocol error: the server sent no pack".into())
}

fn remote_error(message: &[u8]) -> Error {
    Error::Remote(format!("remote error: {}", text(message).trim_end()))
}

/// The longest pkt-line: a response holding more without a complete line
/// is not git's.
const LONGEST_LINE: usize = 65_520;

/// The next whole packet in `held` from `at`: what it is and where its
/// data lies; `None` until the rest of it has arrived.
fn next_packet(held: &[u8], at: usize) -> Result<Option<(Packet, Range<usize>)>, Error> {
    if held.len() < at + 4 {
        return Ok(None);
    }
    let packet = packet(&held[at..])?;
    let end = match packet {
        Packet::Line(len) => at + len,
        _ => at + 4,
    };
    Ok((end <= held.len()).then_some((packet, at + 4..end)))
}

/// Drops the `read` bytes of `held` that were taken; what is left is the
/// start of a line, which git never makes longer than `LONGEST_LINE`.
fn keep_unread(held: &mut Vec<u8>, read: usize, otherwise: Error) -> Result<(), Error> {
    held.drain(..read);
    match held.len() > LONGEST_LINE {
        true => Err(otherwise),
        false => Ok(()),
    }
}

/// Protocol v0/v1: pkt-lines up to the one that starts with `PACK`.
#[derive(Default)]
pub struct Preamble {
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
        loop {
            if self.held.get(at..at + 4) == Some(b"PACK") {
                self.done = true;
                let rest = self.held.split_off(at);
                self.held = Vec::new();
                return pack.write(&rest).await;
            }
            let Some((packet, data)) = next_packet(&self.held, at)? else {
                break;
            };
            at = data.end;
            let line = &self.held[data];
            if let Some(message) = line.strip_prefix(b"ERR ") {
                return Err(remote_error(message));
            }
            if matches!(packet, Packet::Line(_)) {
                self.cut.note(&text(line));
            }
        }
        keep_unread(&mut self.held, at, no_pack())
    }
}

/// Protocol v2: `shallow-info` (when history is cut), then `packfile`,
/// each section a header line, the sections apart by a delim, the whole
/// ended by a flush.
#[derive(Default)]
pub struct Sections {
    held: Vec<u8>,
    /// The section being read (`None` before a header).
    section: Option<String>,
    cut: Cut,
    /// The flush after the pack came.
    ended: bool,
}

impl Sections {
    async fn take(&mut self, part: &[u8], pack: &mut IncomingPack<'_>) -> Result<(), Error> {
        if self.ended {
            return match part.is_empty() {
                true => Ok(()),
                false => Err(Error::Remote(
                    "protocol error: data after the pack's end".into(),
                )),
            };
        }
        self.held.extend_from_slice(part);
        let mut at = 0;
        while !self.ended {
            let Some((packet, data)) = next_packet(&self.held, at)? else {
                break;
            };
            at = data.end;
            match packet {
                Packet::Flush if self.section.as_deref() == Some("packfile") => self.ended = true,
                Packet::Flush => return Err(no_pack()),
                Packet::Delim | Packet::ResponseEnd => self.section = None,
                Packet::Line(_) => self.line(data, pack).await?,
            }
        }
        keep_unread(
            &mut self.held,
            at,
            Error::Remote("protocol error: bad line length".into()),
        )
    }

    /// One line of the section being read (its header, when none is).
    async fn line(&mut self, data: Range<usize>, pack: &mut IncomingPack<'_>) -> Result<(), Error> {
        let line = &self.held[data];
        if let Some(message) = line.strip_prefix(b"ERR ") {
            return Err(remote_error(message));
        }
        match self.section.as_deref() {
            None => self.section = Some(text(line)),
            Some("packfile") => match line.split_first() {
                Some((1, bytes)) => pack.write(bytes).await?,
                Some((2, _)) => {}
                Some((3, message)) => return Err(remote_error(message)),
                _ => {
                    return Err(Error::Remote(
                        "protocol error: bad band in the packfile section".into(),
                    ))
                }
            },
            Some("shallow-info") => self.cut.note(&text(line)),
            // acknowledgments, wanted-refs: nothing this client uses.
            Some(_) => {}
        }
        Ok(())
    }
}
