//! `ExBashkit.Session.fork/2`: new sessions with a session's options,
//! shell state and files, the files shared until either side changes one.
//!
//! Queued behind the session's running script, like a snapshot, and run on
//! its interpreter thread: a fork sees the session between two scripts.

use std::sync::Arc;

use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::stop::StopSignal;
use rustler::{Encoder, Env, LocalPid, ResourceArc, Term};

use crate::jobs::{spawn_job, JobHandle, JobState};
use crate::session::SessionResource;

/// Replies `{:ok, [session]}` with `count` new sessions.
#[rustler::nif]
fn session_fork<'a>(
    session: ResourceArc<SessionResource>,
    count: usize,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<JobHandle>, String> {
    const FAILED: &str = "cannot fork the session";
    session.usable().map_err(|e| format!("{FAILED}: {e}"))?;
    let worker = interpreters()?.place(&session.worker);
    let job = move |handle: Arc<JobState>, stop: StopSignal| {
        stop.guard(async move {
            let bash = session.bash.lock().await;
            handle.started();
            let mut children = Vec::with_capacity(count);
            for _ in 0..count {
                let child = SessionResource::fork_of(&session, &bash)
                    .await
                    .map_err(|e| format!("{FAILED}: {e}"))?;
                children.push(child);
            }
            Ok::<_, String>(children)
        })
    };
    spawn_job(worker, pid, tag, job, encode)
}

fn encode(env: Env<'_>, children: Vec<SessionResource>) -> Term<'_> {
    children
        .into_iter()
        .map(ResourceArc::new)
        .collect::<Vec<_>>()
        .encode(env)
}
