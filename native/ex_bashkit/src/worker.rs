//! The worker process behind `isolation: :process` sessions.
//!
//! One session's interpreter lives here, in an OS process the VM starts as
//! a Port (`ExBashkit.Worker`) and kills when a script outlives its
//! deadline, is frozen over its memory cap, or the session is dropped: the
//! kernel takes back everything the script held. The code that runs the
//! session is the NIF's own (`session.rs`, `exec.rs`, `fs.rs`,
//! `snapshot.rs`); only the way answers travel differs.
//!
//! Frames from the VM (`frame.rs`), each an Erlang term:
//!
//! | frame                                   | answer                          |
//! |-----------------------------------------|---------------------------------|
//! | `{:prepare, options}`                    | (a spare hardens for `options` ahead of its session) |
//! | `{:new, options}`                        | `{:new, {:ok, …} \| :unfit \| {:error, msg}}` |
//! | `{:exec, id, script, call}`              | `{:started, id}`, `{:chunk, …}`, `{:call, …}`, then `{:done, id, outcome, usable}` |
//! | `{:snapshot, id, exclude_fs, exclude_functions, key}` | as `:exec`          |
//! | `{:restore, id, snapshot, key}`          | as `:exec`                      |
//! | `{:abandon, id}`                         | (the job stops at its next await) |
//! | `{:cancel, id}`                          | `{:cancelled, id, boolean}`      |
//! | `{:fs, id, op, args}`                    | `{:fs, id, result}`              |
//! | `{:reply, call_id, reply}`               | (a builtin's or backend's answer) |
//!
//! The process ends when the VM closes the pipe, and with its parent
//! (`PR_SET_PDEATHSIG`), however the VM dies.

mod calls;
mod codec;
mod frame;
mod job;

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bashkit::{ExecResult, SnapshotOptions};
use eetf::Term;
use futures_util::FutureExt;

use self::calls::HostCalls;
use self::codec::{
    atom, atom_name, binary, boolean, bytes, done, elements, file_kind, integer, integer_of, items,
    list, ok, optional, pairs, string, tuple, Decoded, Fields,
};
use self::frame::Outbox;
use self::job::WorkerJob;
use crate::callback::Channel;
use crate::exec::run_on_session;
use crate::exec_options::Call;
use crate::hardening::{self, Fit, Plan, Report};
use crate::job::Job;
use crate::jobs::Stop;
use crate::network::AllowNet;
use crate::runtime::{self, interpreters};
use crate::session::SessionResource;
use crate::sync::lock;

/// Runs the worker until the VM closes the pipe; with `--zygote=NAME`, the
/// zygote that forks workers (`zygote.rs`), whose children go on here.
pub fn main() {
    // SAFETY: plain syscalls on this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The VM died before the line above took effect.
        if libc::getppid() == 1 {
            exit_now();
        }
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(name) = args.first().and_then(|arg| arg.strip_prefix("--zygote=")) {
        let name = name.to_owned();
        hardening::clean_start();
        prepare();
        hardening::prepare();
        args = crate::zygote::serve(&name);
    }
    // Namespaces need this process to have one thread: first of all.
    let plan = Plan::from_args(args.into_iter());
    let report = hardening::at_start(&plan);
    prepare();
    let outbox = Arc::new(Outbox::stdout());
    let mut worker = Worker {
        calls: Arc::new(HostCalls::new(outbox.clone())),
        outbox,
        session: None,
        jobs: Arc::default(),
        plan,
        report,
        prepared: None,
    };
    // SAFETY: fd 0 is the Port's pipe, never closed by anything else.
    let stdin = ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
    let mut input = BufReader::with_capacity(1 << 16, &*stdin);
    loop {
        match frame::read(&mut input, stdin.as_raw_fd()) {
            Ok(Some(term)) => worker.handle(&term),
            Ok(None) | Err(_) => exit_now(),
        }
    }
}

