//! One run of the engine: a fresh runtime and context, the prelude, the
//! code, then its promises until nothing is left; bounded by the memory
//! cap ([`Capped`]), the deadline (the interrupt handler) and a stack cap.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bashkit::{ExecResult, LimitExceeded};
use ex_bashkit_protocol::code::{CodeError, CodeOutcome};
use ex_bashkit_protocol::outcome::Reason;
use rquickjs::context::EvalOptions;
use rquickjs::module::{Evaluated, WriteOptions};
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object, Persistent,
    Runtime, Value,
};

use super::bridge::install;
use super::host::Host;
use super::invocation::{Execute, Grants};
use super::memory::Capped;
use super::modules::{self, Files};
use super::resolve::Packages;
use super::thrown::{caught_error, uncaught};
use crate::code::Slot;

/// Buffer and string_decoder first, then Node's globals; last, what
/// `--execute` mode takes away. Node's other modules come in [`CHUNKS`].
const PRELUDE: &str = concat!(
    include_str!("buffer.js"),
    include_str!("prelude.js"),
    "__host.restrict();\n"
);

/// Node's modules made the first time a program uses one (prelude.js's
/// `chunk`): each chunk a function of the host object answering its
/// modules by name. A run that uses none does not load them (a third of
/// the engine's start).
const CHUNKS: [(&str, &str); 6] = [
    (
        "stdlib",
        concat!("export default ", include_str!("stdlib.js")),
    ),
    ("io", concat!("export default ", include_str!("io.js"))),
    ("zlib", concat!("export default ", include_str!("zlib.js"))),
    ("http", concat!("export default ", include_str!("http.js"))),
    (
        "modules",
        concat!("export default ", include_str!("modules.js")),
    ),
    (
        "child_process",
        concat!("export default ", include_str!("child_process.js")),
    ),
];

/// The engine's own stack, under the interpreter thread's.
const MAX_STACK_BYTES: usize = 8 << 20;

/// One run of the engine.
pub struct Run<'a> {
    pub code: &'a str,
    pub filename: &'a str,
    pub print: bool,
    pub max_memory: usize,
    /// When the script must stop, and the limit that says so.
    pub deadline: Option<(Instant, Duration)>,
    /// `--execute` mode, and where its outcome goes.
    pub execute: Option<(&'a Execute, &'a Slot)>,
    /// An ES module, evaluated or (`--check`) only declared.
    pub module: Option<Evaluate>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Evaluate {
    Yes,
    No,
}

/// Why the engine stopped before the script's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Exit,
    Deadline,
    /// Output went past a cap.
    Flood,
}

