//! The worker process behind `isolation: :process` sessions.
//!
//! One session's interpreter lives here, in an OS process the VM starts as
//! a Port (`ExBashkit.Worker`) and kills when a script outlives its
//! deadline, is frozen over its memory cap, or the session is dropped: the
//! kernel takes back everything the script held. The code that runs the
//! session is the core's, as in the VM (`session.rs`, `exec.rs`, `fs.rs`,
//! `snapshot.rs`); only the way answers travel differs.
//!
//! Frames cross the Port's pipes (`frame.rs`); what each holds, in both
//! directions, is defined once in `protocol.rs`. The VM treats everything
//! this process sends as possibly forged (`ExBashkit.Worker.Protocol`).
//! The worker has no network: its HTTP requests go to the host
//! (`egress.rs`), which keeps the session's credentials.
//!
//! The process ends when the VM closes the pipe, and with its parent
//! (`PR_SET_PDEATHSIG`), however the VM dies.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;

use crate::calls::HostCalls;
use crate::deadline::Deadline;
#[cfg(feature = "network")]
use crate::egress::HostEgress;
use crate::frame::{exit_now, Outbox};
use crate::job::WorkerJob;
use crate::protocol::{self, Event, FileOp, Frame, FsAnswer, NewAnswer, Outcome, Output, Request};
use crate::shells::Shells;
use ex_bashkit_core::call::Call;
use ex_bashkit_core::callback::Channel;
use ex_bashkit_core::exec::{run_on_session, Ran};
use ex_bashkit_core::job::Job;
use ex_bashkit_core::limits::LimitsExt;
use ex_bashkit_core::options::SessionPlan;
use ex_bashkit_core::options::{Egress, Extra, SessionOptions};
use ex_bashkit_core::policy::Gate;
use ex_bashkit_core::runtime::{self, interpreters};
use ex_bashkit_core::session::Session;
use ex_bashkit_core::stop::Stop;
use ex_bashkit_core::sync::lock;
use ex_bashkit_jail::{self as hardening, Fit, Plan, Report};
use ex_bashkit_protocol::call::CallOptions;

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
        #[cfg(feature = "network")]
        egress: Arc::new(HostEgress::new(outbox.clone())),
        outbox,
        session: None,
        jobs: Arc::default(),
        plan,
        report,
        prepared: None,
        deadline: Arc::default(),
        code: Arc::default(),
    };
    // SAFETY: fd 0 is the Port's pipe, never closed by anything else.
    let stdin = ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
    let mut input = BufReader::with_capacity(1 << 16, &*stdin);
    loop {
        if input.buffer().is_empty() {
            let until = std::time::Instant::now() + runtime::SPIN_WINDOW;
            crate::frame::await_input(stdin.as_raw_fd(), until);
        }
        match crate::frame::read(&mut input, stdin.as_raw_fd()) {
            Ok(Some(term)) => {
                if let Some(request) = crate::protocol::decode(term) {
                    worker.handle(request);
                }
            }
            Ok(None) | Err(_) => exit_now(),
        }
    }
}

/// The process-wide settings of a worker, and a first interpreter built
/// (and dropped) so that `{:new, options}` costs what building a session
/// costs in the VM, not a process's first steps. Once per process: a
/// zygote's children inherit it. Starts no thread: none may start before
/// the session's hardening (the jail crate, `crates/jail`).
fn prepare() {
    static PREPARED: std::sync::Once = std::sync::Once::new();
    PREPARED.call_once(|| {
        // A panic is answered as an internal error by the job that hit it;
        // the VM's stderr must not carry script bytes.
        std::panic::set_hook(Box::new(|_| {}));
        ex_bashkit_core::memory::set_budget(None);
        runtime::set_threads(1);
        runtime::set_watch_interval(Duration::from_secs(1));
        drop(bashkit::Bash::builder().build());
        #[cfg(feature = "javascript")]
        crate::js::warm_up();
    });
}

type Jobs = Arc<Mutex<HashMap<u64, Arc<WorkerJob>>>>;

