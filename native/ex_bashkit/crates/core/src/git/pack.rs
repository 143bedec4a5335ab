//! Packs on the wire: indexing one a server sent (`git index-pack`: every
//! object's name, its CRC and offset, an `.idx` version 2 beside it) and
//! building one to push (every object whole, as `git pack-objects` does
//! with deltas turned off).

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use flate2::write::ZlibEncoder;
use flate2::{Crc, Decompress, FlushDecompress, Status};
use sha1::{Digest, Sha1};

use super::odb::{apply_delta, from_hex, hash, to_hex};

fn corrupt(why: &str) -> String {
    format!("fatal: the pack from the remote is corrupt ({why})")
}

/// What one entry of a pack holds before its deltas are resolved.
enum Raw {
    Whole(&'static str, Vec<u8>),
    OfsDelta(u64, Vec<u8>),
    RefDelta([u8; 20], Vec<u8>),
}

struct Entry {
    offset: u64,
    crc: u32,
    raw: Raw,
}

/// Inflates one zlib stream at the start of `data`: its bytes, and how
/// many compressed bytes it took.
fn inflate_stream(data: &[u8], size: usize) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::with_capacity(size.min(1 << 26));
    let mut inflater = Decompress::new(true);
    loop {
        out.reserve(size.saturating_sub(out.len()).max(64));
        let before_in = inflater.total_in() as usize;
        let before_out = out.len();
        let status = inflater
            .decompress_vec(&data[before_in..], &mut out, FlushDecompress::None)
            .map_err(|_| corrupt("bad zlib stream"))?;
        match status {
            Status::StreamEnd => break,
            _ if inflater.total_in() as usize == before_in && out.len() == before_out => {
                return Err(corrupt("truncated object"));
            }
            _ => {}
        }
        if out.len() > size {
            return Err(corrupt("object larger than declared"));
        }
    }
    if out.len() != size {
        return Err(corrupt("object size"));
    }
    Ok((out, inflater.total_in() as usize))
}

/// A received pack, indexed: its `.idx` bytes and the pack's own name
/// (the SHA-1 of its contents).
pub struct Indexed {
    pub idx: Vec<u8>,
    pub name: String,
}

pub fn index(pack: &[u8]) -> Result<Indexed, String> {
    if pack.len() < 32 || &pack[..4] != b"PACK" {
        return Err(corrupt("no PACK header"));
    }
    let body_end = pack.len() - 20;
    let checksum = Sha1::digest(&pack[..body_end]);
    if checksum[..] != pack[body_end..] {
        return Err(corrupt("bad checksum"));
    }
    let version = u32::from_be_bytes(pack[4..8].try_into().unwrap());
    if version != 2 && version != 3 {
        return Err(corrupt("unknown version"));
    }
    let count = u32::from_be_bytes(pack[8..12].try_into().unwrap()) as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12usize;
    for _ in 0..count {
        let offset = at;
        let next = |at: &mut usize| -> Result<u8, String> {
            let byte = *pack
                .get(*at)
                .filter(|_| *at < body_end)
                .ok_or_else(|| corrupt("truncated"))?;
            *at += 1;
            Ok(byte)
        };
        let mut byte = next(&mut at)?;
        let kind = (byte >> 4) & 7;
        let mut size = u64::from(byte & 15);
        let mut shift = 4;
        while byte & 0x80 != 0 {
            byte = next(&mut at)?;
            if shift > 60 {
                return Err(corrupt("size"));
            }
            size |= u64::from(byte & 0x7f) << shift;
            shift += 7;
        }
        if size > super::odb::MAX_OBJECT_BYTES {
            return Err(corrupt("an object larger than the sandbox's git reads"));
        }
        let size = usize::try_from(size).map_err(|_| corrupt("size"))?;
        let raw = match kind {
            1..=4 => {
                let (data, used) = inflate_stream(&pack[at..body_end], size)?;
                at += used;
                let name = ["commit", "tree", "blob", "tag"][kind as usize - 1];
                Raw::Whole(name, data)
            }
            6 => {
                byte = next(&mut at)?;
                let mut back = u64::from(byte & 0x7f);
                while byte & 0x80 != 0 {
                    byte = next(&mut at)?;
                    back = ((back + 1) << 7) | u64::from(byte & 0x7f);
                }
                let base = (offset as u64)
                    .checked_sub(back)
                    .ok_or_else(|| corrupt("delta base"))?;
                let (data, used) = inflate_stream(&pack[at..body_end], size)?;
                at += used;
                Raw::OfsDelta(base, data)
            }
            7 => {
                let base: [u8; 20] = pack
                    .get(at..at + 20)
                    .ok_or_else(|| corrupt("truncated"))?
                    .try_into()
                    .unwrap();
                at += 20;
                let (data, used) = inflate_stream(&pack[at..body_end], size)?;
                at += used;
                Raw::RefDelta(base, data)
            }
            _ => return Err(corrupt("unknown object type")),
        };
        let mut crc = Crc::new();
        crc.update(&pack[offset..at]);
        entries.push(Entry {
            offset: offset as u64,
            crc: crc.sum(),
            raw,
        });
    }
    if at != body_end {
        return Err(corrupt("trailing bytes"));
    }
    let names = resolve(&entries)?;
    let mut table: Vec<([u8; 20], u32, u64)> = entries
        .iter()
        .zip(&names)
        .map(|(e, name)| (*name, e.crc, e.offset))
        .collect();
    table.sort_by_key(|entry| entry.0);
    let idx = write_idx(&table, &pack[body_end..]);
    Ok(Indexed {
        idx,
        name: to_hex(&checksum),
    })
}