impl Run<'_> {
    pub fn go(self, host: Host) -> bashkit::Result<ExecResult> {
        let fail = |why: rquickjs::Error| bashkit::Error::Internal(format!("node: {why}"));
        let refused = host.refused.clone();
        let flooded = host.flooded.clone();
        let runtime =
            Runtime::new_with_alloc(Capped::new(self.max_memory, refused.clone())).map_err(fail)?;
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        let host = Rc::new(RefCell::new(host));
        let stopped = Rc::new(RefCell::new(None::<Stop>));
        let exiting = Arc::new(AtomicBool::new(false));
        {
            let stopped = stopped.clone();
            let exiting = exiting.clone();
            let deadline = self.deadline;
            let mut polls = 0u32;
            let flooded = flooded.clone();
            runtime.set_interrupt_handler(Some(Box::new(move || {
                if exiting.load(Ordering::Acquire) {
                    *stopped.borrow_mut() = Some(Stop::Exit);
                    return true;
                }
                if flooded.load(Ordering::Acquire) {
                    *stopped.borrow_mut() = Some(Stop::Flood);
                    return true;
                }
                polls = polls.wrapping_add(1);
                let late = polls.is_multiple_of(16)
                    && deadline.is_some_and(|(at, _)| Instant::now() >= at);
                if late {
                    *stopped.borrow_mut() = Some(Stop::Deadline);
                }
                late
            })));
        }
        // `import` and `import()`, from any program: one resolver, its
        // package.json reads shared with `require`'s.
        let packages = Packages::new(host.borrow().fs.clone(), host.borrow().changes.clone());
        let cwd = PathBuf::from(&host.borrow().cwd);
        let files = || Files {
            packages: packages.clone(),
            cwd: cwd.clone(),
        };
        runtime.set_loader(files(), files());
        let main_file = if self.filename.starts_with('/') {
            self.filename.to_string()
        } else {
            cwd.join(self.filename).display().to_string()
        };
        let context = Context::full(&runtime).map_err(fail)?;
        type Saved = Persistent<Function<'static>>;
        let loop_timers = RefCell::new(None::<(Saved, Saved, Saved)>);
        let error = context.with(|ctx| -> rquickjs::Result<Option<String>> {
            install(&ctx, &host, &exiting)?;
            modules::install(&ctx, &packages, (main_file.clone(), self.module.is_some()))?;
            super::zlib::install(&ctx, self.max_memory)?;
            prelude(&ctx)?;
            // The loop's timers, and the runner's driver, taken before
            // the script can reach them.
            let timers: Object = ctx.globals().get("__timers")?;
            ctx.globals().remove("__timers")?;
            let saved = |name: &str| -> rquickjs::Result<Saved> {
                Ok(Persistent::save(&ctx, timers.get::<_, Function>(name)?))
            };
            *loop_timers.borrow_mut() = Some((saved("next")?, saved("fire")?, saved("tick")?));
            let drive: Option<Function> = match self.execute {
                Some(_) => {
                    let drive = ctx.globals().get("__drive")?;
                    ctx.globals().remove("__drive")?;
                    ctx.globals().remove("__host")?;
                    Some(drive)
                }
                None => None,
            };
            let outcome = match self.module {
                Some(evaluate) => self.module(&ctx, evaluate, &main_file).catch(&ctx),
                None => ctx
                    .eval_with_options::<Value, _>(self.code, script_options(self.filename))
                    .catch(&ctx),
            };
            Ok(match (outcome, drive, self.execute) {
                (Ok(_), Some(drive), Some((execute, _))) => {
                    // `execute` may be a lexical binding (`const execute =`),
                    // which no property of the global object holds.
                    let lookup = "typeof execute === 'function' ? execute : undefined";
                    let function: Value =
                        ctx.eval_with_options(lookup, script_options("[runner]"))?;
                    drive.call::<_, ()>((function, execute.input.as_str()))?;
                    None
                }
                (Ok(value), _, _) => {
                    if self.print {
                        let inspect: Function = ctx.globals().get("__inspect")?;
                        let text: String = inspect.call((value,))?;
                        host.borrow_mut().write(0, &(text + "\n"));
                    }
                    None
                }
                (Err(caught), _, Some(_)) => {
                    let refused = refused.load(Ordering::Acquire);
                    let error = caught_error(caught, self.filename, refused);
                    host.borrow_mut().finished = Some(CodeOutcome::Error(error));
                    None
                }
                (Err(caught), _, None) => Some(uncaught(caught)),
            })
        });
        let mut error = error.map_err(fail)?;
        // Promises and what they scheduled, then the timers and immediates
        // in order, until nothing is left.
        let timers = loop_timers.borrow_mut().take();
        // Node's loop: process.nextTick's queue, then the promise jobs, until
        // neither is left; then the timer due or the immediate queued, one
        // callback at a time; until nothing keeps the script alive.
        let call = |function: &Persistent<Function<'static>>| -> Result<f64, String> {
            context.with(|ctx| {
                function
                    .clone()
                    .restore(&ctx)
                    .and_then(|function| function.call::<_, Value>(()))
                    .map(|value| {
                        let flag = value.as_bool().map(f64::from);
                        value.as_number().or(flag).unwrap_or(0.0)
                    })
                    .catch(&ctx)
                    .map_err(uncaught)
            })
        };
        'running: while error.is_none() && stopped.borrow().is_none() {
            loop {
                let ticked = match &timers {
                    Some((_, _, tick)) => match call(tick) {
                        Ok(ticked) => ticked != 0.0,
                        Err(message) => {
                            error = Some(message);
                            break 'running;
                        }
                    },
                    None => false,
                };
                let mut ran = false;
                while stopped.borrow().is_none() {
                    match runtime.execute_pending_job() {
                        Ok(true) => ran = true,
                        Ok(false) => break,
                        Err(_job) => {
                            error = Some(context.with(|ctx| {
                                uncaught(CaughtError::from_error(&ctx, rquickjs::Error::Exception))
                            }));
                            break 'running;
                        }
                    }
                }
                if !ticked && !ran {
                    break;
                }
            }
            let Some((next, fire, _)) = &timers else {
                break;
            };
            let wait = match call(next) {
                Ok(wait) if wait < 0.0 => break,
                Ok(wait) => wait,
                Err(_) => break,
            };
            if !self.sleep(wait, &exiting) {
                *stopped.borrow_mut() = Some(Stop::Deadline);
                break;
            }
            if let Err(message) = call(fire) {
                if stopped.borrow().is_none() {
                    error = Some(message);
                }
            }
        }
        drop(timers);
        drop(context);
        drop(runtime);
        let stop = *stopped.borrow();
        let host = Rc::try_unwrap(host)
            .map(RefCell::into_inner)
            .map_err(|_| bashkit::Error::Internal("node: the engine kept its host".into()))?;
        let [stdout, mut stderr] = host.out;
        if let (Some(Stop::Deadline), Some((_, limit))) = (stop, self.deadline) {
            return Err(bashkit::Error::ResourceLimit(LimitExceeded::Timeout(limit)));
        }
        let out_of_memory = refused.load(Ordering::Acquire)
            && match (&host.finished, &error) {
                (Some(CodeOutcome::Error(error)), _) => error.kind == Reason::Memory,
                (_, Some(message)) => {
                    message.contains("out of memory") || message.starts_with("Uncaught null")
                }
                _ => false,
            };
        if host.exit.is_none() && out_of_memory {
            return Err(bashkit::Error::ResourceLimit(LimitExceeded::Memory(
                format!(
                    "{} ({} bytes)",
                    ex_bashkit_core::error::JAVASCRIPT_HEAP,
                    self.max_memory
                ),
            )));
        }
        // A flood stopped at the cap: the script did not finish, and says
        // why in place of the engine's "interrupted".
        let error = match stop {
            Some(Stop::Flood) if host.exit.is_none() => Some(format!(
                "node: output passed the session's cap ({} bytes of stdout, {} of stderr); \
                 the script was stopped\n",
                host.caps[0], host.caps[1]
            )),
            _ => error,
        };
        let exit_code = match (host.exit, error) {
            // process.exit() throws to unwind the script: not an error.
            (Some(code), _) => code,
            (None, Some(message)) => {
                stderr.extend_from_slice(message.as_bytes());
                1
            }
            (None, None) => 0,
        };
        let exit_code = match self.execute {
            Some((_, slot)) => {
                let outcome = host.finished.unwrap_or_else(|| {
                    CodeOutcome::Error(CodeError::exception(
                        "Error",
                        "execute(input) returned a promise that never settled",
                        None,
                    ))
                });
                let failed = matches!(outcome, CodeOutcome::Error(_));
                slot.put(outcome, host.truncated.contains(&true));
                i32::from(failed || exit_code != 0)
            }
            None => exit_code,
        };
        let mut result = ExecResult::with_code(stdout, exit_code);
        result.stderr = stderr.into();
        result.stdout_truncated = host.truncated[0];
        result.stderr_truncated = host.truncated[1];
        Ok(result)
    }
}

