//! `ExBashkit.Session.checkpoint/1`, `rollback/2` and `checkpoints/1`.
//!
//! Taking one and rolling back are queued behind the session's running
//! script, like a snapshot, and run on its interpreter thread: both see
//! the session between two scripts. Listing them answers at once.

use std::sync::Arc;

use ex_bashkit_core::runtime::interpreters;
use ex_bashkit_core::stop::StopSignal;
use rustler::{Encoder, Env, LocalPid, NifUntaggedEnum, ResourceArc, Term};

use crate::jobs::{spawn_job, JobHandle, JobState};
use crate::session::SessionResource;

/// `:take`, or the id of the checkpoint to roll back to.
#[derive(NifUntaggedEnum)]
pub enum Checkpointing {
    Take(rustler::Atom),
    Rollback(u64),
}

/// Replies `{:ok, id}` for a checkpoint taken, `{:ok, :ok}` for a
/// rollback, or `{:error, message}`.
#[rustler::nif]
fn session_checkpoint<'a>(
    session: ResourceArc<SessionResource>,
    operation: Checkpointing,
    pid: LocalPid,
    tag: Term<'a>,
) -> Result<ResourceArc<JobHandle>, String> {
    session.usable().map_err(|e| e.to_string())?;
    let worker = interpreters()?.place(&session.worker);
    let job = move |handle: Arc<JobState>, stop: StopSignal| {
        stop.guard(async move {
            let mut bash = session.bash.lock().await;
            handle.started();
            match operation {
                Checkpointing::Take(_) => Ok(Some(session.checkpoint(&bash))),
                Checkpointing::Rollback(id) => session.rollback(&mut bash, id).map(|()| None),
            }
        })
    };
    spawn_job(worker, pid, tag, job, encode)
}

fn encode(env: Env<'_>, taken: Option<u64>) -> Term<'_> {
    match taken {
        Some(id) => id.encode(env),
        None => crate::atoms::ok().encode(env),
    }
}

/// The ids of the session's checkpoints, oldest first (none for a session
/// not built yet).
#[rustler::nif]
fn session_checkpoints(session: ResourceArc<SessionResource>) -> Vec<u64> {
    if session.is_built() {
        session.checkpoint_ids()
    } else {
        Vec::new()
    }
}
