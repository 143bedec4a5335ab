//! A persistent interpreter: one `Bash`, its filesystem, and everything a
//! session keeps between scripts. The NIF holds one as a resource, a worker
//! process holds its one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bashkit::{normalize_path, Bash, FileSystem};
use tokio::sync::Mutex;

use crate::call_scope::CallScope;
use crate::callback::Channel;
use crate::cancel::Running;
use crate::checkpoints::Checkpoints;
use crate::cow_fs::CowFs;
use crate::error::SessionError;
use crate::limits::LimitsExt;
use crate::network::Credentials;
use crate::options::{Egress, Extra, SessionOptions, SessionPlan, Storage};
use crate::policy::Gate;
use crate::run_stats::Totals;
use crate::runtime::interpreters;
use crate::tidy::Untidy;
use crate::written::Written;

/// One long-lived `Bash`. Scripts take the async mutex, so concurrent
/// `exec/2` calls queue in arrival order without holding any thread; file
/// operations go straight to `fs`, so they answer while a script runs.
pub struct Session {
    /// The interpreter thread this session's scripts run on; it moves when
    /// that thread is hogged (see `runtime.rs`).
    pub worker: AtomicUsize,
    pub bash: Mutex<Bash>,
    pub fs: Arc<dyn FileSystem>,
    /// Its own files (what `fs` holds outside its mounts), which a fork
    /// shares.
    pub files: Arc<CowFs>,
    /// What it was built with, for its forks.
    pub options: Arc<SessionOptions>,
    /// Its checkpoints; taken and rolled back to holding `bash`, between
    /// scripts.
    pub checkpoints: std::sync::Mutex<Checkpoints>,
    /// How this session's builtins and virtual_fs backends reach Elixir.
    pub callbacks: Arc<Channel>,
    /// Where `:virtual_fs` backends are mounted, normalized: the file API
    /// refuses these.
    pub virtual_mounts: Vec<PathBuf>,
    /// The largest snapshot `restore/3` decodes (`:max_snapshot_bytes`).
    pub max_snapshot_bytes: u64,
    /// Set when a script was dropped before it could be tidied after.
    pub untidy: Untidy,
    /// How deep a script may nest before it is parsed (`nesting.rs`).
    pub max_nesting: usize,
    /// The most one script may allocate (`memory.rs`).
    pub max_script_memory: usize,
    /// How long one of its scripts may run (`:timeout_ms`).
    pub timeout: Duration,
    /// Whether a caller may run this session's scripts' first polls itself
    /// (`inline.rs`): cleared for good when one of them took too long, or
    /// the session was given a script too big to be sure of.
    pub runs_inline: AtomicBool,
    /// Set when a script was frozen over its memory limit: it holds the
    /// interpreter for good, so nothing else may queue for it.
    pub frozen: Arc<AtomicBool>,
    /// The running script, for `cancel/1`.
    pub running: Running,
    /// The headers its requests carry (`:allow_net` entries with headers).
    pub credentials: Credentials,
    /// A call's `:env` and `:cwd`, to put back after it.
    pub call_scope: CallScope,
    /// `:max_stdout_bytes` and `:max_stderr_bytes`, for streamed output.
    pub output_caps: (usize, usize),
    /// Set by `ExBashkit.Session.close/1`: the session runs nothing more.
    pub closed: AtomicBool,
    /// `:max_file_bytes`: the largest file `read_file/2` returns.
    pub max_file_bytes: u64,
    /// The command policy in force (`policy.rs`).
    pub gate: Arc<Gate>,
    /// What its scripts cost, summed (`ExBashkit.Session.stats/1`).
    pub totals: Totals,
    /// Bytes written to its files and mounts, by anything.
    pub written: Written,
    /// Set while the session waits, built ahead, for a caller to take it
    /// (the NIF's `prepared.rs`): it is not counted as live until then.
    shelved: AtomicBool,
}

/// Sessions built and not yet freed: lets tests and benchmarks see that
/// garbage collection really releases interpreters.
static LIVE: AtomicUsize = AtomicUsize::new(0);

