//! Git's object database as real git leaves it: loose objects
//! (`objects/xx/…`, zlib) and packs (`objects/pack/*.pack` with their
//! `.idx`, versions 1 and 2, offset and reference deltas), plus the object
//! directories `objects/info/alternates` names. Read from the session's
//! filesystem, so the same code serves mounts, the in-memory filesystem
//! and restored snapshots. New objects are written loose, as git writes
//! them before a `gc`.
//!
//! Written here rather than taken from `gix-pack`: its pack and index
//! files open a host path and memory-map it, and our files live behind
//! bashkit's asynchronous `FileSystem`.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::error::Error;
use super::io::Io;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use sha1::{Digest, Sha1};
use tokio::sync::OnceCell;

pub type Oid = String;

/// An object's kind and body.
pub type Object = (String, Arc<Vec<u8>>);

pub fn hash(kind: &str, body: &[u8]) -> Oid {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", body.len()).as_bytes());
    hasher.update(body);
    to_hex(&hasher.finalize())
}

pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

pub fn from_hex(oid: &str) -> Option<[u8; 20]> {
    if oid.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(oid.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

fn bad(oid: &str) -> Error {
    Error::BadObject(oid.to_string())
}

fn corrupt(what: &str) -> Error {
    Error::CorruptObject(what.to_string())
}

/// Kinds by their number in a pack.
fn kind_name(kind: u8) -> Option<&'static str> {
    match kind {
        1 => Some("commit"),
        2 => Some("tree"),
        3 => Some("blob"),
        4 => Some("tag"),
        _ => None,
    }
}

/// A pack's bytes: read whole from the session's filesystem, or read a
/// part at a time from its file on the host, as each object is wanted
/// (a pack of hundreds of megabytes costs no more than what is read).
pub(crate) enum PackData {
    Whole(Vec<u8>),
    OnHost(std::fs::File),
}

impl PackData {
    /// The pack at `path`: its file where it is on the host, else its
    /// bytes read whole.
    async fn open(io: &Io, path: &Path) -> Result<PackData, Error> {
        match io.open_on_host(path) {
            Some(file) => Ok(PackData::OnHost(file)),
            None => io.read_file(path).await.map(PackData::Whole),
        }
    }

    /// The bytes `at..at + n` (fewer at the end of the pack).
    pub(crate) fn bytes(&self, at: u64, n: usize) -> std::borrow::Cow<'_, [u8]> {
        match self {
            PackData::Whole(bytes) => {
                let start = usize::try_from(at).unwrap_or(usize::MAX).min(bytes.len());
                let end = start.saturating_add(n).min(bytes.len());
                std::borrow::Cow::Borrowed(&bytes[start..end])
            }
            PackData::OnHost(file) => {
                use std::os::unix::fs::FileExt;
                let mut out = vec![0; n];
                let mut filled = 0;
                while filled < n {
                    match file.read_at(&mut out[filled..], at + filled as u64) {
                        Ok(0) | Err(_) => break,
                        Ok(read) => filled += read,
                    }
                }
                out.truncate(filled);
                std::borrow::Cow::Owned(out)
            }
        }
    }

    pub(crate) fn len(&self) -> u64 {
        match self {
            PackData::Whole(bytes) => bytes.len() as u64,
            PackData::OnHost(file) => file.metadata().map_or(0, |m| m.len()),
        }
    }
}

/// What `count-objects` reports.
#[derive(Default)]
pub struct Census {
    pub loose: u64,
    /// The loose objects' blocks on disk, in bytes.
    pub loose_disk: u64,
    pub in_pack: u64,
    pub packs: u64,
    /// Packs and their indexes, in bytes.
    pub pack_bytes: u64,
    /// Loose objects a pack has too.
    pub packed_loose: u64,
    /// Files that are neither objects nor parts of a pack, and their sizes.
    pub garbage: Vec<(PathBuf, u64)>,
    pub alternates: bool,
}

/// One pack: its index read whole, its objects as they are wanted.
struct Pack {
    /// The directory it is in, and its name without `.idx`.
    dir: PathBuf,
    stem: String,
    idx: Vec<u8>,
    data: PackData,
    /// Where the names table starts, and how many objects there are.
    names: usize,
    count: usize,
    version: u32,
    /// Every object's offset, sorted: where each one's bytes end (read
    /// once, for a pack read a part at a time).
    ends: std::sync::OnceLock<Vec<u64>>,
    /// Delta bases already expanded, by offset: a chain's shared base
    /// is inflated once.
    bases: Mutex<HashMap<u64, Object>>,
}