/// The process-wide settings of a worker, and a first interpreter built
/// (and dropped) so that `{:new, options}` costs what building a session
/// costs in the VM, not a process's first steps. Once per process: a
/// zygote's children inherit it. Starts no thread: none may start before
/// the session's hardening (`hardening.rs`).
fn prepare() {
    static PREPARED: std::sync::Once = std::sync::Once::new();
    PREPARED.call_once(|| {
        // A panic is answered as an internal error by the job that hit it;
        // the VM's stderr must not carry script bytes.
        std::panic::set_hook(Box::new(|_| {}));
        crate::memory::set_budget(None);
        runtime::set_threads(1);
        runtime::set_watch_interval(Duration::from_secs(1));
        drop(bashkit::Bash::builder().build());
    });
}

/// Ends the process at once: no destructors, no atexit handlers, which a
/// thread frozen inside the allocator could block.
pub(crate) fn exit_now() -> ! {
    // SAFETY: _exit is always safe to call.
    unsafe { libc::_exit(0) }
}

type Jobs = Arc<Mutex<HashMap<u64, Arc<WorkerJob>>>>;

struct Worker {
    outbox: Arc<Outbox>,
    calls: Arc<HostCalls>,
    session: Option<Arc<SessionResource>>,
    jobs: Jobs,
    plan: Plan,
    report: Report,
    /// What the worker was hardened for ahead of its session, if it was.
    prepared: Option<Fit>,
}

impl Worker {
    fn handle(&mut self, term: &Term) {
        let Ok(frame) = elements(term) else {
            return;
        };
        let kind = frame.first().and_then(atom_name).unwrap_or("");
        match (kind, &frame[1..], &self.session) {
            ("prepare", [options], None) => self.prepare_ahead(options),
            ("new", [options], None) => self.start(options),
            ("exec", [id, script, call], Some(session)) => {
                let session = session.clone();
                self.job(id, |job, stop| exec(session, job, stop, script, call));
            }
            ("snapshot", [id, exclude_fs, exclude_functions, key], Some(session)) => {
                let options = snapshot_options(exclude_fs, exclude_functions);
                let key = optional(key, bytes);
                let session = session.clone();
                self.job(id, |job, stop| {
                    let (options, key) = (options?, key?);
                    Ok(with_bash(session, job, stop, move |bash| {
                        crate::snapshot::take(bash, options, key.as_deref())
                            .map(codec::owned_binary)
                            .map_err(|e| failure(crate::snapshot::TAKE_FAILED, &e))
                    }))
                });
            }
            ("restore", [id, snapshot, key], Some(session)) => {
                let (snapshot, key) = (bytes(snapshot), optional(key, bytes));
                let session = session.clone();
                let max = session.max_snapshot_bytes;
                self.job(id, |job, stop| {
                    let (snapshot, key) = (snapshot?, key?);
                    Ok(with_bash(session, job, stop, move |bash| {
                        crate::snapshot::restore(bash, &snapshot, key.as_deref(), max)
                            .map(|()| atom("ok"))
                            .map_err(|e| failure(crate::snapshot::RESTORE_FAILED, &e))
                    }))
                });
            }
            ("abandon", [id], _) => {
                let job = integer_of(id).ok().and_then(|id| {
                    let jobs = lock(&self.jobs);
                    jobs.get(&(id as u64)).cloned()
                });
                if let Some(job) = job {
                    job.stop(Stop::Abandoned);
                }
            }
            ("cancel", [id], Some(session)) => {
                let cancelled = session.running.cancel();
                self.outbox.send(&tuple(vec![
                    atom("cancelled"),
                    id.clone(),
                    boolean(cancelled),
                ]));
            }
            ("fs", [id, op, args], Some(session)) => {
                let result = file_op(session, op, args).unwrap_or_else(|e| codec::error(&e));
                self.outbox
                    .send(&tuple(vec![atom("fs"), id.clone(), result]));
            }
            ("reply", [id, reply], _) => {
                if let Ok(id) = integer_of(id) {
                    self.calls.answer(id as u64, codec::reply(reply));
                }
            }
            // Anything else is a bug in ExBashkit.Worker; the VM's deadline
            // for it ends this process.
            _ => {}
        }
    }

