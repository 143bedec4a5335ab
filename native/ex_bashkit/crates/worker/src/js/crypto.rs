//! `crypto.createHash` and `createHmac` in `node`.

/// The hex digest of `data` under `algorithm` (`sha256`, `sha512`, `sha1`,
/// `md5`), keyed (HMAC) when `key` is given; `None` for an unknown one.
pub fn digest(algorithm: &str, key: Option<&[u8]>, data: &[u8]) -> Option<String> {
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::Digest;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
    fn keyed<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> String {
        let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
        mac.update(data);
        hex(&mac.finalize().into_bytes())
    }
    Some(match (algorithm.to_ascii_lowercase().as_str(), key) {
        ("sha256", None) => hex(&sha2::Sha256::digest(data)),
        ("sha512", None) => hex(&sha2::Sha512::digest(data)),
        ("sha384", None) => hex(&sha2::Sha384::digest(data)),
        ("sha1", None) => hex(&sha1::Sha1::digest(data)),
        ("md5", None) => hex(&md5::Md5::digest(data)),
        ("sha256", Some(key)) => keyed::<Hmac<sha2::Sha256>>(key, data),
        ("sha512", Some(key)) => keyed::<Hmac<sha2::Sha512>>(key, data),
        ("sha384", Some(key)) => keyed::<Hmac<sha2::Sha384>>(key, data),
        ("sha1", Some(key)) => keyed::<Hmac<sha1::Sha1>>(key, data),
        ("md5", Some(key)) => keyed::<Hmac<md5::Md5>>(key, data),
        _ => return None,
    })
}

/// `size` bytes from the kernel's random source.
pub fn random_bytes(size: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; size];
    let mut filled = 0;
    while filled < size {
        // SAFETY: writes at most `size - filled` bytes past `filled`.
        let got = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), size - filled, 0) };
        if got > 0 {
            filled += got as usize;
            continue;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    Ok(bytes)
}
