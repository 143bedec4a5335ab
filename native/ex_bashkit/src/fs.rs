//! The session filesystem API (`read_file/2`, `write_file/3`, ...) as
//! NIFs on dirty I/O schedulers; the work is the core's `fs.rs`.

use ex_bashkit_core::fs::{self, FsResult};
use ex_bashkit_protocol::outcome::{Entry, Listed};
use rustler::{Binary, Encoder, Env, ResourceArc, Term};

use crate::atoms;
use crate::convert::Protocol;
use crate::session::SessionResource;
use crate::terms::{bytes, protocol};

/// The reply of an operation with no value: `:ok` or `{:error, message}`.
pub struct Done(FsResult<()>);

impl Encoder for Done {
    fn encode<'a>(&self, env: Env<'a>) -> Term<'a> {
        match &self.0 {
            Ok(()) => atoms::ok().encode(env),
            Err(message) => (atoms::error(), message).encode(env),
        }
    }
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_read_file<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    path: String,
) -> FsResult<Binary<'a>> {
    Ok(bytes(env, &fs::read_file(&session, &path)?))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_write_file(
    session: ResourceArc<SessionResource>,
    path: String,
    content: Binary,
) -> Done {
    Done(fs::write_file(&session, &path, &content))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_list_dir<'a>(
    env: Env<'a>,
    session: ResourceArc<SessionResource>,
    path: String,
) -> FsResult<Term<'a>> {
    let entries = fs::list_dir(&session, &path)?;
    let listed: Vec<Listed> = entries
        .iter()
        .map(|(name, entry)| Listed(name, entry))
        .collect();
    Ok(protocol(env, &listed))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_mkdir(session: ResourceArc<SessionResource>, path: String, parents: bool) -> Done {
    Done(fs::mkdir(&session, &path, parents))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_remove(session: ResourceArc<SessionResource>, path: String, recursive: bool) -> Done {
    Done(fs::remove(&session, &path, recursive))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_rename(
    session: ResourceArc<SessionResource>,
    from: String,
    to: String,
    overwrite: bool,
) -> Done {
    Done(fs::rename(&session, &from, &to, overwrite))
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_stat(session: ResourceArc<SessionResource>, path: String) -> FsResult<Protocol<Entry>> {
    fs::stat(&session, &path).map(Protocol)
}

#[rustler::nif(schedule = "DirtyIo")]
fn session_chmod(
    session: ResourceArc<SessionResource>,
    path: String,
    mode: u32,
    recursive: bool,
) -> Done {
    Done(fs::chmod(&session, &path, mode, recursive))
}