/// How many hex digits two names share from the start.
fn common_hex_digits(a: &[u8], b: &[u8]) -> usize {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(byte) if a[byte] >> 4 == b[byte] >> 4 => byte * 2 + 1,
        Some(byte) => byte * 2,
        None => a.len().min(b.len()) * 2,
    }
}

/// Object names as git abbreviates them: to `core.abbrev` digits, or by
/// default to a length that grows with the repository (half the bits of
/// its packed object count, rounded up, at least 7), then as many more as
/// it takes to name no other object.
pub struct Abbrev {
    len: usize,
    packs: Arc<Vec<Pack>>,
    /// The loose objects' names, sorted.
    loose: Vec<[u8; 20]>,
}

impl Abbrev {
    /// `oid` abbreviated: to `len` digits when given, else the default.
    pub fn of(&self, oid: &str, len: Option<usize>) -> String {
        let len = len.unwrap_or(self.len).clamp(4, 40);
        let Some(name) = from_hex(oid) else {
            return oid.chars().take(len).collect();
        };
        let at = self.loose.partition_point(|n| n < &name);
        let loose = [at.wrapping_sub(1), at, at + 1]
            .into_iter()
            .filter_map(|i| self.loose.get(i))
            .filter(|n| **n != name)
            .map(|n| common_hex_digits(n, &name));
        let shared = self
            .packs
            .iter()
            .map(|p| p.shared_digits(&name))
            .chain(loose)
            .max()
            .unwrap_or(0);
        oid[..len.max(shared + 1).min(40)].to_string()
    }

    /// The same names abbreviated to `len` digits by default (`--abbrev=N`).
    pub fn with_len(&self, len: usize) -> Abbrev {
        Abbrev {
            len,
            packs: self.packs.clone(),
            loose: self.loose.clone(),
        }
    }

    /// The length names are abbreviated to before they are made unique.
    pub fn default_len(&self) -> usize {
        self.len
    }
}

/// The largest object the sandbox's git inflates (the size hosting
/// services refuse files past): a repository in a mount is the user's, but
/// its objects may have been made to inflate into far more memory than
/// their bytes on disk.
pub const MAX_OBJECT_BYTES: u64 = 100 << 20;

fn too_large(size: u64) -> Error {
    Error::TooLarge {
        size,
        max: MAX_OBJECT_BYTES,
    }
}

/// Bases kept per pack; past that the cache starts over.
const KEPT_BASES: usize = 512;

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

impl Pack {
    fn new(idx: Vec<u8>, data: PackData) -> Result<Pack, Error> {
        if *data.bytes(0, 4) != *b"PACK" {
            return Err(corrupt("pack"));
        }
        let (version, fanout) = if idx.get(..4) == Some(b"\xfftOc") {
            let version = be32(&idx, 4).ok_or_else(|| corrupt("pack index"))?;
            if version != 2 {
                return Err(Error::Unsupported(format!("pack index version {version}")));
            }
            (2, 8)
        } else {
            (1, 0)
        };
        let count = be32(&idx, fanout + 255 * 4).ok_or_else(|| corrupt("pack index"))? as usize;
        let names = fanout + 256 * 4;
        let needed = match version {
            2 => names + count * 28,
            _ => names + count * 24,
        };
        if idx.len() < needed {
            return Err(corrupt("pack index"));
        }
        Ok(Pack {
            dir: PathBuf::new(),
            stem: String::new(),
            idx,
            data,
            names,
            count,
            version,
            ends: std::sync::OnceLock::new(),
            bases: Mutex::new(HashMap::new()),
        })
    }

    fn name(&self, i: usize) -> &[u8] {
        match self.version {
            2 => &self.idx[self.names + i * 20..self.names + i * 20 + 20],
            _ => &self.idx[self.names + i * 24 + 4..self.names + i * 24 + 24],
        }
    }

    fn fanout(&self, byte: u8) -> (usize, usize) {
        let base = if self.version == 2 { 8 } else { 0 };
        let end = be32(&self.idx, base + byte as usize * 4).unwrap_or(0) as usize;
        let start = match byte {
            0 => 0,
            b => be32(&self.idx, base + (b as usize - 1) * 4).unwrap_or(0) as usize,
        };
        (start.min(self.count), end.min(self.count))
    }

