//! `.git/index` in git's own format (`DIRC`, versions 2, 3 and 4), read
//! and written byte for byte as git lays it out: each entry's stat data,
//! mode, object name and flags (stage, assume-valid, skip-worktree,
//! intent-to-add), version 4's prefix-compressed paths, the extensions,
//! and the trailing SHA-1.
//!
//! Which extensions survive a write is the repository layer's decision
//! (`repo.rs`); this module only reads and writes them as bytes.
//!
//! Written here rather than taken from `gix-index`: it reads and writes
//! through host paths, and writes back only the extensions it models,
//! where we must refuse, not drop, one we cannot keep.

use sha1::{Digest, Sha1};

use super::error::Error;

/// What `lstat` said of a file when it was last staged.
pub use ex_bashkit_jail::host_tree::Stat;

pub const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const STAGE_MASK: u16 = 0x3000;
pub const SKIP_WORKTREE: u16 = 0x4000;
pub const INTENT_TO_ADD: u16 = 0x2000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: Vec<u8>,
    pub stat: Stat,
    pub mode: u32,
    pub oid: [u8; 20],
    /// 0 for a merged path, 1–3 for a conflict's base, ours and theirs.
    pub stage: u8,
    pub assume_valid: bool,
    /// Version 3's extended flags (`SKIP_WORKTREE`, `INTENT_TO_ADD`).
    pub extended: u16,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexFile {
    pub version: u32,
    pub entries: Vec<Entry>,
    /// Each extension's signature and bytes, in the file's order.
    pub extensions: Vec<([u8; 4], Vec<u8>)>,
}

fn corrupt(why: &str) -> Error {
    Error::CorruptIndex(why.to_string())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.at.checked_add(n).ok_or_else(|| corrupt("size"))?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| corrupt("truncated"))?;
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }

    /// Git's offset varint (version 4's strip count).
    fn varint(&mut self) -> Result<usize, Error> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .ok_or_else(|| corrupt("varint"))?
                | usize::from(byte & 0x7f);
        }
        Ok(value)
    }
}

impl IndexFile {
    pub fn parse(bytes: &[u8]) -> Result<IndexFile, Error> {
        if bytes.len() < 32 || &bytes[..4] != b"DIRC" {
            return Err(corrupt("bad signature"));
        }
        let body_end = bytes.len() - 20;
        let trailer = &bytes[body_end..];
        // `index.skipHash` writes zeros instead of the checksum.
        if trailer.iter().any(|&b| b != 0) && Sha1::digest(&bytes[..body_end])[..] != trailer[..] {
            return Err(corrupt("bad checksum"));
        }
        let mut r = Reader {
            bytes: &bytes[..body_end],
            at: 4,
        };
        let version = r.u32()?;
        if !(2..=4).contains(&version) {
            return Err(Error::CorruptIndex(format!("unknown version {version}")));
        }
        let count = r.u32()? as usize;
        let mut entries = Vec::with_capacity(count.min(1 << 20));
        let mut previous: Vec<u8> = Vec::new();
        for _ in 0..count {
            let start = r.at;
            let mut word = [0u32; 10];
            for w in &mut word {
                *w = r.u32()?;
            }
            let oid: [u8; 20] = r.take(20)?.try_into().unwrap();
            let flags = r.u16()?;
            let extended = if flags & EXTENDED != 0 {
                if version < 3 {
                    return Err(corrupt("extended flags in version 2"));
                }
                r.u16()?
            } else {
                0
            };
            let path = if version == 4 {
                let strip = r.varint()?;
                if strip > previous.len() {
                    return Err(corrupt("path prefix"));
                }
                let rest = &r.bytes[r.at..];
                let nul = rest
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or_else(|| corrupt("path"))?;
                let mut path = previous[..previous.len() - strip].to_vec();
                path.extend_from_slice(&rest[..nul]);
                r.at += nul + 1;
                path
            } else {
                let rest = &r.bytes[r.at..];
                let nul = rest
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or_else(|| corrupt("path"))?;
                let path = rest[..nul].to_vec();
                // Entries are padded with 1–8 NULs to a multiple of 8.
                let fixed = r.at - start;
                let len = (fixed + nul + 8) & !7;
                r.at = start + len;
                if r.at > r.bytes.len() {
                    return Err(corrupt("truncated"));
                }
                path
            };
            previous.clone_from(&path);
            entries.push(Entry {
                path,
                stat: Stat {
                    ctime: (word[0], word[1]),
                    mtime: (word[2], word[3]),
                    dev: word[4],
                    ino: word[5],
                    uid: word[7],
                    gid: word[8],
                    size: word[9],
                },
                mode: word[6],
                oid,
                stage: ((flags & STAGE_MASK) >> 12) as u8,
                assume_valid: flags & ASSUME_VALID != 0,
                extended,
            });
        }
        let mut extensions = Vec::new();
        while r.at < r.bytes.len() {
            let signature: [u8; 4] = r.take(4)?.try_into().unwrap();
            let size = r.u32()? as usize;
            extensions.push((signature, r.take(size)?.to_vec()));
        }
        Ok(IndexFile {
            version,
            entries,
            extensions,
        })
    }