struct Worker {
    outbox: Arc<Outbox>,
    calls: Arc<HostCalls>,
    #[cfg(feature = "network")]
    egress: Arc<HostEgress>,
    session: Option<Arc<Session>>,
    jobs: Jobs,
    plan: Plan,
    report: Report,
    /// What the worker was hardened for ahead of its session, if it was.
    prepared: Option<Fit>,
    /// The running script's deadline, for commands that block (`node`).
    deadline: Arc<Deadline>,
    /// What `node --execute` leaves for the code run that started it.
    code: Arc<crate::code::Slot>,
}

impl Worker {
    /// Where the session's HTTP requests go: to the host.
    #[cfg(feature = "network")]
    fn egress(&self) -> Option<Egress> {
        Some(self.egress.clone())
    }

    #[cfg(not(feature = "network"))]
    fn egress(&self) -> Option<Egress> {
        None
    }

    fn handle(&mut self, frame: Frame) {
        let request = match frame {
            Frame::Request(request) => *request,
            Frame::Unreadable(why) => return self.start(Err(why)),
            Frame::Malformed { id, why } => {
                if let Some(session) = self.session.clone() {
                    self.job(id, &session, |_job, _stop| {
                        Err::<std::future::Ready<Outcome>, _>(why)
                    });
                }
                return;
            }
        };
        let session = self.session.clone();
        match (request, session) {
            (Request::Prepare(options), None) => self.prepare_ahead(&options),
            (Request::New(options), None) => self.start(Ok(*options)),
            (Request::Exec(id, script, call), Some(session)) => {
                // What `node` cut at the caps, which bashkit never sees.
                let slot = self.code.clone();
                slot.truncated();
                self.job(id, &session, |job, stop| {
                    let run = exec(
                        session.clone(),
                        job,
                        stop,
                        script.into_vec(),
                        call,
                        self.deadline.clone(),
                    )?;
                    Ok(async move {
                        match run.await {
                            Outcome::Ran(mut output) => {
                                output.truncated |= slot.truncated();
                                Outcome::Ran(output)
                            }
                            other => other,
                        }
                    })
                });
            }
            (Request::RunCode(id, language, input, grants, call), Some(session)) => {
                let mut call = call.unwrap_or_default();
                call.stdin = Some(input.into_vec());
                let script = crate::code::driver(language, &grants);
                let slot = self.code.clone();
                // Left by a `node --execute` some script typed itself.
                slot.take();
                slot.truncated();
                let own = session.clone();
                self.job(id, &own, |job, stop| {
                    let run = exec(
                        session.clone(),
                        job,
                        stop,
                        script,
                        Some(call),
                        self.deadline.clone(),
                    )?;
                    Ok(async move {
                        match run.await {
                            Outcome::Ran(mut output) => {
                                output.truncated |= slot.truncated();
                                let ended = (output.exit_code, &output.stderr[..]);
                                let caps = session.output_caps;
                                let outcome =
                                    crate::code::outcome(&slot, &session, language, ended, caps)
                                        .await;
                                Outcome::Code(output, outcome)
                            }
                            other => other,
                        }
                    })
                });
            }
            (Request::Snapshot(id, exclude_fs, exclude_functions, key), Some(session)) => {
                let options = protocol::snapshot_options(exclude_fs, exclude_functions);
                self.job(id, &session, |job, stop| {
                    Ok(with_bash(session.clone(), job, stop, move |bash| {
                        ex_bashkit_core::snapshot::take(
                            bash,
                            options,
                            key.as_ref().map(|key| key.as_slice()),
                        )
                        .map(Outcome::Snapshot)
                        .map_err(|e| failure(ex_bashkit_core::snapshot::TAKE_FAILED, &e))
                    }))
                });
            }
            (Request::Restore(id, snapshot, key), Some(session)) => {
                let max = session.max_snapshot_bytes;
                self.job(id, &session, |job, stop| {
                    Ok(with_bash(session.clone(), job, stop, move |bash| {
                        ex_bashkit_core::snapshot::restore(
                            bash,
                            &snapshot,
                            key.as_ref().map(|key| key.as_slice()),
                            max,
                        )
                        .map(|()| Outcome::Restored)
                        .map_err(|e| failure(ex_bashkit_core::snapshot::RESTORE_FAILED, &e))
                    }))
                });
            }
            (Request::Abandon(id), _) => {
                let job = lock(&self.jobs).get(&id).cloned();
                if let Some(job) = job {
                    job.stop(Stop::Abandoned);
                }
            }
            (Request::Cancel(id), Some(session)) => {
                let cancelled = session.running.cancel();
                self.outbox.send(Event::Cancelled { id, cancelled });
            }
            (Request::Stats(id), Some(session)) => {
                let totals = session.totals.get().into();
                self.outbox.send(Event::Stats { id, totals });
            }
            (Request::Fs(id, op), Some(session)) => {
                let answer = file_op(&session, op);
                self.outbox.send(Event::Fs { id, answer });
            }
            (Request::Reply(id, reply), _) => self.calls.answer(id, reply),
            #[cfg(feature = "network")]
            (Request::HttpBody(id, chunk), _) => self.egress.body(id, &chunk),
            #[cfg(feature = "network")]
            (Request::HttpPart(id, chunk), _) => self.egress.part(id, chunk.into_vec()),
            #[cfg(feature = "network")]
            (Request::HttpReply(id, answer), _) => self.egress.reply(id, answer),
            // Answers to requests this build never makes.
            #[cfg(not(feature = "network"))]
            (Request::HttpBody(..) | Request::HttpPart(..) | Request::HttpReply(..), _) => {}
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
    fn prepare_ahead(&mut self, options: &SessionOptions) {
        let needs = options.worker_needs();
        let (Some(fit), None) = (needs.fit(), self.prepared) else {
            return;
        };
        hardening::for_session(&self.plan, &needs, &mut self.report);
        self.prepared = Some(fit);
        let channel = Channel::new(self.calls.clone());
        let built = Session::build(options, channel, self.egress(), self.commands(options));
        let (Ok(session), Ok(pool)) = (built, interpreters()) else {
            return;
        };
        let (ran, done) = std::sync::mpsc::sync_channel(1);
        pool.spawn(pool.place(&session.worker), async move {
            let _ = session.bash.lock().await.exec("true").await;
            let _ = ran.send(());
        });
        let _ = done.recv_timeout(Duration::from_secs(5));
    }

    fn start(&mut self, options: Result<SessionOptions, String>) {
        let answer = match options {
            Ok(options) if self.unfit(&options) => NewAnswer::Unfit,
            decoded => match decoded.and_then(|options| self.build(&options)) {
                Ok(session) => {
                    self.session = Some(Arc::new(session));
                    NewAnswer::Ready(&self.report)
                }
                Err(message) => NewAnswer::Failed(message),
            },
        };
        self.outbox.send(Event::New(answer));
    }

    /// Whether this worker was hardened ahead for needs other than the
    /// session's: the VM then starts one of its own for it.
    fn unfit(&self, options: &SessionOptions) -> bool {
        self.prepared
            .is_some_and(|fit| options.worker_needs().fit() != Some(fit))
    }

    /// The commands only a worker has (`shells.rs`): made only for a
    /// session that asks for one of them.
    fn commands<'o>(
        &self,
        options: &'o SessionOptions,
    ) -> impl FnOnce(&Arc<Channel>, &Arc<Gate>) -> Extra + 'o {
        self.deadline.session(options.limits.execution().timeout);
        let deadline = self.deadline.clone();
        let code = self.code.clone();
        let egress = self.egress();
        move |channel, gate| {
            if !(options.javascript || options.sqlite) {
                return Extra::none();
            }
            let shells = Arc::new(Shells {
                options: options.clone(),
                channel: channel.clone(),
                gate: gate.clone(),
                egress,
                deadline,
                code,
                depth: Default::default(),
            });
            shells.commands()
        }
    }