    /// The position of `name` in the index.
    fn find(&self, name: &[u8; 20]) -> Option<usize> {
        let (mut lo, mut hi) = self.fanout(name[0]);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.name(mid).cmp(&name[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    fn offset(&self, i: usize) -> Option<u64> {
        if self.version == 1 {
            return be32(&self.idx, self.names + i * 24).map(u64::from);
        }
        let at = self.names + self.count * 24 + i * 4;
        let small = be32(&self.idx, at)?;
        if small & 0x8000_0000 == 0 {
            return Some(u64::from(small));
        }
        let large = self.names + self.count * 28 + (small & 0x7fff_ffff) as usize * 8;
        Some(u64::from_be_bytes(
            self.idx.get(large..large + 8)?.try_into().ok()?,
        ))
    }

    /// The longest run of hex digits `name` shares with another object
    /// of this pack (its neighbours in the sorted index).
    fn shared_digits(&self, name: &[u8; 20]) -> usize {
        let (start, end) = self.fanout(name[0]);
        let (mut lo, mut hi) = (start, end);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.name(mid) < &name[..] {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        let mut shared = 0;
        let mut consider = |i: usize| {
            if (start..end).contains(&i) && self.name(i) != &name[..] {
                shared = shared.max(common_hex_digits(self.name(i), name));
            }
        };
        consider(lo);
        consider(lo + 1);
        if lo > 0 {
            consider(lo - 1);
        }
        shared
    }

    /// Every name that starts with `prefix` (hex, lowercase).
    fn names_with(&self, prefix: &str, out: &mut Vec<Oid>) {
        let Ok(first) = u8::from_str_radix(&prefix[..2], 16) else {
            return;
        };
        let (start, end) = self.fanout(first);
        for i in start..end {
            let name = to_hex(self.name(i));
            if name.starts_with(prefix) {
                out.push(name);
            }
        }
    }

    /// The object at `offset`, its deltas applied. `odb` resolves the
    /// bases of reference deltas, which may be anywhere.
    fn object_at<'a>(
        &'a self,
        offset: u64,
        odb: &'a Odb,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Object, Error>> + Send + 'a>>
    {
        Box::pin(async move {
            if depth > 10_000 {
                return Err(corrupt("pack (delta chain too long)"));
            }
            if let Some(hit) = self.bases.lock().unwrap().get(&offset) {
                return Ok(hit.clone());
            }
            let data = self.entry(offset);
            let (kind, size, mut at) = entry_header(&data)?;
            let mut byte;
            let object = match kind {
                1..=4 => {
                    let body = inflate(&data[at..], size)?;
                    (kind_name(kind).unwrap().to_string(), Arc::new(body))
                }
                6 => {
                    byte = *data.get(at).ok_or_else(|| corrupt("pack"))?;
                    at += 1;
                    let mut back = u64::from(byte & 0x7f);
                    while byte & 0x80 != 0 {
                        byte = *data.get(at).ok_or_else(|| corrupt("pack"))?;
                        at += 1;
                        back = ((back + 1) << 7) | u64::from(byte & 0x7f);
                    }
                    let base_at = offset.checked_sub(back).ok_or_else(|| corrupt("pack"))?;
                    let delta = inflate(&data[at..], size)?;
                    let (kind, base) = self.object_at(base_at, odb, depth + 1).await?;
                    self.keep(base_at, (kind.clone(), base.clone()));
                    (kind, Arc::new(apply_delta(&base, &delta)?))
                }
                7 => {
                    let base_name = data.get(at..at + 20).ok_or_else(|| corrupt("pack"))?;
                    let base_oid = to_hex(base_name);
                    let delta = inflate(data.get(at + 20..).ok_or_else(|| corrupt("pack"))?, size)?;
                    let (kind, base) = odb.read_depth(&base_oid, depth + 1).await?;
                    (kind, Arc::new(apply_delta(&base, &delta)?))
                }
                _ => return Err(corrupt("pack (unknown object type)")),
            };
            Ok(object)
        })
    }

    /// The start of the object at `offset` (as much as `enough` needs),
    /// if it is stored whole; `None` for a delta, which needs its base.
    fn prefix_at(
        &self,
        offset: u64,
        enough: &dyn Fn(&[u8]) -> bool,
    ) -> Option<Result<Object, Error>> {
        let data = self.entry(offset);
        let (kind, size, at) = match entry_header(&data) {
            Ok(header) => header,
            Err(e) => return Some(Err(e)),
        };
        let kind = kind_name(kind)?;
        Some(
            inflate_until(&data[at..], size, Some(enough))
                .map(|body| (kind.to_string(), Arc::new(body))),
        )
    }

    /// The object stored at `offset`: its bytes up to the next object's
    /// (or the pack's trailing checksum).
    fn entry(&self, offset: u64) -> std::borrow::Cow<'_, [u8]> {
        if let PackData::Whole(bytes) = &self.data {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            return std::borrow::Cow::Borrowed(&bytes[start..]);
        }
        let ends = self.ends.get_or_init(|| {
            let mut offsets: Vec<u64> = (0..self.count).filter_map(|i| self.offset(i)).collect();
            offsets.sort_unstable();
            offsets
        });
        let end = match ends.binary_search(&offset) {
            Ok(i) => ends.get(i + 1).copied(),
            Err(i) => ends.get(i).copied(),
        }
        .unwrap_or_else(|| self.data.len().saturating_sub(20));
        let len = usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX);
        self.data
            .bytes(offset, len.min(MAX_OBJECT_BYTES as usize + 64))
    }

    fn keep(&self, offset: u64, object: Object) {
        let mut bases = self.bases.lock().unwrap();
        if bases.len() >= KEPT_BASES {
            bases.clear();
        }
        bases.insert(offset, object);
    }
}

fn inflate(compressed: &[u8], size: u64) -> Result<Vec<u8>, Error> {
    inflate_until(compressed, size, None)
}

/// A pack entry's header: its type (1–4 whole objects, 6 and 7 deltas),
/// its size once inflated, and where its data starts.
fn entry_header(data: &[u8]) -> Result<(u8, u64, usize), Error> {
    let mut at = 0usize;
    let mut byte = *data.get(at).ok_or_else(|| corrupt("pack"))?;
    at += 1;
    let kind = (byte >> 4) & 7;
    let mut size = u64::from(byte & 15);
    let mut shift = 4;
    while byte & 0x80 != 0 {
        byte = *data.get(at).ok_or_else(|| corrupt("pack"))?;
        at += 1;
        if shift > 60 {
            return Err(corrupt("pack"));
        }
        size |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    Ok((kind, size, at))
}

/// Whether the start of an object read so far is all that is needed.
type Enough<'a> = dyn Fn(&[u8]) -> bool + 'a;

/// A zlib stream that inflates to `size` bytes, whole (checked to be
/// `size` bytes); or, given `enough`, inflated a part at a time until it
/// says the bytes so far suffice.
fn inflate_until(
    compressed: &[u8],
    size: u64,
    enough: Option<&Enough<'_>>,
) -> Result<Vec<u8>, Error> {
    use flate2::{Decompress, FlushDecompress, Status};
    if size > MAX_OBJECT_BYTES {
        return Err(too_large(size));
    }
    let size = usize::try_from(size).map_err(|_| corrupt("pack"))?;
    // One inflater per thread, reset for each object: setting one up
    // (its 32 KiB window) costs more than inflating a commit.
    thread_local! {
        static INFLATER: std::cell::RefCell<Decompress> = std::cell::RefCell::new(Decompress::new(true));
    }
    // Asked for a part, a part of a few hundred bytes at a time.
    const PART: usize = 512;
    let partial = enough.is_some();
    INFLATER.with(|cell| {
        let mut inflater = cell.borrow_mut();
        inflater.reset(true);
        // Room for one byte past the size (a stream that says more is
        // caught, never followed), grown as it fills: a header may lie.
        let first = match partial {
            true => PART.min(size + 1),
            false => (size + 1).min(1 << 26),
        };
        let mut out = Vec::with_capacity(first);
        loop {
            if out.len() == out.capacity() {
                let step = match partial {
                    true => PART,
                    false => out.len().max(1 << 16),
                };
                out.reserve_exact((size + 1 - out.len()).min(step));
            }
            let read = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX);
            let input = compressed.get(read..).unwrap_or(&[]);
            let before = (inflater.total_in(), inflater.total_out());
            let status = inflater
                .decompress_vec(input, &mut out, FlushDecompress::Finish)
                .map_err(|_| corrupt("pack (bad zlib stream)"))?;
            if out.len() > size {
                return Err(corrupt("pack (object size)"));
            }
            match status {
                Status::StreamEnd => break,
                _ if (inflater.total_in(), inflater.total_out()) == before => {
                    return Err(corrupt("pack (bad zlib stream)"))
                }
                _ if enough.is_some_and(|enough| enough(&out)) => return Ok(out),
                _ => {}
            }
        }
        if out.len() != size {
            return Err(corrupt("pack (object size)"));
        }
        Ok(out)
    })
}

/// Git's delta: the sizes of base and result, then copies from the base
/// and literal inserts.
pub fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, Error> {
    let bad = || corrupt("delta");
    let mut at = 0;
    let varint = |at: &mut usize| -> Result<u64, Error> {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = *delta.get(*at).ok_or_else(bad)?;
            *at += 1;
            if shift > 60 {
                return Err(bad());
            }
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
    };
    let base_size = varint(&mut at)?;
    let result_size = varint(&mut at)?;
    if base_size != base.len() as u64 {
        return Err(bad());
    }
    if result_size > MAX_OBJECT_BYTES {
        return Err(too_large(result_size));
    }
    let mut out = Vec::with_capacity((result_size as usize).min(1 << 26));
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            let (mut offset, mut size) = (0usize, 0usize);
            for bit in 0..4 {
                if op & (1 << bit) != 0 {
                    offset |= usize::from(*delta.get(at).ok_or_else(bad)?) << (8 * bit);
                    at += 1;
                }
            }
            for bit in 0..3 {
                if op & (0x10 << bit) != 0 {
                    size |= usize::from(*delta.get(at).ok_or_else(bad)?) << (8 * bit);
                    at += 1;
                }
            }
            if size == 0 {
                size = 0x10000;
            }
            let end = offset.checked_add(size).ok_or_else(bad)?;
            out.extend_from_slice(base.get(offset..end).ok_or_else(bad)?);
        } else if op != 0 {
            let end = at + op as usize;
            out.extend_from_slice(delta.get(at..end).ok_or_else(bad)?);
            at = end;
        } else {
            return Err(bad());
        }
    }
    if out.len() as u64 != result_size {
        return Err(bad());
    }
    Ok(out)
}

