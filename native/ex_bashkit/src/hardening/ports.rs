//! The TCP ports an `:allow_net` pattern can reach, for Landlock's
//! connect rules.

/// A URL pattern's port, or its scheme's (both web ports without one);
/// `None` when it cannot be told (a wildcard, an unknown scheme).
pub fn of_pattern(pattern: &str) -> Option<Vec<u16>> {
    let (scheme, rest) = match pattern.split_once("://") {
        Some((scheme, rest)) => (Some(scheme.to_ascii_lowercase()), rest),
        None => (None, pattern),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // The port follows the host's last ':' (an IPv6 host is in brackets).
    let host_end = authority.rfind(']').unwrap_or(0);
    match authority[host_end..].rsplit_once(':') {
        Some((_, port)) => port.parse().ok().map(|port| vec![port]),
        None => match scheme.as_deref() {
            Some("http") => Some(vec![80]),
            Some("https") => Some(vec![443]),
            None => Some(vec![80, 443]),
            Some(_) => None,
        },
    }
}
