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

use super::error::Error;
use super::odb::{apply_delta, to_hex, PackData};

fn corrupt(why: &str) -> Error {
    Error::CorruptPack(why.to_string())
}

/// What one entry of a pack is: an object whole, or a delta on a base
/// named by its offset in the pack or by its object name.
enum Kind {
    Whole(&'static str),
    OfsDelta(u64),
    RefDelta([u8; 20]),
}

/// An entry of a pack, read but not kept: where its zlib stream starts and
/// what it inflates to, so that it is inflated again only when needed.
struct Entry {
    offset: u64,
    crc: u32,
    kind: Kind,
    /// Where its compressed bytes start.
    data: u64,
    size: usize,
}

/// Inflates one zlib stream at the start of `data`: its bytes, and how
/// many compressed bytes it took. `Ok(None)` when `data` ends before the
/// stream does.
fn inflate_stream(data: &[u8], size: usize) -> Result<Option<(Vec<u8>, usize)>, Error> {
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
                return Ok(None);
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
    Ok(Some((out, inflater.total_in() as usize)))
}

/// The zlib stream at `at` of a pack whose objects end at `end`, inflated
/// to its declared `size`, and how many bytes it took. A pack in a file is
/// read a window at a time: one a little larger than `size`, which holds
/// any stream zlib writes for it, grown if a stream takes more.
fn inflate_at(pack: &PackData, at: u64, end: u64, size: usize) -> Result<(Vec<u8>, usize), Error> {
    let left = end.saturating_sub(at);
    let mut window = (size as u64 + size as u64 / 1024 + 64).min(left);
    loop {
        let bytes = pack.bytes(at, window as usize);
        match inflate_stream(&bytes, size)? {
            Some(inflated) => return Ok(inflated),
            None if window >= left => return Err(corrupt("truncated object")),
            None => window = (window * 2).min(left),
        }
    }
}

/// A received pack, indexed: its `.idx` bytes and the pack's own name
/// (the SHA-1 of its contents).
pub struct Indexed {
    pub idx: Vec<u8>,
    pub name: String,
}

/// The checksum of a pack's first `end` bytes, read a part at a time.
fn checksum(pack: &PackData, end: u64) -> [u8; 20] {
    const PART: u64 = 1 << 20;
    let mut hasher = Sha1::new();
    let mut at = 0;
    while at < end {
        let n = PART.min(end - at);
        hasher.update(pack.bytes(at, n as usize));
        at += n;
    }
    hasher.finalize().into()
}

/// Indexes a pack as `git index-pack` does, reading it where it is (in
/// memory, or a part at a time from its file on the host).
pub fn index(pack: &PackData) -> Result<Indexed, Error> {
    let len = pack.len();
    if len < 32 || *pack.bytes(0, 4) != *b"PACK" {
        return Err(corrupt("no PACK header"));
    }
    let body_end = len - 20;
    let checksum = checksum(pack, body_end);
    let trailer = pack.bytes(body_end, 20);
    if checksum[..] != trailer[..] {
        return Err(corrupt("bad checksum"));
    }
    let header = pack.bytes(4, 8);
    let version = u32::from_be_bytes(header[..4].try_into().unwrap());
    if version != 2 && version != 3 {
        return Err(corrupt("unknown version"));
    }
    let count = u32::from_be_bytes(header[4..].try_into().unwrap()) as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12u64;
    for _ in 0..count {
        let offset = at;
        // The longest entry header: a size of 64 bits, then a base's name.
        let head = pack.bytes(at, 10 + 20).into_owned();
        let mut used = 0;
        let mut next = || -> Result<u8, Error> {
            let byte = *head.get(used).ok_or_else(|| corrupt("truncated"))?;
            used += 1;
            Ok(byte)
        };
        let mut byte = next()?;
        let kind = (byte >> 4) & 7;
        let mut size = u64::from(byte & 15);
        let mut shift = 4;
        while byte & 0x80 != 0 {
            byte = next()?;
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
        let kind = match kind {
            1..=4 => Kind::Whole(["commit", "tree", "blob", "tag"][kind as usize - 1]),
            6 => {
                byte = next()?;
                let mut back = u64::from(byte & 0x7f);
                while byte & 0x80 != 0 {
                    byte = next()?;
                    back = back
                        .checked_add(1)
                        .and_then(|b| b.checked_mul(128))
                        .ok_or_else(|| corrupt("delta base"))?
                        | u64::from(byte & 0x7f);
                }
                let base = offset
                    .checked_sub(back)
                    .filter(|_| back > 0)
                    .ok_or_else(|| corrupt("delta base"))?;
                Kind::OfsDelta(base)
            }
            7 => {
                let base: [u8; 20] = head
                    .get(used..used + 20)
                    .ok_or_else(|| corrupt("truncated"))?
                    .try_into()
                    .unwrap();
                used += 20;
                Kind::RefDelta(base)
            }
            _ => return Err(corrupt("unknown object type")),
        };
        let data = at + used as u64;
        if data > body_end {
            return Err(corrupt("truncated"));
        }
        // Inflated once here to find where it ends (and checked), then
        // dropped: a pack's objects are never all held at once.
        let (_, compressed) = inflate_at(pack, data, body_end, size)?;
        at = data + compressed as u64;
        let mut crc = Crc::new();
        crc.update(&pack.bytes(offset, (at - offset) as usize));
        entries.push(Entry {
            offset,
            crc: crc.sum(),
            kind,
            data,
            size,
        });
    }
    if at != body_end {
        return Err(corrupt("trailing bytes"));
    }
    let names = resolve(pack, body_end, &entries)?;
    let mut table: Vec<([u8; 20], u32, u64)> = entries
        .iter()
        .zip(&names)
        .map(|(e, name)| (*name, e.crc, e.offset))
        .collect();
    table.sort_by_key(|entry| entry.0);
    let idx = write_idx(&table, &trailer);
    Ok(Indexed {
        idx,
        name: to_hex(&checksum),
    })
}

/// The name git gives an object of `kind` holding `body`.
fn name_of(kind: &str, body: &[u8]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", body.len()).as_bytes());
    hasher.update(body);
    hasher.finalize().into()
}

/// Which entries are deltas on which: by the base's offset, or its name.
#[derive(Default)]
struct Children {
    of_offset: HashMap<u64, Vec<usize>>,
    of_name: HashMap<[u8; 20], Vec<usize>>,
}

impl Children {
    fn of(&self, entry: &Entry, name: &[u8; 20]) -> impl Iterator<Item = usize> + '_ {
        let by_offset = self.of_offset.get(&entry.offset).into_iter().flatten();
        let by_name = self.of_name.get(name).into_iter().flatten();
        by_offset.chain(by_name).copied()
    }
}

/// Every entry's object name, as `git index-pack` finds them: each whole
/// object hashed, then each delta applied depth first from its base, so
/// that what is held at once is one chain of objects, not the pack's
/// contents. Refused whole, as `transfer.fsckObjects` does, before
/// anything of it is kept: a tree git would never check out, or a
/// `.gitmodules` one of them names with a submodule git refuses.
fn resolve(pack: &PackData, end: u64, entries: &[Entry]) -> Result<Vec<[u8; 20]>, Error> {
    let inflate = |entry: &Entry| inflate_at(pack, entry.data, end, entry.size).map(|(d, _)| d);
    let refused = |name: &[u8; 20], (id, text): super::fsck::Problem| Error::Fsck {
        oid: to_hex(name),
        id,
        text,
    };
    let mut children = Children::default();
    for (i, entry) in entries.iter().enumerate() {
        match entry.kind {
            Kind::OfsDelta(base) => children.of_offset.entry(base).or_default().push(i),
            Kind::RefDelta(base) => children.of_name.entry(base).or_default().push(i),
            Kind::Whole(_) => {}
        }
    }
    let mut names: Vec<Option<[u8; 20]>> = vec![None; entries.len()];
    let mut kinds: Vec<&'static str> = vec![""; entries.len()];
    let mut gitmodules = std::collections::HashSet::new();
    let mut check = |name: &[u8; 20], kind: &str, data: &[u8]| -> Result<(), Error> {
        if kind == "tree" {
            let named = super::fsck::check_tree(data).map_err(|p| refused(name, p))?;
            gitmodules.extend(named);
        }
        Ok(())
    };
    for (root, entry) in entries.iter().enumerate() {
        let Kind::Whole(kind) = entry.kind else {
            continue;
        };
        let data = inflate(entry)?;
        let name = name_of(kind, &data);
        check(&name, kind, &data)?;
        names[root] = Some(name);
        kinds[root] = kind;
        // Its deltas, and theirs, each applied to what it is a delta on.
        let mut pending: Vec<(usize, Arc<Vec<u8>>)> = Vec::new();
        let mut base = Arc::new(data);
        pending.extend(children.of(entry, &name).map(|c| (c, base.clone())));
        while let Some((i, on)) = pending.pop() {
            if names[i].is_some() {
                continue;
            }
            let delta = inflate(&entries[i])?;
            let data =
                apply_delta(&on, &delta).map_err(|_| corrupt("a delta does not fit its base"))?;
            drop(on);
            let name = name_of(kind, &data);
            check(&name, kind, &data)?;
            names[i] = Some(name);
            kinds[i] = kind;
            base = Arc::new(data);
            pending.extend(children.of(&entries[i], &name).map(|c| (c, base.clone())));
        }
    }
    if names.iter().any(Option::is_none) {
        return Err(corrupt("a delta's base is missing or does not fit"));
    }
    let names: Vec<[u8; 20]> = names.into_iter().flatten().collect();
    // The `.gitmodules` blobs the trees named, rebuilt one at a time.
    for (i, name) in names.iter().enumerate() {
        if kinds[i] == "blob" && gitmodules.contains(name) {
            let data = rebuild(pack, end, entries, &names, i)?;
            super::fsck::check_gitmodules(&data).map_err(|p| refused(name, p))?;
        }
    }
    Ok(names)
}

/// Entry `i`'s content: its chain of deltas applied from the object whole
/// at its root.
fn rebuild(
    pack: &PackData,
    end: u64,
    entries: &[Entry],
    names: &[[u8; 20]],
    i: usize,
) -> Result<Vec<u8>, Error> {
    let by_offset = |offset: u64| entries.iter().position(|e| e.offset == offset);
    let by_name = |name: &[u8; 20]| names.iter().position(|n| n == name);
    let mut chain = vec![i];
    loop {
        let last = &entries[*chain.last().expect("a chain")];
        let base = match &last.kind {
            Kind::Whole(_) => break,
            Kind::OfsDelta(offset) => by_offset(*offset),
            Kind::RefDelta(name) => by_name(name),
        };
        match base {
            Some(base) if chain.len() <= entries.len() => chain.push(base),
            _ => return Err(corrupt("a delta's base is missing")),
        }
    }
    let inflate = |entry: &Entry| inflate_at(pack, entry.data, end, entry.size).map(|(d, _)| d);
    let mut data = inflate(&entries[chain.pop().expect("a root")])?;
    while let Some(next) = chain.pop() {
        data = apply_delta(&data, &inflate(&entries[next])?)
            .map_err(|_| corrupt("a delta does not fit its base"))?;
    }
    Ok(data)
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
        write_entry(&mut pack, code, data.len(), &[], data);
    }
    let checksum = Sha1::digest(&pack);
    pack.extend_from_slice(&checksum);
    pack
}