/// The objects of one repository: its own directory and its alternates.
pub struct Odb {
    io: Arc<Io>,
    dirs: Vec<PathBuf>,
    all_dirs: OnceCell<Vec<PathBuf>>,
    /// The packs, read on first use and again after `add_pack`.
    packs: Mutex<Option<Arc<Vec<Pack>>>>,
}

impl Odb {
    pub fn new(io: Arc<Io>, objects: PathBuf) -> Odb {
        Odb {
            io,
            dirs: vec![objects],
            all_dirs: OnceCell::new(),
            packs: Mutex::new(None),
        }
    }

    /// This repository's object directory, then its alternates'.
    async fn all_dirs(&self) -> &[PathBuf] {
        self.all_dirs.get_or_init(|| self.read_alternates()).await
    }

    async fn read_alternates(&self) -> Vec<PathBuf> {
        let mut dirs = self.dirs.clone();
        let mut at = 0;
        // Alternates may name alternates of their own; git follows five deep.
        while at < dirs.len() && dirs.len() < 6 {
            let file = dirs[at].join("info/alternates");
            if let Ok(bytes) = self.io.read_file(&file).await {
                for line in String::from_utf8_lossy(&bytes).lines() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let dir = super::resolve(&dirs[at], line);
                    if !dirs.contains(&dir) {
                        dirs.push(dir);
                    }
                }
            }
            at += 1;
        }
        dirs
    }

    async fn packs(&self) -> Arc<Vec<Pack>> {
        if let Some(packs) = self.packs.lock().unwrap().as_ref() {
            return packs.clone();
        }
        let mut packs = Vec::new();
        for dir in self.all_dirs().await {
            let pack_dir = dir.join("pack");
            let Ok(entries) = self.io.read_dir(&pack_dir).await else {
                continue;
            };
            let mut names: Vec<String> = entries
                .into_iter()
                .map(|(name, _)| name)
                .filter(|n| n.ends_with(".idx"))
                .collect();
            names.sort();
            for name in names {
                let stem = name.trim_end_matches(".idx");
                let idx = self.io.read_file(&pack_dir.join(&name)).await;
                let pack = pack_dir.join(format!("{stem}.pack"));
                let data = PackData::open(&self.io, &pack).await;
                if let (Ok(idx), Ok(data)) = (idx, data) {
                    if let Ok(mut pack) = Pack::new(idx, data) {
                        (pack.dir, pack.stem) = (dir.clone(), stem.to_string());
                        packs.push(pack);
                    }
                }
            }
        }
        let packs = Arc::new(packs);
        *self.packs.lock().unwrap() = Some(packs.clone());
        packs
    }

    /// A pack about to arrive: written to `objects/pack/tmp_pack_*` as
    /// its parts come, as `git index-pack` does, so that it is never held
    /// whole in memory.
    #[cfg(feature = "network")]
    pub async fn incoming_pack(&self) -> Result<IncomingPack<'_>, Error> {
        let dir = self.dirs[0].join("pack");
        self.io.mkdir_all(&dir).await?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let suffix = to_hex(&Sha1::digest(format!("{nanos} {:p}", &dir))[..3]);
        Ok(IncomingPack {
            odb: self,
            path: dir.join(format!("tmp_pack_{suffix}")),
            dir,
            pending: Vec::new(),
            stored: 0,
        })
    }

    fn loose_path(dir: &Path, oid: &str) -> PathBuf {
        dir.join(&oid[..2]).join(&oid[2..])
    }

    pub async fn contains(&self, oid: &str) -> bool {
        let Some(name) = from_hex(oid) else {
            return false;
        };
        // The packs first: a lookup in memory, where a loose object costs a
        // call to the filesystem.
        if self.packs().await.iter().any(|p| p.find(&name).is_some()) {
            return true;
        }
        for dir in self.all_dirs().await {
            if self.io.exists(&Self::loose_path(dir, oid)).await {
                return true;
            }
        }
        false
    }

    pub async fn read(&self, oid: &str) -> Result<Object, Error> {
        self.read_depth(oid, 0).await
    }

    /// The start of an object, as much as `enough` needs of it (the
    /// headers of a commit, not its signature and message), where it is
    /// stored whole in a pack; else the whole object.
    pub async fn read_prefix(
        &self,
        oid: &str,
        enough: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Result<Object, Error> {
        let name = from_hex(oid).ok_or_else(|| bad(oid))?;
        for pack in self.packs().await.iter() {
            if let Some(i) = pack.find(&name) {
                let offset = pack.offset(i).ok_or_else(|| corrupt("pack index"))?;
                if let Some(object) = pack.prefix_at(offset, enough) {
                    return object;
                }
                break;
            }
        }
        self.read(oid).await
    }

    fn read_depth<'a>(
        &'a self,
        oid: &'a str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Object, Error>> + Send + 'a>>
    {
        Box::pin(async move {
            let name = from_hex(oid).ok_or_else(|| bad(oid))?;
            let packs = self.packs().await;
            for pack in packs.iter() {
                if let Some(i) = pack.find(&name) {
                    let offset = pack.offset(i).ok_or_else(|| corrupt("pack index"))?;
                    return pack.object_at(offset, self, depth).await;
                }
            }
            for dir in self.all_dirs().await {
                if let Ok(compressed) = self.io.read_file(&Self::loose_path(dir, oid)).await {
                    return parse_loose(&compressed, oid);
                }
            }
            Err(bad(oid))
        })
    }

    /// Writes an object loose (unless the database has it) and answers
    /// its name.
    pub async fn write(&self, kind: &str, body: &[u8]) -> Result<Oid, Error> {
        let oid = hash(kind, body);
        if self.contains(&oid).await {
            return Ok(oid);
        }
        let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(format!("{kind} {}\0", body.len()).as_bytes())
            .and_then(|()| encoder.write_all(body))
            .map_err(Error::Host)?;
        let compressed = encoder.finish().map_err(Error::Host)?;
        let path = Self::loose_path(&self.dirs[0], &oid);
        self.io
            .mkdir_all(path.parent().expect("objects/xx"))
            .await?;
        self.io.write_file(&path, &compressed).await?;
        // Git's objects are read-only once written.
        let _ = self.io.chmod(&path, 0o444).await;
        Ok(oid)
    }

    /// What abbreviates names in this database; `configured` is
    /// `core.abbrev` (`None` for git's default, `auto`).
    pub async fn abbrev(&self, configured: Option<usize>) -> Abbrev {
        let packs = self.packs().await;
        let len = configured.unwrap_or_else(|| {
            let count: usize = packs.iter().map(|p| p.count).sum();
            // git: the bits of the count, halved and rounded up, in hex digits.
            let bits = usize::BITS - count.leading_zeros();
            (bits as usize).div_ceil(2).max(7)
        });
        let mut loose = Vec::new();
        for dir in self.all_dirs().await {
            for (fan, _) in self.io.read_dir(dir).await.unwrap_or_default() {
                if fan.len() != 2 || !fan.bytes().all(|b| b.is_ascii_hexdigit()) {
                    continue;
                }
                for (rest, _) in self.io.read_dir(&dir.join(&fan)).await.unwrap_or_default() {
                    if let Some(name) = from_hex(&format!("{fan}{rest}")) {
                        loose.push(name);
                    }
                }
            }
        }
        loose.sort_unstable();
        Abbrev { len, packs, loose }
    }

    /// What `count-objects -v` counts of this repository's own object
    /// directory (not its alternates').
    pub async fn census(&self) -> Census {
        let mut census = Census::default();
        let dir = &self.dirs[0];
        let packs = self.packs().await;
        let local = |p: &&Pack| p.dir == *dir;
        for (fan, is_dir) in self.io.read_dir(dir).await.unwrap_or_default() {
            if !is_dir || fan.len() != 2 || !fan.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            for (rest, _) in self.io.read_dir(&dir.join(&fan)).await.unwrap_or_default() {
                let path = dir.join(&fan).join(&rest);
                let (size, disk) = self.io.sizes(&path).await.unwrap_or_default();
                match from_hex(&format!("{fan}{rest}")) {
                    Some(name) if rest.len() == 38 => {
                        census.loose += 1;
                        census.loose_disk += disk;
                        if packs.iter().filter(local).any(|p| p.find(&name).is_some()) {
                            census.packed_loose += 1;
                        }
                    }
                    _ => census.garbage.push((path, size)),
                }
            }
        }
        let pack_dir = dir.join("pack");
        let entries = self.io.read_dir(&pack_dir).await.unwrap_or_default();
        let names: HashSet<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        for (name, _) in &entries {
            let path = pack_dir.join(name);
            let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
            let has = |other: &str| names.contains(format!("{stem}.{other}").as_str());
            match ext {
                "idx" if has("pack") => {
                    let (idx, _) = self.io.sizes(&path).await.unwrap_or_default();
                    let (pack, _) = self
                        .io
                        .sizes(&pack_dir.join(format!("{stem}.pack")))
                        .await
                        .unwrap_or_default();
                    census.packs += 1;
                    census.pack_bytes += idx + pack;
                    census.in_pack += packs
                        .iter()
                        .filter(local)
                        .find(|p| p.stem == stem)
                        .map_or(0, |p| p.count as u64);
                }
                "pack" if has("idx") => {}
                "keep" | "bitmap" | "promisor" | "mtimes" | "rev" if has("pack") => {}
                _ if name.starts_with("tmp_") => {}
                _ => {
                    let (size, _) = self.io.sizes(&path).await.unwrap_or_default();
                    census.garbage.push((path, size));
                }
            }
        }
        census.alternates = self.all_dirs().await.len() > 1;
        census
    }

    /// Every object whose name starts with `prefix` (at least four hex
    /// digits), loose or packed.
    pub async fn names_with(&self, prefix: &str) -> Vec<Oid> {
        let mut found = Vec::new();
        if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return found;
        }
        let prefix = prefix.to_ascii_lowercase();
        for dir in self.all_dirs().await {
            for (name, _) in self
                .io
                .read_dir(&dir.join(&prefix[..2]))
                .await
                .unwrap_or_default()
            {
                let oid = format!("{}{}", &prefix[..2], name);
                if oid.len() == 40 && oid.starts_with(&prefix) {
                    found.push(oid);
                }
            }
        }
        for pack in self.packs().await.iter() {
            pack.names_with(&prefix, &mut found);
        }
        found.sort();
        found.dedup();
        found
    }
}

