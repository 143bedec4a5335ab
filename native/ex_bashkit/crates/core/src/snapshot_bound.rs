//! How many bytes a snapshot expands to, measured before bashkit decodes it.
//!
//! bashkit verifies a snapshot only after decoding it whole: a forged,
//! unkeyed snapshot of a few hundred KB whose deflated objects expand to
//! hundreds of MB made the VM allocate all of that before the limits check
//! refused it. `restore/3` first walks the container here, counting the
//! bytes each object inflates to without keeping them, and refuses a
//! snapshot past the session's `:max_snapshot_bytes`. Anything malformed is
//! left to bashkit, which rejects it with its own message: what it would
//! decode from a malformed container is bounded by what was counted here.

use crate::error::SessionError;
use std::io::Read;

/// Container framing (bashkit's `snapshot/container.rs`, format v2): the
/// integrity digest, then the body.
const DIGEST_LEN: usize = 32;
const MAGIC: &[u8] = b"BKSNAP";
/// Magic, versions, hash id, flags and the root object id.
const HEADER_LEN: usize = 6 + 1 + 1 + 2 + 2 + 1 + 1 + 32;
const OBJECT_ID_LEN: usize = 32;
const COMPRESSION_NONE: u8 = 0;
const COMPRESSION_DEFLATE: u8 = 1;

/// Refuses a `snapshot` that decodes to more than `max` bytes.
pub fn check(snapshot: &[u8], max: u64) -> Result<(), SessionError> {
    let too_large = || SessionError::SnapshotTooLarge { max };
    if snapshot.len() as u64 > max {
        return Err(too_large());
    }
    let Some(body) = snapshot.get(DIGEST_LEN..) else {
        return Ok(());
    };
    if !body.starts_with(MAGIC) {
        // A legacy JSON snapshot decodes to about its own size.
        return Ok(());
    }
    match decoded_size(body, max) {
        Some(size) if size > max => Err(too_large()),
        _ => Ok(()),
    }
}

/// The bytes a v2 container's objects inflate to, counting no further than
/// just past `max`; `None` when the framing is malformed.
fn decoded_size(body: &[u8], max: u64) -> Option<u64> {
    let mut cursor = body.get(HEADER_LEN..)?;
    let count = u32::from_le_bytes(take(&mut cursor, 4)?.try_into().ok()?);
    let mut total: u64 = 0;
    for _ in 0..count {
        take(&mut cursor, OBJECT_ID_LEN)?;
        let len = u64::from_le_bytes(take(&mut cursor, 8)?.try_into().ok()?);
        let blob = take(&mut cursor, usize::try_from(len).ok()?)?;
        let Some((&flag, data)) = blob.split_first() else {
            continue;
        };
        let budget = max.saturating_sub(total).saturating_add(1);
        total = total.saturating_add(match flag {
            COMPRESSION_NONE => data.len() as u64,
            COMPRESSION_DEFLATE => inflated_size(data, budget),
            _ => 0, // bashkit refuses unknown compression
        });
        if total > max {
            return Some(total);
        }
    }
    Some(total)
}

/// What a deflate stream inflates to, counting at most `budget` bytes. A
/// corrupt stream counts what it produced before failing: bashkit inflates
/// that much too before it notices.
fn inflated_size(data: &[u8], budget: u64) -> u64 {
    let mut decoder = flate2::read::DeflateDecoder::new(data);
    let mut buffer = [0u8; 64 * 1024];
    let mut total = 0u64;
    while total < budget {
        let room = usize::try_from(budget - total).map_or(buffer.len(), |n| n.min(buffer.len()));
        match decoder.read(&mut buffer[..room]) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n as u64,
        }
    }
    total
}

fn take<'a>(cursor: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if cursor.len() < n {
        return None;
    }
    let (head, rest) = cursor.split_at(n);
    *cursor = rest;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflated(bytes: &[u8]) -> Vec<u8> {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// A sealed container with one object per blob (the digest is not
    /// checked here, so zeros do).
    fn container(blobs: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![0u8; DIGEST_LEN];
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[2, 0, 1, 0, 2, 0, 1, 0]);
        out.extend_from_slice(&[7u8; 32]);
        out.extend_from_slice(&(blobs.len() as u32).to_le_bytes());
        for blob in blobs {
            out.extend_from_slice(&[9u8; OBJECT_ID_LEN]);
            out.extend_from_slice(&(blob.len() as u64).to_le_bytes());
            out.extend_from_slice(blob);
        }
        out
    }

    fn stored(bytes: &[u8]) -> Vec<u8> {
        [&[COMPRESSION_NONE][..], bytes].concat()
    }

    fn compressed(bytes: &[u8]) -> Vec<u8> {
        [vec![COMPRESSION_DEFLATE], deflated(bytes)].concat()
    }

    #[test]
    fn counts_stored_and_inflated_objects() {
        let snapshot = container(&[stored(&[1; 1000]), compressed(&[0; 50_000])]);
        assert!(snapshot.len() < 2_000);
        assert!(check(&snapshot, 51_000).is_ok());
        let refused = check(&snapshot, 50_999).unwrap_err();
        assert!(
            refused.to_string().contains("limit :max_snapshot_bytes"),
            "{refused}"
        );
    }

    #[test]
    fn a_bomb_is_refused_after_counting_just_past_the_bound() {
        let snapshot = container(&[compressed(&vec![0; 20_000_000])]);
        assert!(check(&snapshot, 1_000_000).is_err());
        assert_eq!(
            inflated_size(&snapshot[DIGEST_LEN + HEADER_LEN + 4 + 41..], 10),
            10
        );
    }

    #[test]
    fn the_encoded_size_alone_can_refuse() {
        assert!(check(&[0u8; 100], 99).is_err());
    }

    #[test]
    fn malformed_and_legacy_snapshots_are_left_to_bashkit() {
        let mut truncated = container(&[stored(&[1; 100])]);
        truncated.truncate(truncated.len() - 10);
        assert!(check(&truncated, 1_000).is_ok());
        assert!(check(b"short", 1_000).is_ok());
        let legacy = [vec![0u8; DIGEST_LEN], b"{\"version\":1}".to_vec()].concat();
        assert!(check(&legacy, 1_000).is_ok());
        // A corrupt deflate stream counts what it produced before failing.
        let corrupt = container(&[vec![COMPRESSION_DEFLATE, 0xFF, 0xFF, 0xFF]]);
        assert!(check(&corrupt, 1_000).is_ok());
    }
}
