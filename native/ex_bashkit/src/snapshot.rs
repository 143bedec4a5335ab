//! `ExBashkit.Session.snapshot/2` and `restore/3`.
//!
//! Both are queued behind the session's running script, like `exec/2`, and
//! run on its interpreter thread: a snapshot is taken at a command boundary,
//! and a restore never lands in the middle of a script. bashkit validates a
//! whole snapshot (integrity tag or HMAC, format, limits, capabilities)
//! before it mutates anything, so a rejected restore leaves the session as
//! it was.

use bashkit::{Bash, SnapshotOptions};
use ex_bashkit_core::error;
use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::snapshot::{restore, take, RESTORE_FAILED, TAKE_FAILED};
use ex_bashkit_core::stop::StopSignal;
use rustler::{Binary, Encoder, Env, LocalPid, NifMap, ResourceArc, Term};
use std::sync::Arc;

use crate::jobs::{spawn_job, JobHandle, JobState};
use crate::session::SessionResource;
use crate::terms::bytes;

#[derive(NifMap)]
pub struct SnapshotOpts {
    exclude_filesystem: bool,
    exclude_functions: bool,
}

/// Replies `{:ok, bytes}`; keyed (HMAC-SHA256) when `key` is given.
#[rustler::nif]
fn session_snapshot<'a>(
    session: ResourceArc<SessionResource>,
    options: SnapshotOpts,
    key: Option<Binary<'a>>,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<JobHandle>, String> {
    let options = SnapshotOptions {
        exclude_filesystem: options.exclude_filesystem,
        exclude_functions: options.exclude_functions,
    };
    let key = owned(key);
    let take = move |bash: &mut Bash| take(bash, options, key.as_deref());
    queue(session, pid, tag, TAKE_FAILED, take, encode_bytes)
}

/// Replies `{:ok, :ok}` or `{:error, message}`; `key` must match the
/// snapshot's (none for an unkeyed one).
#[rustler::nif]
fn session_restore<'a>(
    session: ResourceArc<SessionResource>,
    snapshot: Binary<'a>,
    key: Option<Binary<'a>>,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<JobHandle>, String> {
    let snapshot = snapshot.as_slice().to_vec();
    let key = owned(key);
    let max_bytes = session.max_snapshot_bytes;
    let restore = move |bash: &mut Bash| restore(bash, &snapshot, key.as_deref(), max_bytes);
    queue(session, pid, tag, RESTORE_FAILED, restore, encode_ok)
}

fn encode_bytes(env: Env<'_>, snapshot: Vec<u8>) -> Term<'_> {
    bytes(env, &snapshot).encode(env)
}

fn encode_ok(env: Env<'_>, (): ()) -> Term<'_> {
    crate::atoms::ok().encode(env)
}

fn owned(key: Option<Binary>) -> Option<Vec<u8>> {
    key.map(|key| key.as_slice().to_vec())
}

/// Runs `work` on the session's interpreter, after the scripts queued
/// before it.
fn queue<'a, T, W>(
    session: ResourceArc<SessionResource>,
    pid: LocalPid,
    tag: Term<'a>,
    failure: &'static str,
    work: W,
    encode: for<'b> fn(Env<'b>, T) -> Term<'b>,
) -> Result<ResourceArc<JobHandle>, String>
where
    T: Send + 'static,
    W: FnOnce(&mut Bash) -> bashkit::Result<T> + Send + 'static,
{
    session.usable().map_err(|e| format!("{failure}: {e}"))?;
    let worker = interpreters()?.place(&session.worker);
    let job = move |handle: Arc<JobState>, stop: StopSignal| {
        stop.guard(async move {
            let mut bash = session.bash.lock().await;
            handle.started();
            work(&mut bash).map_err(|e| format!("{failure}: {}", error::message(&e)))
        })
    };
    spawn_job(worker, pid, tag, job, encode)
}
