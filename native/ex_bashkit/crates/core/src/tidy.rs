//! Keeping a session usable after a script that ended badly.
//!
//! Two kinds of state outlive a script in bashkit 0.20 and break the next
//! one (upstream bugs we work around here):
//!
//! * Background jobs. `exec` waits for every job before it returns, so a
//!   `sleep 100000 &` makes it run into its timeout; the job stays in the
//!   job table and every later `exec` waits for it again.
//! * A pending expansion error. After `set -u; $P"${}"` the first error is
//!   reported and the second is kept, to be reported by whatever command
//!   runs next: the next script's first command fails with
//!   `P: unbound variable`.
//!
//! So after a script that failed (an error, or a non-zero exit), the session
//! runs a short tidy-up script of its own before the next script can start,
//! holding the session's lock: it drains a pending error, and after an
//! error it kills what is left in the job table. (`$?` and `set` options
//! are reset by bashkit at every `exec` anyway, so the tidy-up changes
//! nothing a script can see.) A script
//! dropped mid-way (its caller died) cannot be tidied after; the session is
//! marked and tidied before its next script.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bashkit::Bash;

/// Per session: whether a script was dropped before it could be tidied after.
#[derive(Default)]
pub struct Untidy(AtomicBool);

/// One script's tidy-up duty. Dropped without [`Tidy::after`] (the script
/// was cancelled), it leaves the session marked.
pub struct Tidy<'a> {
    untidy: &'a Untidy,
    armed: bool,
}

impl<'a> Tidy<'a> {
    /// Tidies up after an earlier dropped script, then arms for this one.
    pub async fn before(untidy: &'a Untidy, bash: &mut Bash) -> Tidy<'a> {
        if untidy.0.swap(false, Ordering::AcqRel) {
            after_error(bash).await;
        }
        Tidy {
            untidy,
            armed: true,
        }
    }

    /// Tidies up after this script, given how it ended.
    /// `outcome` is the script's exit status, or its error.
    pub async fn after<E>(mut self, bash: &mut Bash, outcome: Result<i32, E>) {
        self.armed = false;
        match outcome {
            Ok(0) => {}
            // bashkit waited for every job before it answered. The drain
            // costs an exec (about 7 µs); stderr cannot tell when it is
            // needed, since a spilled error need not have printed anything.
            Ok(_failed) => drain(bash).await,
            Err(_) => after_error(bash).await,
        }
    }
}

/// Jobs may be left, and a pending error would abort the script that kills
/// them (its first command reports the error instead): kill, drain, kill.
async fn after_error(bash: &mut Bash) {
    kill_jobs(bash).await;
    drain(bash).await;
    kill_jobs(bash).await;
}

impl Drop for Tidy<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.untidy.0.store(true, Ordering::Release);
        }
    }
}

/// How long a tidy-up script may take. Every `exec` waits for the jobs in
/// the table before it returns, so one that could not kill them would
/// otherwise wait out a whole `:timeout_ms`.
const TIDY_TIMEOUT: Duration = Duration::from_millis(100);

/// Lets a pending expansion error fire on a command of ours.
async fn drain(bash: &mut Bash) {
    let _ = tokio::time::timeout(TIDY_TIMEOUT, bash.exec(":")).await;
}

/// Background jobs left behind by a script that did not finish.
async fn kill_jobs(bash: &mut Bash) {
    let kill = bash.exec("kill -9 $(jobs -p) 2>/dev/null; :");
    let _ = tokio::time::timeout(TIDY_TIMEOUT, kill).await;
}