impl Drop for Session {
    fn drop(&mut self) {
        if !self.shelved.load(Ordering::Relaxed) {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Session {
    /// Builds the session's interpreter on a thread of the pool; its
    /// builtins and virtual_fs backends call out through `callbacks`;
    /// `extra` makes commands of the caller's own (a worker's `node` and
    /// `sqlite3`), which may call the builtins too, through the session's
    /// gate.
    pub fn build(
        options: &SessionOptions,
        callbacks: Channel,
        egress: Option<crate::options::Egress>,
        extra: impl FnOnce(&Arc<Channel>, &Arc<Gate>) -> Extra,
    ) -> Result<Self, SessionError> {
        Self::assemble(options, callbacks, egress, extra, false)
    }

    /// Builds a session ahead of need, shelved: not one of the [`live`]
    /// sessions until [`Session::unshelve`] hands it to a caller.
    pub fn build_shelved(
        options: &SessionOptions,
        callbacks: Channel,
    ) -> Result<Self, SessionError> {
        Self::assemble(options, callbacks, None, |_, _| Extra::none(), true)
    }

    fn assemble(
        options: &SessionOptions,
        callbacks: Channel,
        egress: Option<Egress>,
        extra: impl FnOnce(&Arc<Channel>, &Arc<Gate>) -> Extra,
        shelved: bool,
    ) -> Result<Self, SessionError> {
        let pool = interpreters()?;
        let worker = pool.assign();
        let options = Arc::new(options.clone());
        pool.block_on(
            worker,
            Self::assemble_on(worker, options, callbacks, egress, extra, shelved),
        )
    }

    /// A new session with this one's options, shell state and files, on
    /// the runtime it is called from: `bash` is this session's
    /// interpreter, held between scripts. The two share every file until
    /// one of them changes it; what either does from then on is its own.
    /// The profile is not run again: its effects are in what is copied.
    pub async fn fork(
        &self,
        bash: &Bash,
        callbacks: Channel,
        egress: Option<Egress>,
        extra: impl FnOnce(&Arc<Channel>, &Arc<Gate>) -> Extra,
    ) -> Result<Self, SessionError> {
        let state = bash.shell_state();
        let mut options = (*self.options).clone();
        options.profile = None;
        let worker = interpreters()?.assign();
        let mut child =
            Self::assemble_on(worker, Arc::new(options), callbacks, egress, extra, false).await?;
        child.files.share_from(&self.files);
        child.bash.get_mut().restore_shell_state(&state);
        child.options = self.options.clone();
        Ok(child)
    }

    async fn assemble_on(
        worker: usize,
        options: Arc<SessionOptions>,
        callbacks: Channel,
        egress: Option<Egress>,
        extra: impl FnOnce(&Arc<Channel>, &Arc<Gate>) -> Extra,
        shelved: bool,
    ) -> Result<Self, SessionError> {
        let callbacks = Arc::new(callbacks);
        let credentials = options.credentials();
        let gate = Gate::new(options.command_policy.clone());
        gate.ask_through(callbacks.clone());
        let extra = extra(&callbacks, &gate);
        let storage = Storage::new(&options);
        let bash = options
            .build(&callbacks, &credentials, egress, &gate, extra, &storage)
            .await?;
        let fs = bash.fs();
        let running = Running::new(bash.cancellation_token());
        let limits = options.limits.execution();
        if !shelved {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Self {
            worker: AtomicUsize::new(worker),
            bash: Mutex::new(bash),
            fs,
            files: storage.files,
            callbacks,
            virtual_mounts: options
                .virtual_fs
                .iter()
                .map(|mount| normalize_path(Path::new(mount)))
                .collect(),
            max_snapshot_bytes: options.limits.snapshot_bytes(),
            untidy: Untidy::default(),
            max_nesting: options.limits.nesting_depth(),
            max_script_memory: options.limits.script_memory(),
            timeout: limits.timeout,
            runs_inline: AtomicBool::new(true),
            frozen: Arc::new(AtomicBool::new(false)),
            running,
            credentials,
            call_scope: CallScope::default(),
            output_caps: (limits.max_stdout_bytes, limits.max_stderr_bytes),
            closed: AtomicBool::new(false),
            max_file_bytes: options.limits.filesystem().max_file_size,
            gate,
            options,
            checkpoints: Default::default(),
            totals: Totals::default(),
            written: storage.written,
            shelved: AtomicBool::new(shelved),
        })
    }

    /// Hands a shelved session over: from now on it counts as live.
    pub fn unshelve(&self) {
        if self.shelved.swap(false, Ordering::Relaxed) {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Refuses work for a session whose interpreter a frozen script holds.
    pub fn usable(&self) -> Result<(), SessionError> {
        self.open()?;
        if self.frozen.load(Ordering::Acquire) {
            return Err(SessionError::Frozen);
        }
        Ok(())
    }
}

impl Session {
    /// Checkpoints `bash`, this session's interpreter held between scripts
    /// (`checkpoints.rs`); returns the checkpoint's id. They may hold as
    /// many bytes the session no longer has as its filesystem may.
    pub fn checkpoint(&self, bash: &Bash) -> u64 {
        let budget = self.options.limits.filesystem().max_total_bytes;
        crate::sync::lock(&self.checkpoints).take(bash, &self.files, budget)
    }

    /// Puts checkpoint `id` back into `bash` and the session's files.
    pub fn rollback(&self, bash: &mut Bash, id: u64) -> Result<(), String> {
        crate::sync::lock(&self.checkpoints).rollback(id, bash, &self.files)
    }

    /// The ids of its checkpoints, oldest first.
    pub fn checkpoint_ids(&self) -> Vec<u64> {
        crate::sync::lock(&self.checkpoints).ids()
    }

    /// Closes the session: its running script is cancelled and every later
    /// call refused. Its memory goes when the last handle is dropped.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.running.cancel();
    }

    /// Refuses everything once the session was closed.
    pub fn open(&self) -> Result<(), SessionError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(SessionError::Closed);
        }
        Ok(())
    }
}

/// How many sessions are alive in this process.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}