    /// The file's bytes. Entries must already be in git's order (path
    /// bytes, then stage).
    pub fn render(&self) -> Vec<u8> {
        let needs_extended = self.entries.iter().any(|e| e.extended != 0);
        let version = match self.version {
            2 if needs_extended => 3,
            v => v.clamp(2, 4),
        };
        let mut out = Vec::with_capacity(64 + self.entries.len() * 80);
        out.extend_from_slice(b"DIRC");
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_be_bytes());
        let mut previous: &[u8] = &[];
        for entry in &self.entries {
            let start = out.len();
            let s = &entry.stat;
            for word in [
                s.ctime.0, s.ctime.1, s.mtime.0, s.mtime.1, s.dev, s.ino, entry.mode, s.uid, s.gid,
                s.size,
            ] {
                out.extend_from_slice(&word.to_be_bytes());
            }
            out.extend_from_slice(&entry.oid);
            let mut flags = (entry.path.len().min(0xfff) as u16) | (u16::from(entry.stage) << 12);
            if entry.assume_valid {
                flags |= ASSUME_VALID;
            }
            if entry.extended != 0 {
                flags |= EXTENDED;
            }
            out.extend_from_slice(&flags.to_be_bytes());
            if entry.extended != 0 {
                out.extend_from_slice(&entry.extended.to_be_bytes());
            }
            if version == 4 {
                let common = previous
                    .iter()
                    .zip(&entry.path)
                    .take_while(|(a, b)| a == b)
                    .count();
                write_varint(&mut out, previous.len() - common);
                out.extend_from_slice(&entry.path[common..]);
                out.push(0);
            } else {
                out.extend_from_slice(&entry.path);
                let len = (out.len() - start + 8) & !7;
                out.resize(start + len, 0);
            }
            previous = &entry.path;
        }
        for (signature, data) in &self.extensions {
            out.extend_from_slice(signature);
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(data);
        }
        let checksum = Sha1::digest(&out);
        out.extend_from_slice(&checksum);
        out
    }
}

