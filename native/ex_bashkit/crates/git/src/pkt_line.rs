//! git's pkt-line framing: four hex digits of length (counting themselves),
//! then the data; `0000` ends a message (flush), `0001` separates its parts
//! in protocol v2 (delim).

use super::error::Error;

pub const FLUSH: &[u8] = b"0000";
pub const DELIM: &[u8] = b"0001";

/// `data` framed as one pkt-line.
pub fn pkt_line(data: &str) -> Vec<u8> {
    let mut out = format!("{:04x}", data.len() + 4).into_bytes();
    out.extend_from_slice(data.as_bytes());
    out
}

/// What the four bytes at the start of `data` say: a line of that many
/// bytes (header included), or one of the special packets.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet {
    Flush,
    Delim,
    ResponseEnd,
    Line(usize),
}

pub fn packet(data: &[u8]) -> Result<Packet, Error> {
    let head = data
        .get(..4)
        .ok_or_else(|| Error::Remote("protocol error: truncated".into()))?;
    let len = std::str::from_utf8(head)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| Error::Remote("protocol error: bad line length".into()))?;
    match len {
        0 => Ok(Packet::Flush),
        1 => Ok(Packet::Delim),
        2 => Ok(Packet::ResponseEnd),
        // git never sends a line longer than LARGE_PACKET_MAX.
        3 | 65_521.. => Err(Error::Remote("protocol error: bad line length".into())),
        len => Ok(Packet::Line(len)),
    }
}

/// Reads pkt-lines from `data` until a flush (or a delim) or the data's
/// end: the lines and where reading stopped (after the flush).
pub fn read_pkt_lines(data: &[u8]) -> Result<(Vec<Vec<u8>>, usize), Error> {
    let mut lines = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let len = match packet(&data[at..])? {
            Packet::Line(len) => len,
            _ => return Ok((lines, at + 4)),
        };
        let line = data
            .get(at + 4..at + len)
            .ok_or_else(|| Error::Remote("protocol error: bad line length".into()))?;
        lines.push(line.to_vec());
        at += len;
    }
    Ok((lines, at))
}

/// A line as text, its newline dropped.
pub fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(line)
        .trim_end_matches('\n')
        .to_string()
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
        assert!(read_pkt_lines(b"0009ab").is_err());
    }

    #[test]
    fn special_packets() {
        assert_eq!(packet(b"0000").unwrap(), Packet::Flush);
        assert_eq!(packet(b"0001").unwrap(), Packet::Delim);
        assert_eq!(packet(b"0002").unwrap(), Packet::ResponseEnd);
        assert!(packet(b"0003").is_err());
        assert!(packet(b"fff1").is_err());
        assert_eq!(packet(b"fff0").unwrap(), Packet::Line(65_520));
        assert_eq!(packet(b"000axxxxxx").unwrap(), Packet::Line(10));
        let (lines, used) = read_pkt_lines(b"0006a\n00010006b\n").unwrap();
        assert_eq!((lines, used), (vec![b"a\n".to_vec()], 10));
    }
}
