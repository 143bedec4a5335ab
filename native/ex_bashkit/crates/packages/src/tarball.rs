//! An npm package's tarball, unpacked as npm unpacks it: the first path
//! component stripped, regular files only (links and devices skipped, so
//! nothing points outside the package), no path climbing out, modes
//! `0644` or `0755` for the package's own bins, `.gitignore` renamed
//! `.npmignore` unless one came first.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

#[derive(Debug)]
pub struct File {
    /// Inside the package's directory.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

/// npm's default umask.
const UMASK: u32 = 0o022;

/// The files of `tgz`, at most `budget` bytes of them unpacked. `bins` are
/// the package's bin paths (`bin/cli.js`), made executable.
pub fn unpack(tgz: &[u8], bins: &[String], budget: u64) -> Result<Vec<File>, String> {
    let gunzip = flate2::read::GzDecoder::new(tgz);
    // Headers and skipped entries count too: a bomb of them ends early.
    let inflated = budget.saturating_mul(2).saturating_add(1 << 20);
    let mut archive = tar::Archive::new(gunzip.take(inflated));
    let mut files: Vec<File> = Vec::new();
    let mut npmignores = HashSet::new();
    let mut total = 0u64;
    let entries = archive
        .entries()
        .map_err(|e| format!("not a tarball: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("a damaged tarball: {e}"))?;
        let kind = entry.header().entry_type();
        if !matches!(kind, tar::EntryType::Regular | tar::EntryType::Continuous) {
            continue;
        }
        let raw = entry
            .path()
            .map_err(|e| format!("a damaged tarball: {e}"))?;
        let Some(mut path) = inside(&raw) else {
            continue;
        };
        let size = entry.header().size().unwrap_or(0);
        total += size;
        if total > budget {
            return Err(format!("unpacks to more than {budget} bytes"));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| format!("a damaged tarball: {e}"))?;
        if path.file_name().is_some_and(|name| name == ".npmignore") {
            npmignores.insert(path.clone());
        } else if path.file_name().is_some_and(|name| name == ".gitignore") {
            let renamed = path.with_file_name(".npmignore");
            if npmignores.contains(&renamed) {
                continue;
            }
            path = renamed;
        }
        let mode = entry.header().mode().unwrap_or(0o644);
        let exe = match bins.iter().any(|bin| Path::new(bin) == path) {
            true => 0o111,
            false => 0,
        };
        let mode = ((mode | 0o666) & !UMASK & 0o7777) | exe | 0o600;
        // A later entry of the same path replaces the earlier, as tar does.
        files.retain(|file| file.path != path);
        files.push(File { path, bytes, mode });
    }
    Ok(files)
}

/// The entry's path below the package's root: the first component
/// stripped, `None` for the root itself or a path that climbs out.
fn inside(raw: &Path) -> Option<PathBuf> {
    let mut parts = raw
        .components()
        .filter(|c| !matches!(c, Component::RootDir | Component::CurDir));
    parts.next()?;
    let mut path = PathBuf::new();
    for part in parts {
        match part {
            Component::Normal(name) => path.push(name),
            _ => return None,
        }
    }
    (!path.as_os_str().is_empty()).then_some(path)
}

/// A bin path as npm normalizes it (`./bin/x.js` → `bin/x.js`); `None`
/// for one that leaves the package.
pub fn bin_path(given: &str) -> Option<String> {
    let mut path = PathBuf::new();
    for part in Path::new(given).components() {
        match part {
            Component::Normal(name) => path.push(name),
            Component::CurDir | Component::RootDir => {}
            _ => return None,
        }
    }
    let path = path.to_str()?.to_string();
    (!path.is_empty()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(entries: &[(&str, &[u8], u32, tar::EntryType)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, bytes, mode, kind) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(bytes.len() as u64);
            header.set_mode(*mode);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            // Written raw: the builder itself refuses `..`.
            let name = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *bytes).unwrap();
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn unpacks_as_npm_does() {
        use tar::EntryType::{Regular, Symlink};
        let tgz = tgz(&[
            ("package/package.json", b"{}", 0o600, Regular),
            ("package/bin/cli.js", b"#!", 0o644, Regular),
            ("package/run.sh", b"x", 0o775, Regular),
            ("package/.gitignore", b"ignored", 0o644, Regular),
            ("package/link", b"", 0o777, Symlink),
            ("package/../../escape", b"x", 0o644, Regular),
        ]);
        let files = unpack(&tgz, &["bin/cli.js".into()], 1 << 20).unwrap();
        let seen: Vec<(String, u32)> = files
            .iter()
            .map(|f| (f.path.display().to_string(), f.mode))
            .collect();
        assert_eq!(
            seen,
            [
                ("package.json".to_string(), 0o644),
                ("bin/cli.js".to_string(), 0o755),
                ("run.sh".to_string(), 0o755),
                (".npmignore".to_string(), 0o644),
            ]
        );
        assert!(unpack(&tgz, &[], 4)
            .unwrap_err()
            .contains("more than 4 bytes"));
        assert!(unpack(b"not gzip", &[], 100).is_err());
        assert_eq!(bin_path("./bin/x.js").as_deref(), Some("bin/x.js"));
        assert_eq!(bin_path("../x"), None);
    }
}
