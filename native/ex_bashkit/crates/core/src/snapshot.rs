//! Taking and restoring a session's snapshot, on its interpreter thread
//! behind its running script (the NIF's `snapshot.rs`, a worker's requests).
//!
//! bashkit validates a whole snapshot (integrity tag or HMAC, format,
//! limits, capabilities) before it mutates anything, so a rejected restore
//! leaves the session as it was.

use bashkit::{Bash, SnapshotOptions};

use crate::snapshot_bound;

pub const TAKE_FAILED: &str = "cannot take a snapshot";
pub const RESTORE_FAILED: &str = "cannot restore the snapshot";

/// Takes a snapshot of `bash`, sealed under `key` if there is one.
pub fn take(
    bash: &mut Bash,
    options: SnapshotOptions,
    key: Option<&[u8]>,
) -> bashkit::Result<Vec<u8>> {
    match key {
        Some(key) => bash.snapshot_to_bytes_keyed_with_options(key, options),
        None => bash.snapshot_with_options(options),
    }
}

/// Restores `snapshot` into `bash` if it decodes within `max_bytes` (and
/// opens under `key`); otherwise `bash` is left as it was.
pub fn restore(
    bash: &mut Bash,
    snapshot: &[u8],
    key: Option<&[u8]>,
    max_bytes: u64,
) -> bashkit::Result<()> {
    snapshot_bound::check(snapshot, max_bytes)
        .map_err(|error| bashkit::Error::CommandFailure(error.to_string()))?;
    match key {
        Some(key) => bash.restore_snapshot_keyed(snapshot, key),
        None => bash.restore_snapshot(snapshot),
    }
}
