//! Sessions in the VM: a core [`Session`] held by Elixir as a resource
//! handle, with the Elixir process serving its running script's callbacks.

use std::ops::Deref;
use std::sync::Arc;

use ex_bashkit_core::callback::Channel;
use ex_bashkit_core::error::SessionError;
use ex_bashkit_core::options::{Extra, SessionOptions};
use ex_bashkit_core::session::{self, Session};
use rustler::{Encoder, Env, Resource, ResourceArc, Term};

use crate::callback::Callbacks;
use crate::convert::Protocol;

pub struct SessionResource {
    pub session: Session,
    pub callbacks: Arc<Callbacks>,
}

#[rustler::resource_impl]
impl Resource for SessionResource {}

impl Deref for SessionResource {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl SessionResource {
    /// Builds the session; its builtins and virtual_fs backends call the
    /// process serving each script (`callback.rs`).
    pub fn build(options: &SessionOptions) -> Result<Self, String> {
        Self::with_callbacks(|channel| {
            Session::build(options, channel, None, |_: &_, _: &_| Extra::none())
        })
    }

    /// Builds a session ahead of need, for the shelf of `prepared.rs`.
    pub fn build_shelved(options: &SessionOptions) -> Result<Self, String> {
        Self::with_callbacks(|channel| Session::build_shelved(options, channel))
    }

    fn with_callbacks(
        build: impl FnOnce(Channel) -> Result<Session, SessionError>,
    ) -> Result<Self, String> {
        let callbacks = Arc::new(Callbacks::default());
        let session = build(Channel::new(callbacks.clone()))?;
        Ok(Self { session, callbacks })
    }
}

/// Closes the session: its running script is cancelled and every later
/// call refused. Its memory goes when the last handle is collected.
#[rustler::nif]
fn session_close(session: ResourceArc<SessionResource>) -> rustler::Atom {
    session.close();
    crate::atoms::ok()
}

/// Builds a session without host mounts and with few entries (see
/// `ExBashkit.Session.Options.light?/1`): tens of microseconds of work, which
/// a normal scheduler takes faster than a hop to a dirty one (whose waking
/// doubled the cost). Returns `{:ok, session}` or `{:error, message}`,
/// encoded here because the interpreter inside is not `RefUnwindSafe`, which
/// rustler's return path wants.
#[rustler::nif]
fn session_new<'a>(env: Env<'a>, options: Protocol<SessionOptions>) -> Term<'a> {
    let Protocol(options) = options;
    if !options.mounts.is_empty() {
        return Err::<(), _>("host mounts need session_new_dirty/1").encode(env);
    }
    new_session(env, &options)
}

/// Builds a session with host mounts, which touch the host's disk.
#[rustler::nif(schedule = "DirtyIo")]
fn session_new_dirty<'a>(env: Env<'a>, options: Protocol<SessionOptions>) -> Term<'a> {
    let Protocol(options) = options;
    new_session(env, &options)
}

fn new_session<'a>(env: Env<'a>, options: &SessionOptions) -> Term<'a> {
    SessionResource::build(options)
        .map(ResourceArc::new)
        .encode(env)
}

/// The session's process-unique id, for `inspect/2`.
#[rustler::nif]
fn session_id(session: ResourceArc<SessionResource>) -> u64 {
    session.id
}

/// How many sessions are currently alive in this VM.
#[rustler::nif]
fn live_sessions() -> usize {
    session::live()
}