/// One entry: its type code and inflated size, `base` (a delta's base,
/// empty for an object whole), then `data` deflated.
fn write_entry(pack: &mut Vec<u8>, code: u8, size: usize, base: &[u8], data: &[u8]) {
    let mut size = size;
    let mut byte = (code << 4) | (size & 15) as u8;
    size >>= 4;
    while size != 0 {
        pack.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    pack.push(byte);
    pack.extend_from_slice(base);
    let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("writing to memory");
    pack.extend(encoder.finish().expect("writing to memory"));
}

#[cfg(test)]
mod tests {
    use super::super::odb::hash;
    use super::*;

    /// A delta turning `base` into `base` + `tail`: copy all, insert.
    fn append_delta(base: &[u8], tail: &[u8]) -> Vec<u8> {
        let varint = |mut n: usize, out: &mut Vec<u8>| loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        };
        let mut delta = Vec::new();
        varint(base.len(), &mut delta);
        varint(base.len() + tail.len(), &mut delta);
        // Copy from offset 0, size as three bytes.
        let len = base.len();
        delta.extend([
            0x80 | 0x10 | 0x20 | 0x40,
            len as u8,
            (len >> 8) as u8,
            (len >> 16) as u8,
        ]);
        delta.push(tail.len() as u8);
        delta.extend_from_slice(tail);
        delta
    }

    fn index_bytes(pack: &[u8]) -> Result<Indexed, Error> {
        index(&PackData::Whole(pack.to_vec()))
    }

    #[test]
    fn deltas_on_offsets_and_names_resolve_in_any_order() {
        let a = b"line one\n".repeat(50);
        let b = [a.as_slice(), b"two\n"].concat();
        let c = [b.as_slice(), b"three\n"].concat();
        let mut pack = b"PACK".to_vec();
        pack.extend(2u32.to_be_bytes());
        pack.extend(3u32.to_be_bytes());
        // C first, a delta on B by name, before B exists; then A; then B,
        // a delta on A by offset.
        let b_name: [u8; 20] = name_of("blob", &b);
        let delta_c = append_delta(&b, b"three\n");
        write_entry(&mut pack, 7, delta_c.len(), &b_name, &delta_c);
        let a_at = pack.len();
        write_entry(&mut pack, 3, a.len(), &[], &a);
        let b_at = pack.len();
        let delta_b = append_delta(&a, b"two\n");
        let back = b_at - a_at;
        assert!(back < 128);
        write_entry(&mut pack, 6, delta_b.len(), &[back as u8], &delta_b);
        let checksum = Sha1::digest(&pack);
        pack.extend_from_slice(&checksum);

        let idx = index_bytes(&pack).unwrap().idx;
        let names: Vec<String> = (0..3)
            .map(|i| to_hex(&idx[1032 + i * 20..1052 + i * 20]))
            .collect();
        let mut want = vec![hash("blob", &a), hash("blob", &b), hash("blob", &c)];
        want.sort();
        assert_eq!(names, want);

        // A delta whose base is in no entry is refused.
        let mut orphan = b"PACK".to_vec();
        orphan.extend(2u32.to_be_bytes());
        orphan.extend(1u32.to_be_bytes());
        write_entry(&mut orphan, 7, delta_c.len(), &b_name, &delta_c);
        let checksum = Sha1::digest(&orphan);
        orphan.extend_from_slice(&checksum);
        assert!(
            matches!(index_bytes(&orphan), Err(Error::CorruptPack(why)) if why.contains("base is missing"))
        );
    }

    #[test]
    fn a_built_pack_indexes_to_its_objects() {
        let objects: Vec<(String, Arc<Vec<u8>>)> = vec![
            ("blob".into(), Arc::new(b"hello\n".to_vec())),
            ("blob".into(), Arc::new(vec![7u8; 70_000])),
        ];
        let pack = build(&objects);
        let indexed = index_bytes(&pack).unwrap();
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
        assert!(index_bytes(&pack).is_err());
        assert!(index_bytes(b"PACK").is_err());
    }

    /// One blob's entry whose zlib stream is padded with empty stored
    /// blocks: far longer than the object, as a hostile server may send.
    fn padded_entry(pack: &mut Vec<u8>, data: &[u8], padding: usize) {
        write_entry_header(pack, 3, data.len());
        pack.extend([0x78, 0x01]);
        for _ in 0..padding {
            // A stored block, not the last, of no bytes.
            pack.extend([0x00, 0x00, 0x00, 0xff, 0xff]);
        }
        let len = data.len() as u16;
        pack.push(0x01);
        pack.extend(len.to_le_bytes());
        pack.extend((!len).to_le_bytes());
        pack.extend_from_slice(data);
        let mut adler = (1u32, 0u32);
        for byte in data {
            adler.0 = (adler.0 + u32::from(*byte)) % 65521;
            adler.1 = (adler.1 + adler.0) % 65521;
        }
        pack.extend(((adler.1 << 16) | adler.0).to_be_bytes());
    }

    fn write_entry_header(pack: &mut Vec<u8>, code: u8, size: usize) {
        let mut byte = (code << 4) | (size & 15) as u8;
        let mut rest = size >> 4;
        while rest > 0 {
            pack.push(byte | 0x80);
            byte = (rest & 0x7f) as u8;
            rest >>= 7;
        }
        pack.push(byte);
    }

    #[test]
    fn a_pack_in_a_file_indexes_as_one_in_memory() {
        let objects: Vec<(String, Arc<Vec<u8>>)> = vec![
            ("blob".into(), Arc::new(b"hello\n".to_vec())),
            (
                "blob".into(),
                Arc::new((0..200_000u32).map(|i| (i * 7919 % 251) as u8).collect()),
            ),
        ];
        let mut pack = build(&objects);
        // A third entry whose stream is longer than a window first read.
        pack.truncate(pack.len() - 20);
        pack[8..12].copy_from_slice(&3u32.to_be_bytes());
        padded_entry(&mut pack, b"padded\n", 4000);
        let checksum = Sha1::digest(&pack);
        pack.extend_from_slice(&checksum);

        let path = std::env::temp_dir().join(format!("ex_bashkit_pack_{}", std::process::id()));
        std::fs::write(&path, &pack).unwrap();
        let on_host = index(&PackData::OnHost(std::fs::File::open(&path).unwrap()));
        std::fs::remove_file(&path).unwrap();
        let on_host = on_host.unwrap();
        let in_memory = index_bytes(&pack).unwrap();
        assert_eq!(on_host.idx, in_memory.idx);
        assert_eq!(on_host.name, in_memory.name);
        let idx = &in_memory.idx;
        let names: Vec<String> = (0..3)
            .map(|i| to_hex(&idx[1032 + i * 20..1052 + i * 20]))
            .collect();
        assert!(names.contains(&hash("blob", b"padded\n")));

        // Cut inside the padded stream, it is refused, not read past.
        let mut cut = pack[..pack.len() - 20 - 9000].to_vec();
        let checksum = Sha1::digest(&cut);
        cut.extend_from_slice(&checksum);
        assert!(matches!(index_bytes(&cut), Err(Error::CorruptPack(_))));
    }
}