/// The cache-tree extension (`TREE`): each directory's tree object where
/// it is known to match the index, by path (`""` the root, `"src/lib"`).
pub fn parse_cache_tree(data: &[u8]) -> std::collections::BTreeMap<String, [u8; 20]> {
    let mut valid = std::collections::BTreeMap::new();
    let mut at = 0;
    // (path prefix of the node, subtrees still to read there)
    let mut stack: Vec<(String, usize)> = Vec::new();
    while at < data.len() {
        let Some(nul) = data[at..].iter().position(|&b| b == 0) else {
            break;
        };
        let name = String::from_utf8_lossy(&data[at..at + nul]).into_owned();
        at += nul + 1;
        let Some(newline) = data[at..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let counts = String::from_utf8_lossy(&data[at..at + newline]).into_owned();
        at += newline + 1;
        let mut numbers = counts.split(' ');
        let (Some(entries), Some(subtrees)) = (
            numbers.next().and_then(|n| n.parse::<i64>().ok()),
            numbers.next().and_then(|n| n.parse::<usize>().ok()),
        ) else {
            break;
        };
        while stack.last().is_some_and(|(_, left)| *left == 0) {
            stack.pop();
        }
        let path = match stack.last_mut() {
            Some((parent, left)) => {
                *left -= 1;
                if parent.is_empty() {
                    name
                } else {
                    format!("{parent}/{name}")
                }
            }
            None => String::new(),
        };
        if entries >= 0 {
            let Some(oid) = data.get(at..at + 20) else {
                break;
            };
            valid.insert(path.clone(), oid.try_into().unwrap());
            at += 20;
        }
        stack.push((path, subtrees));
    }
    valid
}

/// One directory of a cache tree to write: its entry count (index
/// entries below it), its tree if known, its subdirectories.
pub struct CacheNode {
    pub name: String,
    pub entries: usize,
    pub oid: Option<[u8; 20]>,
    pub children: Vec<CacheNode>,
}

/// The `TREE` extension's bytes for `root`, children in git's order
/// (shorter names first, then bytes).
pub fn render_cache_tree(root: &CacheNode) -> Vec<u8> {
    fn write(node: &CacheNode, out: &mut Vec<u8>) {
        out.extend_from_slice(node.name.as_bytes());
        out.push(0);
        let count = match node.oid {
            Some(_) => node.entries as i64,
            None => -1,
        };
        out.extend_from_slice(format!("{count} {}\n", node.children.len()).as_bytes());
        if let Some(oid) = node.oid {
            out.extend_from_slice(&oid);
        }
        let mut children: Vec<&CacheNode> = node.children.iter().collect();
        children.sort_by(|a, b| a.name.len().cmp(&b.name.len()).then(a.name.cmp(&b.name)));
        for child in children {
            write(child, out);
        }
    }
    let mut out = Vec::new();
    write(root, &mut out);
    out
}

fn write_varint(out: &mut Vec<u8>, mut value: usize) {
    let mut bytes = [0u8; 16];
    let mut at = bytes.len() - 1;
    bytes[at] = (value & 0x7f) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        at -= 1;
        bytes[at] = 0x80 | (value & 0x7f) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&bytes[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, stage: u8, extended: u16) -> Entry {
        Entry {
            path: path.as_bytes().to_vec(),
            stat: Stat {
                mtime: (1_700_000_000, 5),
                size: 3,
                ..Stat::default()
            },
            mode: 0o100644,
            oid: [7; 20],
            stage,
            assume_valid: false,
            extended,
        }
    }

    #[test]
    fn every_version_round_trips() {
        for version in 2..=4 {
            let index = IndexFile {
                version,
                entries: vec![
                    entry("a.txt", 0, 0),
                    entry("src/deep/x.rs", 0, 0),
                    entry("src/deep/y.rs", 2, 0),
                    entry(&"long/".repeat(900), 0, 0),
                ],
                extensions: vec![(*b"TREE", b"\0-1 0\n".to_vec())],
            };
            let bytes = index.render();
            assert_eq!(
                IndexFile::parse(&bytes).unwrap(),
                index,
                "version {version}"
            );
        }
    }

    #[test]
    fn extended_flags_raise_version_2_to_3() {
        let index = IndexFile {
            version: 2,
            entries: vec![entry("a", 0, SKIP_WORKTREE)],
            extensions: vec![],
        };
        let parsed = IndexFile::parse(&index.render()).unwrap();
        assert_eq!(parsed.version, 3);
        assert_eq!(parsed.entries[0].extended, SKIP_WORKTREE);
    }

    #[test]
    fn a_damaged_index_is_refused() {
        let mut bytes = IndexFile {
            version: 2,
            entries: vec![entry("a", 0, 0)],
            extensions: vec![],
        }
        .render();
        bytes[20] ^= 1;
        assert!(matches!(
            IndexFile::parse(&bytes),
            Err(Error::CorruptIndex(why)) if why.contains("checksum")
        ));
        assert!(IndexFile::parse(b"DIRC").is_err());
    }

    #[test]
    fn cache_trees_round_trip() {
        let tree = CacheNode {
            name: String::new(),
            entries: 3,
            oid: Some([1; 20]),
            children: vec![
                CacheNode {
                    name: "src".into(),
                    entries: 2,
                    oid: None,
                    children: vec![CacheNode {
                        name: "lib".into(),
                        entries: 1,
                        oid: Some([3; 20]),
                        children: vec![],
                    }],
                },
                CacheNode {
                    name: "a".into(),
                    entries: 1,
                    oid: Some([2; 20]),
                    children: vec![],
                },
            ],
        };
        let bytes = render_cache_tree(&tree);
        // Shorter names first: "a" before "src".
        assert!(
            bytes.windows(3).position(|w| w == b"a\x001").unwrap()
                < bytes.windows(3).position(|w| w == b"src").unwrap()
        );
        let valid = parse_cache_tree(&bytes);
        assert_eq!(valid.get(""), Some(&[1; 20]));
        assert_eq!(valid.get("a"), Some(&[2; 20]));
        assert_eq!(valid.get("src"), None);
        assert_eq!(valid.get("src/lib"), Some(&[3; 20]));
    }

    #[test]
    fn varints_round_trip() {
        for value in [0, 1, 127, 128, 255, 16_511, 16_512, 1 << 30] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            let mut reader = Reader { bytes: &out, at: 0 };
            assert_eq!(reader.varint().unwrap(), value);
        }
    }
}
