//! The zygote's socket address, for the zygote and its launcher alike (the
//! launcher, `bin/ex_bashkit_worker_stub.rs`, includes this file: it links
//! nothing else of the library).

use std::mem::{size_of, zeroed};

/// The abstract Unix socket address `name` (a leading NUL: nothing on the
/// filesystem) and its length, or `None` for a name that cannot be one.
pub fn abstract_address(name: &[u8]) -> Option<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: a zeroed sockaddr_un is valid.
    let mut address: libc::sockaddr_un = unsafe { zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    if name.is_empty() || name.contains(&0) || name.len() + 1 > address.sun_path.len() {
        return None;
    }
    for (slot, byte) in address.sun_path[1..].iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    let length = size_of::<libc::sa_family_t>() + 1 + name.len();
    Some((address, length as libc::socklen_t))
}