/// A first run of the engine, once per process before any session: its
/// prelude compiled and its code paged in, which a zygote's children
/// inherit (a fresh worker's first `node` then costs what a warm one's
/// does). Starts no thread.
pub fn warm_up() {
    let mut host = Host::new(Arc::new(bashkit::InMemoryFs::new()), "/".into(), [0, 0]);
    host.grants = Some(Grants::default());
    let execute = Execute {
        grants: Grants::default(),
        input: "null".into(),
    };
    let slot = Slot::default();
    let run = Run {
        code: "function execute() {}",
        filename: "[warm-up]",
        print: false,
        max_memory: 64 << 20,
        deadline: None,
        execute: Some((&execute, &slot)),
        module: None,
    };
    let _ = run.go(host);
    if let Ok(runtime) = Runtime::new() {
        if let Ok(context) = Context::full(&runtime) {
            context.with(|ctx| {
                for (index, (name, source)) in CHUNKS.iter().enumerate() {
                    let label = format!("node:internal/{name}");
                    let _ = compiled(&ctx, &CHUNK_BYTECODE[index], &label, source);
                }
            });
        }
    }
    // What the run freed goes back to the system, not into every fork.
    // SAFETY: malloc_trim only releases free memory of this process's heap.
    unsafe { libc::malloc_trim(0) };
}