    fn build(&mut self, options: &SessionOptions) -> Result<Session, String> {
        self.calls.limit(options.limits.filesystem().max_file_size);
        if self.prepared.is_none() {
            hardening::for_session(&self.plan, &options.worker_needs(), &mut self.report);
        }
        let channel = Channel::new(self.calls.clone());
        Session::build(options, channel, self.egress(), self.commands(options))
            .map_err(String::from)
    }

    /// Queues a job on the session's interpreter thread; `start` gives the
    /// work, or an error for a frame that does not decode.
    fn job<F>(
        &self,
        id: u64,
        session: &Session,
        start: impl FnOnce(Arc<WorkerJob>, ex_bashkit_core::stop::StopSignal) -> Result<F, String>,
    ) where
        F: std::future::Future<Output = Outcome> + Send + 'static,
    {
        let (job, stop) = WorkerJob::new(id, self.outbox.clone(), session.frozen.clone());
        let work = match start(job.clone(), stop) {
            Ok(work) => work,
            Err(message) => return job.answer(Outcome::Failed(message)),
        };
        let pool = match interpreters() {
            Ok(pool) => pool,
            Err(error) => return job.answer(Outcome::Failed(error.into())),
        };
        lock(&self.jobs).insert(id, job.clone());
        let jobs = self.jobs.clone();
        pool.spawn(pool.place(&session.worker), async move {
            let outcome = AssertUnwindSafe(work)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Outcome::Failed("internal error: the interpreter panicked".into())
                });
            lock(&jobs).remove(&id);
            runtime::job_done();
            job.answer(outcome);
        });
    }
}