    /// A spare's work ahead of its session, while it waits: the hardening
    /// `options` (the default session's) need, then an interpreter built
    /// and one script run and dropped, so that the first steps of both
    /// (lazy setup, pages copied from the zygote on first write) no longer
    /// cost the session. Nothing is answered: a `{:new, …}` queued behind
    /// it waits for it.
    fn prepare_ahead(&mut self, options: &Term) {
        let Ok(options) = codec::session_options(options) else {
            return;
        };
        let needs = options.worker_needs();
        let (Some(fit), None) = (needs.fit(), self.prepared) else {
            return;
        };
        hardening::for_session(&self.plan, &needs, &mut self.report);
        self.prepared = Some(fit);
        let channel = Channel::remote(self.calls.clone());
        let (Ok(session), Ok(pool)) = (SessionResource::build(&options, channel), interpreters())
        else {
            return;
        };
        let (ran, done) = std::sync::mpsc::sync_channel(1);
        pool.spawn(pool.place(&session.worker), async move {
            let _ = session.bash.lock().await.exec("true").await;
            let _ = ran.send(());
        });
        let _ = done.recv_timeout(Duration::from_secs(5));
    }

    fn start(&mut self, options: &Term) {
        let answer = match codec::session_options(options) {
            Ok(options) if self.unfit(&options) => atom("unfit"),
            decoded => match decoded.and_then(|options| self.build(&options)) {
                Ok(session) => {
                    self.session = Some(Arc::new(session));
                    tuple(vec![atom("ok"), codec::hardening(&self.report)])
                }
                Err(message) => codec::error(&message),
            },
        };
        self.outbox.send(&tuple(vec![atom("new"), answer]));
    }

    /// Whether this worker was hardened ahead for needs other than the
    /// session's: the VM then starts one of its own for it.
    fn unfit(&self, options: &crate::options::SessionOptions) -> bool {
        self.prepared
            .is_some_and(|fit| options.worker_needs().fit() != Some(fit))
    }

    fn build(
        &mut self,
        options: &crate::options::SessionOptions,
    ) -> Result<SessionResource, String> {
        if !matches!(options.allow_net, AllowNet::None) && !self.plan.network {
            return Err("this worker was started without the network".into());
        }
        if self.prepared.is_none() {
            hardening::for_session(&self.plan, &options.worker_needs(), &mut self.report);
        }
        let channel = Channel::remote(self.calls.clone());
        SessionResource::build(options, channel)
    }

    /// Queues a job on the session's interpreter thread; `start` gives the
    /// work, or an error for a frame that does not decode.
    fn job<F>(
        &self,
        id: &Term,
        start: impl FnOnce(Arc<WorkerJob>, crate::jobs::StopSignal) -> Decoded<F>,
    ) where
        F: std::future::Future<Output = Result<Term, Term>> + Send + 'static,
    {
        let (Ok(id), Some(session)) = (integer_of(id), &self.session) else {
            return;
        };
        let id = id as u64;
        let (job, stop) = WorkerJob::new(id, self.outbox.clone(), session.frozen.clone());
        let work = match start(job.clone(), stop) {
            Ok(work) => work,
            Err(message) => return job.answer(codec::error(&message)),
        };
        let pool = match interpreters() {
            Ok(pool) => pool,
            Err(message) => return job.answer(codec::error(&message)),
        };
        lock(&self.jobs).insert(id, job.clone());
        let jobs = self.jobs.clone();
        pool.spawn(pool.place(&session.worker), async move {
            let outcome = AssertUnwindSafe(work)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(codec::error("internal error: the interpreter panicked")));
            lock(&jobs).remove(&id);
            runtime::job_done();
            job.answer(match outcome {
                Ok(value) => ok(value),
                Err(error) => tuple(vec![atom("error"), error]),
            });
        });
    }
}

fn failure(context: &str, error: &bashkit::Error) -> String {
    format!("{context}: {}", crate::error::message(error))
}

fn snapshot_options(exclude_fs: &Term, exclude_functions: &Term) -> Decoded<SnapshotOptions> {
    Ok(SnapshotOptions {
        exclude_filesystem: codec::flag(exclude_fs)?,
        exclude_functions: codec::flag(exclude_functions)?,
    })
}