/// An object's kind and content, its deltas applied.
type Resolved = (&'static str, Arc<Vec<u8>>);

/// Every entry's object name, its deltas applied.
fn resolve(entries: &[Entry]) -> Result<Vec<[u8; 20]>, String> {
    let by_offset: HashMap<u64, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.offset, i))
        .collect();
    let mut done: Vec<Option<Resolved>> = vec![None; entries.len()];
    let mut names: Vec<Option<[u8; 20]>> = vec![None; entries.len()];
    let mut by_name: HashMap<[u8; 20], usize> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        if let Raw::Whole(kind, data) = &entry.raw {
            let name = from_hex(&hash(kind, data)).expect("a hash");
            names[i] = Some(name);
            by_name.insert(name, i);
            done[i] = Some((kind, Arc::new(data.clone())));
        }
    }
    // Deltas whose bases are resolved, round after round: each round
    // resolves at least one, or the pack names a base it does not hold.
    let mut pending: Vec<usize> = (0..entries.len()).filter(|&i| done[i].is_none()).collect();
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|&i| {
            let (base, delta) = match &entries[i].raw {
                Raw::OfsDelta(base, delta) => (by_offset.get(base).copied(), delta),
                Raw::RefDelta(base, delta) => (by_name.get(base).copied(), delta),
                Raw::Whole(..) => unreachable!(),
            };
            let Some((kind, base)) = base.and_then(|b| done[b].clone()) else {
                return true;
            };
            let Ok(data) = apply_delta(&base, delta) else {
                return true;
            };
            let name = from_hex(&hash(kind, &data)).expect("a hash");
            names[i] = Some(name);
            by_name.insert(name, i);
            done[i] = Some((kind, Arc::new(data)));
            false
        });
        if pending.len() == before {
            return Err(corrupt("a delta's base is missing or does not fit"));
        }
    }
    // Refused whole, as `transfer.fsckObjects` does, before anything of
    // it is kept: a tree git would never check out, or a `.gitmodules`
    // one of them names with a submodule git refuses.
    let refused = |name: &[u8; 20], (id, text): super::fsck::Problem| {
        format!(
            "fsck error in packed object: object {}: {id}: {text}",
            to_hex(name)
        )
    };
    let mut gitmodules = std::collections::HashSet::new();
    for (resolved, name) in done.iter().zip(&names) {
        if let (Some(("tree", body)), Some(name)) = (resolved, name) {
            let named = super::fsck::check_tree(body).map_err(|p| refused(name, p))?;
            gitmodules.extend(named);
        }
    }
    for (resolved, name) in done.iter().zip(&names) {
        if let (Some(("blob", body)), Some(name)) = (resolved, name) {
            if gitmodules.contains(name) {
                super::fsck::check_gitmodules(body).map_err(|p| refused(name, p))?;
            }
        }
    }
    Ok(names.into_iter().map(|n| n.expect("resolved")).collect())
}

fn write_idx(table: &[([u8; 20], u32, u64)], pack_checksum: &[u8]) -> Vec<u8> {
    let mut idx = Vec::with_capacity(1072 + table.len() * 28);
    idx.extend_from_slice(b"\xfftOc");
    idx.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (name, _, _) in table {
        fanout[name[0] as usize] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        idx.extend_from_slice(&total.to_be_bytes());
    }
    for (name, _, _) in table {
        idx.extend_from_slice(name);
    }
    for (_, crc, _) in table {
        idx.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for (_, _, offset) in table {
        if *offset < 0x8000_0000 {
            idx.extend_from_slice(&(*offset as u32).to_be_bytes());
        } else {
            idx.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
            large.push(*offset);
        }
    }
    for offset in large {
        idx.extend_from_slice(&offset.to_be_bytes());
    }
    idx.extend_from_slice(pack_checksum);
    let checksum = Sha1::digest(&idx);
    idx.extend_from_slice(&checksum);
    idx
}

/// A pack of whole objects.
pub fn build(objects: &[(String, Arc<Vec<u8>>)]) -> Vec<u8> {
    let mut pack = Vec::new();
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    for (kind, data) in objects {
        let code: u8 = match kind.as_str() {
            "commit" => 1,
            "tree" => 2,
            "blob" => 3,
            _ => 4,
        };
        let mut size = data.len();
        let mut byte = (code << 4) | (size & 15) as u8;
        size >>= 4;
        while size != 0 {
            pack.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        pack.push(byte);
        let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).expect("writing to memory");
        pack.extend(encoder.finish().expect("writing to memory"));
    }
    let checksum = Sha1::digest(&pack);
    pack.extend_from_slice(&checksum);
    pack
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_pack_indexes_to_its_objects() {
        let objects: Vec<(String, Arc<Vec<u8>>)> = vec![
            ("blob".into(), Arc::new(b"hello\n".to_vec())),
            ("blob".into(), Arc::new(vec![7u8; 70_000])),
        ];
        let pack = build(&objects);
        let indexed = index(&pack).unwrap();
        let idx = &indexed.idx;
        assert_eq!(&idx[..4], b"\xfftOc");
        let count = u32::from_be_bytes(idx[8 + 255 * 4..8 + 256 * 4].try_into().unwrap());
        let names: Vec<String> = (0..count as usize)
            .map(|i| to_hex(&idx[1032 + i * 20..1052 + i * 20]))
            .collect();
        let mut want = vec![
            "ce013625030ba8dba906f756967f9e9ca394464a".to_string(),
            hash("blob", &[7u8; 70_000]),
        ];
        want.sort();
        assert_eq!(names, want);
    }

    #[test]
    fn a_damaged_pack_is_refused() {
        let mut pack = build(&[("blob".into(), Arc::new(b"x".to_vec()))]);
        let last = pack.len() - 1;
        pack[last] ^= 1;
        assert!(index(&pack).is_err());
        assert!(index(b"PACK").is_err());
    }
}
