//! The host's store of downloaded packages, shared by every session: each
//! file named by its digest, so a lockfile's hundredth install copies
//! instead of downloading. Only what hashed to its name is stored, and
//! what is read is hashed again (another process may share the
//! directory), so a session can never be handed what its lockfile did
//! not name.

use std::path::PathBuf;

use crate::integrity::Integrity;

#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The stored bytes for `integrity`, if they still hash to it.
    pub fn get(&self, integrity: &Integrity) -> Option<Vec<u8>> {
        let path = self.dir.join(integrity.key());
        let bytes = std::fs::read(&path).ok()?;
        if integrity.matches(&bytes) {
            return Some(bytes);
        }
        // Damaged or planted: gone, and fetched again.
        let _ = std::fs::remove_file(&path);
        None
    }

    /// Keeps `bytes` under `integrity` when they hash to it. A store that
    /// fails (a full disk, no permission) costs the next install a
    /// download, nothing more.
    pub fn put(&self, integrity: &Integrity, bytes: &[u8]) {
        if !integrity.matches(bytes) {
            return;
        }
        let path = self.dir.join(integrity.key());
        let Some(parent) = path.parent() else {
            return;
        };
        if std::fs::create_dir_all(parent).is_err() {
            return;
        }
        // Written aside and renamed: a reader sees the whole file or none.
        let aside = parent.join(format!(
            ".{}.{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        if std::fs::write(&aside, bytes).is_ok() && std::fs::rename(&aside, &path).is_ok() {
            return;
        }
        let _ = std::fs::remove_file(&aside);
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_only_what_hashes_to_its_name_and_drops_what_changed() {
        let dir =
            std::env::temp_dir().join(format!("ex_bashkit_cache_test_{}", std::process::id()));
        let cache = Cache::new(&dir);
        let integrity = Integrity::parse_sri(&Integrity::sha512_sri(b"package")).unwrap();
        assert_eq!(cache.get(&integrity), None);
        cache.put(&integrity, b"not the package");
        assert_eq!(cache.get(&integrity), None);
        cache.put(&integrity, b"package");
        assert_eq!(cache.get(&integrity).as_deref(), Some(&b"package"[..]));
        std::fs::write(dir.join(integrity.key()), b"planted").unwrap();
        assert_eq!(cache.get(&integrity), None);
        assert!(!dir.join(integrity.key()).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
