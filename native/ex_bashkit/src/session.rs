//! Sessions in the VM: a core [`Session`] held by Elixir as a resource
//! handle, with the Elixir process serving its running script's callbacks.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use ex_bashkit_core::callback::Channel;
use ex_bashkit_core::error::SessionError;
use ex_bashkit_core::options::{Extra, SessionOptions};
use ex_bashkit_core::run_stats::RunStats;
use ex_bashkit_core::session::{self, Session};
use ex_bashkit_protocol::outcome::Stats;
use rustler::{Encoder, Env, Resource, ResourceArc, Term};

use crate::callback::Callbacks;
use crate::convert::Protocol;

pub struct SessionResource {
    /// Process-unique, for `inspect/2`; given before the interpreter is
    /// built, so that reading it never waits for one.
    pub id: u64,
    pub callbacks: Arc<Callbacks>,
    interpreter: Arc<Interpreter>,
}

#[rustler::resource_impl]
impl Resource for SessionResource {}

/// A session's interpreter: built, or to be built from `options` by
/// whichever comes first, the refill thread of `prepared.rs` or the
/// session's first call (which then waits for at most one build, what
/// `Session.new()` cost without a shelf).
pub struct Interpreter {
    session: OnceLock<Session>,
    /// Options known to build (sessions were built with them before).
    options: Option<Arc<SessionOptions>>,
    callbacks: Arc<Callbacks>,
}

impl Interpreter {
    /// The session, built now if nobody has built it yet.
    fn get(&self) -> &Session {
        self.session.get_or_init(|| {
            let options = self
                .options
                .as_ref()
                .expect("an interpreter without a session has options");
            // Options that built before build again: what could fail
            // (mounts, a profile) is not on a shelf (`InVM.light?`).
            build(options, self.callbacks.clone(), false)
                .unwrap_or_else(|message| panic!("a deferred session failed to build: {message}"))
        })
    }

    /// Builds the session if no caller did, for the refill thread.
    pub fn build_now(&self) {
        self.get();
    }
}

impl Deref for SessionResource {
    type Target = Session;

    fn deref(&self) -> &Session {
        self.interpreter.get()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl SessionResource {
    /// Builds the session; its builtins and virtual_fs backends call the
    /// process serving each script (`callback.rs`).
    pub fn build(options: &SessionOptions) -> Result<Self, String> {
        Self::built(options, false)
    }

    /// Builds a session ahead of need, for the shelf of `prepared.rs`.
    pub fn build_shelved(options: &SessionOptions) -> Result<Self, String> {
        Self::built(options, true)
    }

    fn built(options: &SessionOptions, shelved: bool) -> Result<Self, String> {
        let callbacks = Arc::new(Callbacks::default());
        let session = build(options, callbacks.clone(), shelved)?;
        Ok(Self::with(callbacks, OnceLock::from(session), None))
    }

    /// A session whose interpreter is built later, from `options` that
    /// built before; the refill thread holds the returned handle weakly.
    pub fn deferred(options: Arc<SessionOptions>) -> (Self, std::sync::Weak<Interpreter>) {
        let resource = Self::with(
            Arc::new(Callbacks::default()),
            OnceLock::new(),
            Some(options),
        );
        let interpreter = Arc::downgrade(&resource.interpreter);
        (resource, interpreter)
    }

    fn with(
        callbacks: Arc<Callbacks>,
        session: OnceLock<Session>,
        options: Option<Arc<SessionOptions>>,
    ) -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            interpreter: Arc::new(Interpreter {
                session,
                options,
                callbacks: callbacks.clone(),
            }),
            callbacks,
        }
    }

    /// A fork of `parent`, whose interpreter `bash` the caller holds
    /// (`fork.rs`); its callbacks reach whoever runs its own scripts.
    pub async fn fork_of(parent: &Session, bash: &bashkit::Bash) -> Result<Self, SessionError> {
        let callbacks = Arc::new(Callbacks::default());
        let channel = Channel::new(callbacks.clone());
        let none = |_: &_, _: &_| Extra::none();
        let child = parent.fork(bash, channel, None, none).await?;
        Ok(Self::with(callbacks, OnceLock::from(child), None))
    }

    /// Whether the interpreter is built (a deferred one may not be yet).
    pub fn is_built(&self) -> bool {
        self.interpreter.session.get().is_some()
    }
}

fn build(
    options: &SessionOptions,
    callbacks: Arc<Callbacks>,
    shelved: bool,
) -> Result<Session, String> {
    let channel = Channel::new(callbacks);
    let session: Result<Session, SessionError> = if shelved {
        Session::build_shelved(options, channel)
    } else {
        Session::build(options, channel, None, |_: &_, _: &_| Extra::none())
    };
    Ok(session?)
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

/// Whether the session's interpreter is built: one handed over in a burst
/// may not be yet (`prepared.rs`). For benchmarks and tests.
#[rustler::nif]
fn session_built(session: ResourceArc<SessionResource>) -> bool {
    session.is_built()
}

/// What the session's scripts cost, summed: `{wall_us, cpu_us,
/// peak_memory_bytes, commands, runs}` (nothing yet for one not built).
#[rustler::nif]
fn session_stats(env: Env<'_>, session: ResourceArc<SessionResource>) -> Term<'_> {
    let totals = if session.is_built() {
        session.totals.get()
    } else {
        RunStats::default()
    };
    crate::terms::protocol(env, &Stats::from(totals))
}

/// How many sessions are currently alive in this VM.
#[rustler::nif]
fn live_sessions() -> usize {
    session::live()
}
