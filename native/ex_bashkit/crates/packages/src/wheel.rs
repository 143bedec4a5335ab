//! A wheel (a zip of a package's installed files) unpacked as pip
//! installs it: `*.data/purelib` and `platlib` into site-packages,
//! `scripts` into the prefix's `bin`, `data` under the prefix; nothing
//! outside them; pip's `INSTALLER` and `REQUESTED` added to the
//! `.dist-info` and to its `RECORD`.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use sha2::Digest;

pub struct File {
    /// Where it goes, from the filesystem's root.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

/// Whether a wheel's file name says it is pure Python for Python 3
/// (`name-1.0-py3-none-any.whl`).
pub fn pure(filename: &str) -> bool {
    let Some(stem) = filename.strip_suffix(".whl") else {
        return false;
    };
    let parts: Vec<&str> = stem.split('-').collect();
    let [.., python, abi, platform] = parts.as_slice() else {
        return false;
    };
    *abi == "none"
        && *platform == "any"
        && python
            .split('.')
            .any(|tag| tag == "py3" || tag.starts_with("py3"))
}

/// The files of `wheel`, at most `budget` bytes of them, placed for
/// `site` (site-packages) and `prefix`; `requested` marks a package asked
/// for by name.
pub fn unpack(
    wheel: &[u8],
    site: &Path,
    prefix: &Path,
    requested: bool,
    budget: u64,
) -> Result<Vec<File>, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel))
        .map_err(|e| format!("not a wheel: {e}"))?;
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut dist_info = None;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| format!("a damaged wheel: {e}"))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_string();
        let Some(relative) = plain(&name) else {
            return Err(format!("a wheel entry outside the package: {name:?}"));
        };
        total += entry.size();
        if total > budget {
            return Err(format!("unpacks to more than {budget} bytes"));
        }
        let mut bytes = Vec::new();
        (&mut entry)
            .take(budget + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("a damaged wheel: {e}"))?;
        let executable = entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0);
        let mut parts = relative.components();
        let first = parts
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default()
            .to_string();
        let path = match first.ends_with(".data") {
            true => {
                let scheme = parts
                    .next()
                    .and_then(|c| c.as_os_str().to_str())
                    .unwrap_or_default();
                let rest: PathBuf = parts.collect();
                match scheme {
                    "purelib" | "platlib" => site.join(rest),
                    "scripts" => prefix.join("bin").join(rest),
                    "data" => prefix.join(rest),
                    "headers" => prefix.join("include").join(rest),
                    other => return Err(format!("a wheel scheme pip does not know: {other:?}")),
                }
            }
            false => {
                if first.ends_with(".dist-info") && parts.clone().count() == 1 {
                    dist_info = Some(first.clone());
                }
                site.join(&relative)
            }
        };
        let mode = match executable || path.starts_with(prefix.join("bin")) {
            true => 0o755,
            false => 0o644,
        };
        files.push(File { path, bytes, mode });
    }
    let dist_info = dist_info.ok_or("a wheel without a .dist-info directory")?;
    let dir = site.join(&dist_info);
    let mut added = vec![(dir.join("INSTALLER"), b"pip\n".to_vec())];
    if requested {
        added.push((dir.join("REQUESTED"), Vec::new()));
    }
    let record = dir.join("RECORD");
    if let Some(file) = files.iter_mut().find(|f| f.path == record) {
        for (path, bytes) in &added {
            let digest = sha2::Sha256::digest(bytes);
            let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            let relative = path
                .strip_prefix(site)
                .unwrap_or(path)
                .display()
                .to_string();
            let line = format!("{relative},sha256={encoded},{}\n", bytes.len());
            if !file.bytes.ends_with(b"\n") && !file.bytes.is_empty() {
                file.bytes.push(b'\n');
            }
            file.bytes.extend_from_slice(line.as_bytes());
        }
    }
    files.extend(added.into_iter().map(|(path, bytes)| File {
        path,
        bytes,
        mode: 0o644,
    }));
    Ok(files)
}

fn plain(name: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for part in Path::new(name).components() {
        match part {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!path.as_os_str().is_empty()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn unpacks_as_pip_does() {
        assert!(pure("six-1.16.0-py2.py3-none-any.whl"));
        assert!(!pure("PyYAML-6.0.2-cp314-cp314-manylinux_2_17_x86_64.whl"));
        let site = Path::new("/site");
        let prefix = Path::new("/usr/local");
        let wheel = wheel(&[
            ("six.py", b"x = 1"),
            ("six-1.0.dist-info/METADATA", b"Name: six"),
            ("six-1.0.dist-info/RECORD", b"six.py,,\n"),
            ("six-1.0.data/scripts/tool", b"#!python"),
        ]);
        let files = unpack(&wheel, site, prefix, true, 1 << 20).unwrap();
        let paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "/site/six.py",
                "/site/six-1.0.dist-info/METADATA",
                "/site/six-1.0.dist-info/RECORD",
                "/usr/local/bin/tool",
                "/site/six-1.0.dist-info/INSTALLER",
                "/site/six-1.0.dist-info/REQUESTED"
            ]
        );
        let record = String::from_utf8(files[2].bytes.clone()).unwrap();
        assert!(
            record.contains("six-1.0.dist-info/INSTALLER,sha256="),
            "{record}"
        );
        let escape = wheel_with_escape();
        assert!(unpack(&escape, site, prefix, false, 1 << 20).is_err());
    }

    fn wheel_with_escape() -> Vec<u8> {
        wheel(&[("../../etc/passwd", b"x")])
    }
}