/// A snapshot or restore: behind the session's scripts, on its thread.
async fn with_bash(
    session: Arc<SessionResource>,
    job: Arc<WorkerJob>,
    stop: crate::jobs::StopSignal,
    work: impl FnOnce(&mut bashkit::Bash) -> Result<Term, String> + Send,
) -> Result<Term, Term> {
    let run = async {
        session.usable()?;
        let mut bash = session.bash.lock().await;
        job.started();
        work(&mut bash)
    };
    stop.guard(run)
        .await
        .map_err(|message| binary(message.as_bytes()))
}

/// The call's options, as `ExBashkit.Session.ExecOptions` gives them to the
/// NIF, less the listeners: the VM streams to them itself.
fn exec(
    session: Arc<SessionResource>,
    job: Arc<WorkerJob>,
    stop: crate::jobs::StopSignal,
    script: &Term,
    call: &Term,
) -> Decoded<impl std::future::Future<Output = Result<Term, Term>> + Send + 'static> {
    let script = crate::exec::script_text(&bytes(script)?)?;
    session.usable()?;
    let mut plan = Call::default();
    if !codec::is_nil(call) {
        let fields = Fields::of(call)?;
        plan.timeout =
            optional(fields.get("timeout_ms")?, codec::u64_of)?.map(Duration::from_millis);
        plan.stdin = optional(fields.get("stdin")?, bytes)?;
        plan.env = pairs(fields.get("env")?)?;
        plan.cwd = optional(fields.get("cwd")?, string)?;
        plan.args = optional(fields.get("args")?, |args| {
            items(args)?.into_iter().map(string).collect()
        })?;
        plan.credentials = optional(fields.get("credentials")?, codec::credentials)?;
        if codec::flag(fields.get("stream")?)? {
            plan.output = Some(job.output(session.output_caps));
        }
    }
    let timeout = plan.timeout;
    Ok(async move {
        if let Some(timeout) = timeout {
            hardening::cpu_backstop(timeout);
        }
        let job: Arc<dyn Job> = job;
        run_on_session(&session, &script, plan, job, None, stop)
            .await
            .map(|result| exec_result(&result))
            .map_err(|error| codec::script_error(&error))
    })
}

/// `{stdout, stderr, exit_code, truncated}`, as the NIF answers.
fn exec_result(result: &ExecResult) -> Term {
    tuple(vec![
        binary(result.stdout.as_bytes()),
        binary(result.stderr.as_bytes()),
        integer(result.exit_code.into()),
        boolean(result.stdout_truncated || result.stderr_truncated),
    ])
}

/// The file API: `{:fs, id, op, args}` with the NIF's arguments.
fn file_op(session: &SessionResource, op: &Term, args: &Term) -> Decoded<Term> {
    let args = items(args)?;
    let op = atom_name(op).unwrap_or("");
    let text = |index: usize| {
        args.get(index)
            .ok_or("missing argument".to_string())
            .and_then(|t| string(t))
    };
    let flag = |index: usize| {
        args.get(index)
            .ok_or("missing argument".to_string())
            .and_then(|t| codec::flag(t))
    };
    use crate::fs;
    Ok(match op {
        "read_file" => match fs::read_file(session, &text(0)?) {
            Ok(content) => ok(codec::owned_binary(content)),
            Err(message) => codec::error(&message),
        },
        "write_file" => {
            let content = args.get(1).ok_or("missing content").map_err(String::from)?;
            done(fs::write_file(session, &text(0)?, &bytes(content)?))
        }
        "list_dir" => match fs::list_dir(session, &text(0)?) {
            Ok(entries) => ok(list(
                entries
                    .into_iter()
                    .map(|(name, kind)| tuple(vec![binary(name.as_bytes()), file_kind(kind)]))
                    .collect(),
            )),
            Err(message) => codec::error(&message),
        },
        "mkdir" => done(fs::mkdir(session, &text(0)?, flag(1)?)),
        "remove" => done(fs::remove(session, &text(0)?, flag(1)?)),
        "rename" => done(fs::rename(session, &text(0)?, &text(1)?)),
        "stat" => match fs::stat(session, &text(0)?) {
            Ok((kind, size)) => ok(tuple(vec![file_kind(kind), integer(size as i64)])),
            Err(message) => codec::error(&message),
        },
        other => return Err(format!("unknown file operation {other:?}")),
    })
}