fn parse_loose(compressed: &[u8], oid: &str) -> Result<Object, Error> {
    let mut raw = Vec::new();
    // The header and the largest body read, and one byte more to know.
    ZlibDecoder::new(compressed)
        .take(MAX_OBJECT_BYTES + 64)
        .read_to_end(&mut raw)
        .map_err(|_| corrupt(&format!("object {oid}")))?;
    if raw.len() as u64 >= MAX_OBJECT_BYTES + 64 {
        return Err(too_large(raw.len() as u64));
    }
    let nul = raw
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| corrupt(&format!("object {oid}")))?;
    let header = String::from_utf8_lossy(&raw[..nul]).into_owned();
    let kind = header.split(' ').next().unwrap_or("").to_string();
    raw.drain(..=nul);
    Ok((kind, Arc::new(raw)))
}

/// A pack being received (`Odb::incoming_pack`): its parts appended to
/// its temporary file a megabyte at a time, then indexed from that file
/// and named as git names it, or removed.
#[cfg(feature = "network")]
pub struct IncomingPack<'a> {
    odb: &'a Odb,
    dir: PathBuf,
    path: PathBuf,
    pending: Vec<u8>,
    stored: u64,
}

#[cfg(feature = "network")]
impl IncomingPack<'_> {
    /// What is buffered before it is written.
    const PART: usize = 1 << 20;

    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= Self::PART {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Error> {
        if self.stored == 0 {
            self.odb.io.write_file(&self.path, &self.pending).await?;
        } else {
            self.odb.io.append_file(&self.path, &self.pending).await?;
        }
        self.stored += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// The pack indexed and kept as `pack-<name>.pack` beside its `.idx`;
    /// nothing of it is left when it is refused. A pack of no objects
    /// (a fetch that brings nothing new) is not kept.
    pub async fn keep(mut self) -> Result<(), Error> {
        let kept = self.index_and_name().await;
        if kept.is_err() {
            self.discard().await;
        }
        kept
    }

    async fn index_and_name(&mut self) -> Result<(), Error> {
        if self.stored == 0 && self.pending.get(8..12) == Some(&[0, 0, 0, 0]) {
            return Ok(());
        }
        let data = match self.stored {
            0 => PackData::Whole(std::mem::take(&mut self.pending)),
            _ => {
                self.flush().await?;
                PackData::open(&self.odb.io, &self.path).await?
            }
        };
        let indexed = super::pack::index(&data)?;
        let io = &self.odb.io;
        let stem = self.dir.join(format!("pack-{}", indexed.name));
        let (pack, idx) = (stem.with_extension("pack"), stem.with_extension("idx"));
        match data {
            PackData::Whole(bytes) if self.stored == 0 => io.write_file(&pack, &bytes).await?,
            _ => io.rename(&self.path, &pack).await?,
        }
        io.write_file(&idx, &indexed.idx).await?;
        for path in [&pack, &idx] {
            let _ = io.chmod(path, 0o444).await;
        }
        *self.odb.packs.lock().unwrap() = None;
        Ok(())
    }

    /// Its temporary file removed.
    pub async fn discard(self) {
        if self.stored > 0 {
            let _ = self.odb.io.remove(&self.path, false).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_inflates_whole_or_as_far_as_asked() {
        let body: Vec<u8> = (0..5000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&body).unwrap();
        let compressed = encoder.finish().unwrap();
        let size = body.len() as u64;
        assert_eq!(inflate(&compressed, size).unwrap(), body);
        let enough = |start: &[u8]| memchr::memmem::find(start, b"line 30\n").is_some();
        let start = inflate_until(&compressed, size, Some(&enough)).unwrap();
        assert!(start.len() < 2 * 512, "{}", start.len());
        assert!(body.starts_with(&start) && enough(&start));
        // Never enough: the whole stream, still held to its size.
        let never = |_: &[u8]| false;
        assert_eq!(
            inflate_until(&compressed, size, Some(&never)).unwrap(),
            body
        );
        assert!(inflate_until(&compressed, size - 1, Some(&never)).is_err());
        assert!(inflate(&compressed, size + 1).is_err());
    }

    #[test]
    fn a_delta_copies_and_inserts() {
        let base = b"hello, world";
        // base 12, result 11; copy 7 bytes from 0 ("hello, "), insert "git!"
        let delta = [12, 11, 0x90, 7, 4, b'g', b'i', b't', b'!'];
        assert_eq!(apply_delta(base, &delta).unwrap(), b"hello, git!");
    }

    #[test]
    fn a_delta_with_the_wrong_base_size_is_refused() {
        assert!(apply_delta(b"abc", &[4, 1, 1, b'x']).is_err());
        assert!(apply_delta(b"abc", &[3, 9, 0x90, 200]).is_err());
    }

    #[test]
    fn an_object_that_inflates_past_the_cap_is_refused() {
        // A delta that claims a result far larger than any object we read.
        let mut delta = vec![3];
        let mut size = MAX_OBJECT_BYTES + 1;
        while size >= 0x80 {
            delta.push((size as u8 & 0x7f) | 0x80);
            size >>= 7;
        }
        delta.push(size as u8);
        assert!(matches!(
            apply_delta(b"abc", &delta),
            Err(Error::TooLarge { .. })
        ));
        assert!(matches!(
            inflate(b"", MAX_OBJECT_BYTES + 1),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn hex_round_trips() {
        let oid = "ce013625030ba8dba906f756967f9e9ca394464a";
        assert_eq!(to_hex(&from_hex(oid).unwrap()), oid);
        assert!(from_hex("xyz").is_none());
    }
}
