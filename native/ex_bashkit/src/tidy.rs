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

use bashkit::{Bash, ExecResult};

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
            drain(bash).await;
            kill_jobs(bash).await;
        }
        Tidy {
            untidy,
            armed: true,
        }
    }

    /// Tidies up after this script, given how it ended.
    pub async fn after(mut self, bash: &mut Bash, outcome: &Result<ExecResult, String>) {
        self.armed = false;
        match outcome {
            Ok(result) if result.exit_code == 0 => {}
            Ok(_failed) => drain(bash).await,
            Err(_) => {
                drain(bash).await;
                kill_jobs(bash).await;
            }
        }
    }
}

impl Drop for Tidy<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.untidy.0.store(true, Ordering::Release);
        }
    }
}

/// Lets a pending expansion error fire on a command of ours.
async fn drain(bash: &mut Bash) {
    let _ = bash.exec(":").await;
}

/// Background jobs left behind by a script that did not finish.
async fn kill_jobs(bash: &mut Bash) {
    let _ = bash.exec("kill -9 $(jobs -p) 2>/dev/null; :").await;
}