/// The prelude and the chunks, compiled once per process: evaluating
/// their bytecode costs a fraction of parsing them again for every run.
static PRELUDE_BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();
static CHUNK_BYTECODE: [OnceLock<Vec<u8>>; CHUNKS.len()] =
    [const { OnceLock::new() }; CHUNKS.len()];

/// `source` as the module `name`, compiled on the first call.
fn compiled<'a>(
    ctx: &Ctx<'_>,
    cell: &'a OnceLock<Vec<u8>>,
    name: &str,
    source: &str,
) -> rquickjs::Result<&'a [u8]> {
    if let Some(bytes) = cell.get() {
        return Ok(bytes);
    }
    let module = Module::declare(ctx.clone(), name, source)?;
    let bytes = module.write(WriteOptions::default())?;
    Ok(cell.get_or_init(|| bytes))
}

/// Loads and evaluates compiled module bytes.
fn evaluate<'js>(ctx: &Ctx<'js>, bytes: &'static [u8]) -> rquickjs::Result<Module<'js, Evaluated>> {
    // SAFETY: the bytes are this engine's own compilation of a source of
    // ours, made in this process (QuickJS-ng's `JS_ReadObject` copies
    // what it keeps).
    let module = unsafe { Module::load(ctx.clone(), bytes)? };
    let (module, done) = module.eval()?;
    done.finish::<()>()?;
    Ok(module)
}

fn prelude(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let bytes = compiled(ctx, &PRELUDE_BYTECODE, "prelude", PRELUDE)?;
    evaluate(ctx, bytes).map(drop)
}

/// The function of chunk `name` (`__host.chunk`).
pub fn chunk<'js>(ctx: &Ctx<'js>, name: &str) -> rquickjs::Result<Value<'js>> {
    let index = CHUNKS
        .iter()
        .position(|(known, _)| *known == name)
        .ok_or_else(|| Exception::throw_message(ctx, &format!("no chunk {name}")))?;
    let label = format!("node:internal/{name}");
    let bytes = compiled(ctx, &CHUNK_BYTECODE[index], &label, CHUNKS[index].1)?;
    evaluate(ctx, bytes)?.get("default")
}

impl Run<'_> {
    /// Declares the code as an ES module (its imports resolved and
    /// loaded) and, unless only checked, evaluates it to its end.
    fn module<'js>(
        &self,
        ctx: &Ctx<'js>,
        evaluate: Evaluate,
        main_file: &str,
    ) -> rquickjs::Result<Value<'js>> {
        let module = Module::declare(ctx.clone(), self.filename, self.code)?;
        modules::meta(&module, main_file)?;
        if evaluate == Evaluate::No {
            return Ok(Value::new_undefined(ctx.clone()));
        }
        let (_module, done) = module.eval()?;
        match done.finish::<Value>() {
            // A top-level await of what never settles: Node just exits.
            Err(rquickjs::Error::WouldBlock) => Ok(Value::new_undefined(ctx.clone())),
            other => other,
        }
    }
}

impl Run<'_> {
    /// Waits `ms` for the next timer, in slices, unless the deadline comes
    /// first (false) or the script exits.
    fn sleep(&self, ms: f64, exiting: &AtomicBool) -> bool {
        let until = Instant::now() + Duration::from_secs_f64(ms.max(0.0) / 1000.0);
        loop {
            let now = Instant::now();
            if exiting.load(Ordering::Acquire) || now >= until {
                return true;
            }
            if self.deadline.is_some_and(|(at, _)| now >= at) {
                return false;
            }
            let next = self.deadline.map_or(until, |(at, _)| until.min(at));
            std::thread::sleep((next - now).min(SLEEP_SLICE));
        }
    }
}

/// The longest a wait for a timer sleeps before it looks at the deadline.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

fn script_options(filename: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some(filename.to_string());
    options
}