fn failure(context: &str, error: &bashkit::Error) -> String {
    format!("{context}: {}", ex_bashkit_core::error::message(error))
}

/// A snapshot or restore: behind the session's scripts, on its thread.
async fn with_bash(
    session: Arc<Session>,
    job: Arc<WorkerJob>,
    stop: ex_bashkit_core::stop::StopSignal,
    work: impl FnOnce(&mut bashkit::Bash) -> Result<Outcome, String> + Send,
) -> Outcome {
    let run = async {
        session.usable()?;
        let mut bash = session.bash.lock().await;
        job.started();
        work(&mut bash)
    };
    stop.guard(run).await.unwrap_or_else(Outcome::Failed)
}

/// A script, with the call's options less its listeners and credentials:
/// the VM streams to the listeners itself and keeps the credentials.
fn exec(
    session: Arc<Session>,
    job: Arc<WorkerJob>,
    stop: ex_bashkit_core::stop::StopSignal,
    script: Vec<u8>,
    call: Option<CallOptions>,
    deadline: Arc<Deadline>,
) -> Result<impl std::future::Future<Output = Outcome> + Send + 'static, String> {
    let script = ex_bashkit_core::exec::script_text(&script)?;
    session.usable()?;
    let mut call = call.unwrap_or_default();
    let timeout = call.timeout();
    let output = call.streams().then(|| job.output(session.output_caps));
    // The owner keeps the credentials; none ever come here.
    call.credentials = None;
    let plan = Call::new(call, output);
    Ok(async move {
        if let Some(timeout) = timeout {
            hardening::cpu_backstop(timeout);
        }
        let job: Arc<dyn Job> = job;
        let start = || deadline.start(timeout);
        // Boxed here, on the interpreter thread: inline, its kilobytes of
        // state would be copied at each move of this future on the way.
        let run = Box::pin(run_on_session(&session, &script, plan, job, start, stop));
        match run.await {
            Ok(Ran {
                result,
                denials,
                stats,
            }) => Outcome::Ran(Output {
                truncated: result.stdout_truncated || result.stderr_truncated,
                stdout: result.stdout.into_bytes(),
                stderr: result.stderr.into_bytes(),
                exit_code: result.exit_code,
                denials,
                stats: stats.into(),
            }),
            Err(error) => Outcome::ScriptError(error),
        }
    })
}

/// The file API, with the NIF's arguments.
fn file_op(session: &Session, op: FileOp) -> FsAnswer {
    use ex_bashkit_core::fs;
    let done = |result: Result<(), String>| match result {
        Ok(()) => FsAnswer::Done,
        Err(message) => FsAnswer::Failed(message),
    };
    let answer = match op {
        FileOp::ReadFile(path) => fs::read_file(session, &path).map(FsAnswer::Content),
        FileOp::WriteFile(path, content) => Ok(done(fs::write_file(session, &path, &content))),
        FileOp::ListDir(path) => fs::list_dir(session, &path).map(FsAnswer::Entries),
        FileOp::Mkdir(path, parents) => Ok(done(fs::mkdir(session, &path, parents))),
        FileOp::Remove(path, recursive) => Ok(done(fs::remove(session, &path, recursive))),
        FileOp::Rename(from, to, overwrite) => Ok(done(fs::rename(session, &from, &to, overwrite))),
        FileOp::Chmod(path, mode, recursive) => {
            Ok(done(fs::chmod(session, &path, mode, recursive)))
        }
        FileOp::Stat(path) => fs::stat(session, &path).map(FsAnswer::Stat),
    };
    answer.unwrap_or_else(FsAnswer::Failed)
}
