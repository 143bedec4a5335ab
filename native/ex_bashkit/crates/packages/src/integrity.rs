//! What a download must hash to: npm's Subresource Integrity strings
//! (`sha512-<base64>`, several separated by spaces) and the hex digests
//! of Python's indexes (`sha256`).

use base64::Engine;
use sha2::Digest;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "sha1" => Self::Sha1,
            "sha256" => Self::Sha256,
            "sha384" => Self::Sha384,
            "sha512" => Self::Sha512,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Sha384 => "sha384",
            Self::Sha512 => "sha512",
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha1 => sha1::Sha1::digest(bytes).to_vec(),
            Self::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
            Self::Sha384 => sha2::Sha384::digest(bytes).to_vec(),
            Self::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
        }
    }
}

/// One expected digest: the strongest of those a string names, as npm
/// checks it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Integrity {
    pub algorithm: Algorithm,
    pub digest: Vec<u8>,
}

impl Integrity {
    /// An SRI string (`sha512-… sha1-…`); `None` when it names no digest
    /// we know.
    pub fn parse_sri(text: &str) -> Option<Self> {
        text.split_whitespace()
            .filter_map(|one| {
                let (name, encoded) = one.split_once('-')?;
                let algorithm = Algorithm::named(name)?;
                // Options after `?` are ignored, as in the SRI spec.
                let encoded = encoded.split('?').next().unwrap_or_default();
                let digest = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .ok()?;
                Some(Self { algorithm, digest })
            })
            .max_by_key(|one| one.algorithm)
    }

    /// A hex digest named by its algorithm (`sha256`, `…`).
    pub fn hex(algorithm: &str, hex: &str) -> Option<Self> {
        let algorithm = Algorithm::named(algorithm)?;
        if !hex.len().is_multiple_of(2) {
            return None;
        }
        let digest = (0..hex.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Self { algorithm, digest })
    }

    /// Whether `bytes` hash to it.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.algorithm.digest(bytes) == self.digest
    }

    /// The SRI form of the digest `bytes` have under this algorithm.
    pub fn sri_of(&self, bytes: &[u8]) -> String {
        let digest = self.algorithm.digest(bytes);
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        format!("{}-{encoded}", self.algorithm.name())
    }

    /// The SRI string of `bytes` under sha512, as npm records new packages.
    pub fn sha512_sri(bytes: &[u8]) -> String {
        let digest = Algorithm::Sha512.digest(bytes);
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        format!("sha512-{encoded}")
    }

    /// The name a cache stores it under: the algorithm and the hex digest.
    pub fn key(&self) -> String {
        let hex: String = self.digest.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}/{}/{}",
            self.algorithm.name(),
            &hex[..2.min(hex.len())],
            hex
        )
    }
}

impl std::fmt::Display for Integrity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&self.digest);
        write!(f, "{}-{encoded}", self.algorithm.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strongest_digest_is_checked() {
        let bytes = b"hello";
        let sri = format!(
            "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00= {}",
            Integrity::sha512_sri(bytes)
        );
        let integrity = Integrity::parse_sri(&sri).unwrap();
        assert_eq!(integrity.algorithm, Algorithm::Sha512);
        assert!(integrity.matches(bytes));
        assert!(!integrity.matches(b"hellO"));
        let sha1 = Integrity::parse_sri("sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00=").unwrap();
        assert!(sha1.matches(bytes));
        assert_eq!(Integrity::parse_sri("md5-abc"), None);
    }

    #[test]
    fn hex_digests() {
        let sha256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        let integrity = Integrity::hex("sha256", sha256).unwrap();
        assert!(integrity.matches(b"hello"));
        assert!(integrity.key().starts_with("sha256/2c/2cf24d"));
        assert_eq!(Integrity::hex("sha256", "zz"), None);
    }
}
