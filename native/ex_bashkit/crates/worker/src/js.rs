//! `node` in a worker process (`javascript: true`): real ECMAScript on
//! QuickJS-ng (the `rquickjs` crate), run only here, where a crash or a
//! runaway of the engine costs its session's process and nothing else.
//!
//! `node FILE [ARGS]`, `node -e CODE`, `node -p EXPR`, and a script on
//! stdin. The globals Node programs use most (`console`, `process`,
//! `require("fs")`, `require("path")`, CommonJS files of the session) come
//! from `js/prelude.js` over a few host functions, which reach the
//! session's own filesystem, the one bash and Python see. Each run has a
//! fresh engine: the memory cap, the session's deadline (checked by the
//! engine's interrupt handler) and a stack cap bound it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, FileSystem, LimitExceeded};
use ex_bashkit_core::callback::{Channel, Reply, Request};
use ex_bashkit_core::policy::Gate;
use ex_bashkit_core::sync::block_on;

use crate::deadline::Deadline;
use rquickjs::context::EvalOptions;
use rquickjs::module::WriteOptions;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object, Runtime, Value,
};

const PRELUDE: &str = include_str!("js/prelude.js");

/// The engine's own stack, under the interpreter thread's.
const MAX_STACK_BYTES: usize = 8 << 20;

/// The `node` command of one session.
pub struct Node {
    /// `:max_javascript_memory_bytes`.
    pub max_memory: usize,
    /// `:max_stdout_bytes`, `:max_stderr_bytes`.
    pub max_output: (usize, usize),
    /// When the running script must stop (`deadline.rs`).
    pub deadline: Arc<Deadline>,
    /// The session's builtins, as `tools` functions.
    pub tools: Arc<Tools>,
}

/// What `tools.orders.list({...})` calls: builtin `orders` with the
/// arguments `list` and the object as JSON on stdin, asked through the
/// session's gate (its `:command_policy`) and its callbacks, as the
/// command `orders list` would be (`ExBashkit.Tool.Command`).
pub struct Tools {
    /// The session's `:builtins` (with its `:tools`' commands).
    pub names: Vec<String>,
    pub channel: Arc<Channel>,
    pub gate: Arc<Gate>,
}

impl Tools {
    /// One call, answered as `{"ok": stdout}` or `{"err": …, "msg": …}`.
    fn call(
        &self,
        name: &str,
        args: &[String],
        stdin: &str,
        env: &HashMap<String, String>,
        cwd: &str,
    ) -> String {
        if !self.names.iter().any(|known| known == name) {
            return error_json("ENOENT", &format!("there is no tool {name}"));
        }
        if let Err(why) = self.gate.admits(name, args) {
            return error_json("EACCES", &why);
        }
        let request = Request::Builtin {
            name,
            args,
            stdin: stdin.as_bytes(),
            env,
            cwd,
        };
        match block_on(self.channel.call(request)) {
            Ok(Reply::Output(stdout, _, 0)) => {
                format!(
                    "{{\"ok\":{}}}",
                    json_string(&String::from_utf8_lossy(&stdout))
                )
            }
            Ok(Reply::Output(_, stderr, code)) => {
                let message = String::from_utf8_lossy(&stderr);
                let message = message.trim_end();
                let message = if message.is_empty() {
                    format!("{name} exited with status {code}")
                } else {
                    message.to_string()
                };
                error_json("ETOOL", &message)
            }
            Ok(_) => error_json("ETOOL", &format!("{name}: invalid reply")),
            Err(why) => error_json("ETOOL", &format!("{name}: {why}")),
        }
    }
}

/// What to run.
enum Source {
    Code(String),
    File(PathBuf),
}

struct Invocation {
    source: Source,
    /// `-p`: print the value of the last expression.
    print: bool,
    args: Vec<String>,
    /// `--execute`: the code runner's mode (`ExBashkit.Code.run/2`).
    execute: Option<Execute>,
    /// `--check`: parse the script, run nothing.
    check: bool,
}

/// `node --execute [--allow=GRANTS] FILE`: the script defines
/// `execute(input)`; stdin holds the input as JSON; stdout is one JSON
/// envelope with the value it returned (or the error it threw) and what
/// it printed. The script sees no `require`, `process` or files: only
/// what `--allow` grants (`read_files`, `crypto`, `fetch`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execute {
    pub grants: Grants,
    /// The input, as JSON.
    pub input: String,
}

/// What `--allow` grants a script in `--execute` mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// A global `fs` that reads files (up to `MAX_READ_BYTES` each).
    pub read_files: bool,
    /// A global `crypto`: hashes, HMAC, `randomUUID`.
    pub crypto: bool,
    /// A global `fetch`, through the session's network allowlist.
    pub fetch: bool,
}

impl Grants {
    fn parse(list: &str) -> Result<Self, String> {
        let mut grants = Self::default();
        for name in list.split(',').filter(|name| !name.is_empty()) {
            match name {
                "read_files" => grants.read_files = true,
                "crypto" => grants.crypto = true,
                "fetch" => grants.fetch = true,
                other => return Err(format!("node: unknown grant in --allow: {other}\n{USAGE}")),
            }
        }
        Ok(grants)
    }

    fn json(self) -> String {
        format!(
            "{{\"read_files\":{},\"crypto\":{},\"fetch\":{}}}",
            self.read_files, self.crypto, self.fetch
        )
    }
}

/// The largest file a script in `--execute` mode may read (`fs.readFile`
/// there is read-only, at most 1 MB).
pub const MAX_READ_BYTES: u64 = 1 << 20;

const USAGE: &str =
    "usage: node [--check | --execute [--allow=GRANTS]] [-e CODE | -p EXPR | FILE | -] [ARGS...]\n";

impl Invocation {
    fn parse(args: &[String], stdin: Option<String>, cwd: &Path) -> Result<Self, String> {
        let mut args = args.iter().peekable();
        let mut execute = None::<Execute>;
        let mut check = false;
        while let Some(flag) = args.peek() {
            if matches!(flag.as_str(), "--check" | "-c") {
                check = true;
            } else if flag.as_str() == "--execute" {
                execute.get_or_insert_with(Execute::default);
            } else if let Some(list) = flag.strip_prefix("--allow=") {
                execute.get_or_insert_with(Execute::default).grants = Grants::parse(list)?;
            } else {
                break;
            }
            args.next();
        }
        // In `--execute` mode stdin is the input, never the code.
        let stdin = match &mut execute {
            Some(execute) => {
                let input = stdin.unwrap_or_default();
                execute.input = if input.trim().is_empty() {
                    "null".into()
                } else {
                    input
                };
                None
            }
            None => stdin,
        };
        let mut args = args.cloned().collect::<Vec<_>>().into_iter();
        let (source, print) = match args.next().as_deref() {
            Some("-e" | "--eval") => (Source::Code(next(&mut args)?), false),
            Some("-p" | "--print") => (Source::Code(next(&mut args)?), true),
            Some("-" | "--") | None => match stdin {
                Some(code) => (Source::Code(code), false),
                None => return Err(format!("node: no script given\n{USAGE}")),
            },
            Some("-v" | "--version") => return Err(String::new()),
            Some(flag) if flag.starts_with('-') => {
                return Err(format!("node: bad option: {flag}\n{USAGE}"));
            }
            Some(file) => (Source::File(cwd.join(file)), false),
        };
        Ok(Self {
            source,
            print,
            args: args.collect(),
            execute,
            check,
        })
    }
}

fn next(args: &mut impl Iterator<Item = String>) -> Result<String, String> {
    args.next()
        .ok_or_else(|| format!("node: the option requires an argument\n{USAGE}"))
}

#[async_trait]
impl Builtin for Node {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let stdin = ctx.stdin.map(|data| data.text_lossy().into_owned());
        let invocation = match Invocation::parse(ctx.args, stdin, ctx.cwd) {
            Ok(invocation) => invocation,
            Err(message) if message.is_empty() => return Ok(ExecResult::ok("v20.0.0\n")),
            Err(message) => return Ok(ExecResult::err(message, 9)),
        };
        let (code, filename) = match &invocation.source {
            Source::Code(code) => (code.clone(), "[eval]".to_string()),
            Source::File(path) => match ctx.fs.read_file(path).await {
                Ok(bytes) => (
                    String::from_utf8_lossy(&bytes).into_owned(),
                    path.display().to_string(),
                ),
                Err(_) => {
                    let message = format!("node: cannot find module '{}'\n", path.display());
                    return Ok(ExecResult::err(message, 1));
                }
            },
        };
        let module = invocation.execute.is_none()
            && !invocation.print
            && modules::is_module(&filename, &code);
        // A function that is never called: parsed in full, run not at all
        // (a module is declared and not evaluated).
        let code = if invocation.check && !module {
            format!("(function () {{{code}\n}})")
        } else {
            code
        };
        let mut argv = vec!["/usr/bin/node".to_string()];
        if let Source::File(path) = &invocation.source {
            argv.push(path.display().to_string());
        }
        argv.extend(invocation.args.iter().cloned());
        let host = Host {
            fs: ctx.fs.clone(),
            cwd: ctx.cwd.display().to_string(),
            env: ctx
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            argv,
            out: [Vec::new(), Vec::new()],
            caps: [self.max_output.0, self.max_output.1],
            exit: None,
            grants: invocation.execute.as_ref().map(|execute| execute.grants),
            finished: None,
            #[cfg(feature = "network")]
            http: ctx.http_client.cloned(),
            tools: Some(self.tools.clone()),
        };
        let deadline = self.deadline.at();
        let run = Run {
            code: &code,
            filename: &filename,
            print: invocation.print && !invocation.check,
            max_memory: self.max_memory,
            deadline,
            execute: invocation.execute.as_ref(),
            module: module.then_some(if invocation.check {
                Evaluate::No
            } else {
                Evaluate::Yes
            }),
        };
        run.go(host)
    }
}

/// What the host functions share for one run.
struct Host {
    fs: Arc<dyn FileSystem>,
    cwd: String,
    env: Vec<(String, String)>,
    argv: Vec<String>,
    out: [Vec<u8>; 2],
    caps: [usize; 2],
    exit: Option<i32>,
    /// `--execute` mode: what the script may use.
    grants: Option<Grants>,
    /// `--execute` mode: the JSON of the value `execute` returned
    /// (`Ok`) or of the error it threw (`Err`).
    finished: Option<Result<String, String>>,
    #[cfg(feature = "network")]
    http: Option<Arc<bashkit::HttpClient>>,
    tools: Option<Arc<Tools>>,
}

impl Host {
    /// Appends to stdout (`stream` 0) or stderr (1), within the caps.
    fn write(&mut self, stream: usize, text: &str) {
        if self.exit.is_some() {
            return;
        }
        let index = stream.min(1);
        let out = &mut self.out[index];
        let room = self.caps[index].saturating_sub(out.len());
        out.extend_from_slice(&text.as_bytes()[..text.len().min(room)]);
    }

    /// One file operation, answered as JSON (`{"ok": …}` or
    /// `{"err": code, "msg": text}`), as the prelude reads it.
    fn fs(&self, op: &str, args: &str) -> String {
        match self.grants {
            Some(grants) if !grants.read_files => {
                return error_json("EACCES", "file access needs the read_files grant");
            }
            Some(_) if !matches!(op, "read" | "exists" | "readdir" | "stat") => {
                return error_json("EACCES", "files are read-only here");
            }
            _ => {}
        }
        let args: Vec<Arg> = parse_args(args);
        let path = |i: usize| match args.get(i) {
            Some(Arg::Text(path)) => Ok(PathBuf::from(path)),
            _ => Err(("EINVAL", "a path is required".to_string())),
        };
        let flag = |i: usize| matches!(args.get(i), Some(Arg::Flag(true)));
        let fs = &self.fs;
        let answer: Result<String, (&str, String)> = (|| match op {
            "read" => {
                let file = path(0)?;
                if self.grants.is_some() {
                    let meta = block_on(fs.stat(&file)).map_err(|e| os_error(&e, "open", &file))?;
                    if meta.size > MAX_READ_BYTES {
                        let message = format!(
                            "EFBIG: file too large ({} bytes; the limit is {MAX_READ_BYTES}), open '{}'",
                            meta.size,
                            file.display()
                        );
                        return Err(("EFBIG", message));
                    }
                }
                let bytes =
                    block_on(fs.read_file(&file)).map_err(|e| os_error(&e, "open", &file))?;
                Ok(json_string(&String::from_utf8_lossy(&bytes)))
            }
            "write" => {
                let file = path(0)?;
                let data = match args.get(1) {
                    Some(Arg::Text(data)) => data.clone(),
                    _ => String::new(),
                };
                let done = if flag(2) {
                    block_on(fs.append_file(&file, data.as_bytes()))
                } else {
                    block_on(fs.write_file(&file, data.as_bytes()))
                };
                done.map_err(|e| os_error(&e, "open", &file))?;
                Ok("null".into())
            }
            "exists" => Ok(block_on(fs.exists(&path(0)?)).unwrap_or(false).to_string()),
            "readdir" => {
                let dir = path(0)?;
                let mut entries =
                    block_on(fs.read_dir(&dir)).map_err(|e| os_error(&e, "scandir", &dir))?;
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                let names: Vec<String> = entries.iter().map(|e| json_string(&e.name)).collect();
                Ok(format!("[{}]", names.join(",")))
            }
            "mkdir" => {
                let dir = path(0)?;
                block_on(fs.mkdir(&dir, flag(1))).map_err(|e| os_error(&e, "mkdir", &dir))?;
                Ok("null".into())
            }
            "remove" => {
                let file = path(0)?;
                block_on(fs.remove(&file, flag(1))).map_err(|e| os_error(&e, "rm", &file))?;
                Ok("null".into())
            }
            "stat" => {
                let file = path(0)?;
                let meta = block_on(fs.stat(&file)).map_err(|e| os_error(&e, "stat", &file))?;
                let kind = ex_bashkit_core::file_kind::of(meta.file_type).name();
                Ok(format!("[{},{}]", json_string(kind), meta.size))
            }
            _ => Err(("ENOSYS", format!("unknown file operation {op}"))),
        })();
        match answer {
            Ok(value) => format!("{{\"ok\":{value}}}"),
            Err((code, message)) => error_json(code, &message),
        }
    }
}

impl Host {
    /// One HTTP request of `fetch`, through the session's client (its
    /// allowlist, its limits, and in a worker the host's egress), answered
    /// as `{"ok": [status, [name, value, …], body]}` or an error.
    fn fetch(&self, method: &str, url: &str, headers: &str, body: Option<&str>) -> String {
        if self.grants.is_some_and(|grants| !grants.fetch) {
            return error_json("EACCES", "fetch needs the fetch grant");
        }
        #[cfg(feature = "network")]
        if let Some(client) = &self.http {
            let Some(method) = ex_bashkit_core::network::http_method(method) else {
                return error_json("EINVAL", &format!("unsupported method {method}"));
            };
            let texts: Vec<String> = parse_args(headers)
                .into_iter()
                .filter_map(|arg| match arg {
                    Arg::Text(text) => Some(text),
                    Arg::Flag(_) => None,
                })
                .collect();
            let headers: Vec<(String, String)> = texts
                .chunks_exact(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect();
            let request =
                client.request_with_headers(method, url, body.map(str::as_bytes), &headers);
            return match block_on(request) {
                Ok(response) => {
                    let headers: Vec<String> = response
                        .headers
                        .iter()
                        .flat_map(|(name, value)| [json_string(name), json_string(value)])
                        .collect();
                    format!(
                        "{{\"ok\":[{},[{}],{}]}}",
                        response.status,
                        headers.join(","),
                        json_string(&response.body_string())
                    )
                }
                Err(error) => error_json("EFETCH", &format!("fetch failed: {error}")),
            };
        }
        let _ = (method, url, headers, body);
        error_json(
            "EACCES",
            "fetch failed: the sandbox has no network access (no allow_net)",
        )
    }
}

fn error_json(code: &str, message: &str) -> String {
    format!(
        "{{\"err\":{},\"msg\":{}}}",
        json_string(code),
        json_string(message)
    )
}

/// A file error as Node words it: `ENOENT: no such file or directory, open '/x'`.
fn os_error(error: &bashkit::Error, syscall: &str, path: &Path) -> (&'static str, String) {
    let text = error.to_string();
    let (code, what) = if text.contains("not found") || text.contains("No such file") {
        ("ENOENT", "no such file or directory")
    } else if text.contains("already exists") {
        ("EEXIST", "file already exists")
    } else if text.contains("not a directory") || text.contains("Not a directory") {
        ("ENOTDIR", "not a directory")
    } else if text.contains("is a directory") || text.contains("Is a directory") {
        ("EISDIR", "illegal operation on a directory")
    } else if text.contains("not empty") {
        ("ENOTEMPTY", "directory not empty")
    } else if text.contains("read-only") || text.contains("Read-only") || text.contains("denied") {
        ("EACCES", "permission denied")
    } else {
        ("EIO", "i/o error")
    };
    (
        code,
        format!("{code}: {what}, {syscall} '{}'", path.display()),
    )
}

/// An argument of a file operation, from the prelude's JSON array.
enum Arg {
    Text(String),
    Flag(bool),
}

/// Reads the prelude's `JSON.stringify([...])` of strings and booleans.
fn parse_args(json: &str) -> Vec<Arg> {
    let mut args = Vec::new();
    let mut chars = json.trim().trim_start_matches('[').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut text = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some('n') => text.push('\n'),
                            Some('t') => text.push('\t'),
                            Some('r') => text.push('\r'),
                            Some('b') => text.push('\u{8}'),
                            Some('f') => text.push('\u{c}'),
                            Some('u') => {
                                let hex: String = chars.by_ref().take(4).collect();
                                let unit = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                                text.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                            }
                            Some(other) => text.push(other),
                            None => break,
                        },
                        other => text.push(other),
                    }
                }
                args.push(Arg::Text(text));
            }
            't' => args.push(Arg::Flag(true)),
            'f' => args.push(Arg::Flag(false)),
            _ => {}
        }
    }
    args
}

fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One run of the engine.
struct Run<'a> {
    code: &'a str,
    filename: &'a str,
    print: bool,
    max_memory: usize,
    /// When the script must stop, and the limit that says so.
    deadline: Option<(Instant, Duration)>,
    execute: Option<&'a Execute>,
    /// An ES module, evaluated or (`--check`) only declared.
    module: Option<Evaluate>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Evaluate {
    Yes,
    No,
}

/// Why the engine stopped before the script's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Exit,
    Deadline,
}

impl Run<'_> {
    fn go(self, host: Host) -> bashkit::Result<ExecResult> {
        let fail = |why: rquickjs::Error| bashkit::Error::Internal(format!("node: {why}"));
        let runtime = Runtime::new().map_err(fail)?;
        runtime.set_memory_limit(self.max_memory);
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        let host = Rc::new(RefCell::new(host));
        let stopped = Rc::new(RefCell::new(None::<Stop>));
        let exiting = Arc::new(AtomicBool::new(false));
        {
            let stopped = stopped.clone();
            let exiting = exiting.clone();
            let deadline = self.deadline;
            let mut polls = 0u32;
            runtime.set_interrupt_handler(Some(Box::new(move || {
                if exiting.load(Ordering::Acquire) {
                    *stopped.borrow_mut() = Some(Stop::Exit);
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
        if self.module.is_some() {
            let files = || modules::Files {
                fs: host.borrow().fs.clone(),
                cwd: PathBuf::from(&host.borrow().cwd),
            };
            runtime.set_loader(files(), files());
        }
        let context = Context::full(&runtime).map_err(fail)?;
        let error = context.with(|ctx| -> rquickjs::Result<Option<String>> {
            install(&ctx, &host, &exiting)?;
            prelude(&ctx)?;
            // The runner's driver, taken before the script can reach it.
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
                Some(evaluate) => self.module(&ctx, evaluate).catch(&ctx),
                None => ctx
                    .eval_with_options::<Value, _>(self.code, script_options(self.filename))
                    .catch(&ctx),
            };
            Ok(match (outcome, drive, self.execute) {
                (Ok(_), Some(drive), Some(execute)) => {
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
                    host.borrow_mut().finished = Some(Err(thrown(caught)));
                    None
                }
                (Err(caught), _, None) => Some(uncaught(caught)),
            })
        });
        let mut error = error.map_err(fail)?;
        // Promises and what they scheduled, until nothing is left.
        while error.is_none() && stopped.borrow().is_none() {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_job) => {
                    error = Some(context.with(|ctx| {
                        uncaught(CaughtError::from_error(&ctx, rquickjs::Error::Exception))
                    }));
                }
            }
        }
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
        let exit_code = match (host.exit, error) {
            // process.exit() throws to unwind the script: not an error.
            (Some(code), _) => code,
            (None, Some(message))
                if message.contains("out of memory")
                    || host.finished.as_ref().is_some_and(out_of_memory) =>
            {
                return Err(bashkit::Error::ResourceLimit(LimitExceeded::Memory(
                    format!(
                        "{} ({} bytes)",
                        ex_bashkit_core::error::JAVASCRIPT_HEAP,
                        self.max_memory
                    ),
                )));
            }
            (None, Some(message)) => {
                stderr.extend_from_slice(message.as_bytes());
                1
            }
            (None, None) => 0,
        };
        if self.execute.is_some() {
            return Ok(ExecResult::ok(envelope(host.finished, &stdout, &stderr)));
        }
        let mut result = ExecResult::with_code(stdout, exit_code);
        result.stderr = stderr.into();
        Ok(result)
    }
}

/// A first run of the engine, once per process before any session: its
/// prelude compiled and its code paged in, which a zygote's children
/// inherit (a fresh worker's first `node` then costs what a warm one's
/// does). Starts no thread.
pub fn warm_up() {
    let host = Host {
        fs: Arc::new(bashkit::InMemoryFs::new()),
        cwd: "/".into(),
        env: Vec::new(),
        argv: Vec::new(),
        out: [Vec::new(), Vec::new()],
        caps: [0, 0],
        exit: None,
        grants: Some(Grants::default()),
        finished: None,
        #[cfg(feature = "network")]
        http: None,
        tools: None,
    };
    let execute = Execute::default();
    let run = Run {
        code: "function execute() {}",
        filename: "[warm-up]",
        print: false,
        max_memory: 64 << 20,
        deadline: None,
        execute: Some(&execute),
        module: None,
    };
    let _ = run.go(host);
    // What the run freed goes back to the system, not into every fork.
    // SAFETY: malloc_trim only releases free memory of this process's heap.
    unsafe { libc::malloc_trim(0) };
}

/// The prelude, compiled once per process: evaluating its bytecode costs
/// a fraction of parsing it again for every run.
static PRELUDE_BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();

fn prelude(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let bytes = match PRELUDE_BYTECODE.get() {
        Some(bytes) => bytes,
        None => {
            let module = Module::declare(ctx.clone(), "prelude", PRELUDE)?;
            let bytes = module.write(WriteOptions::default())?;
            PRELUDE_BYTECODE.get_or_init(|| bytes)
        }
    };
    // SAFETY: the bytes are this engine's own compilation of PRELUDE, made
    // in this process, and live as long as it does (`JS_ReadObject` with
    // ROM data keeps pointing into them).
    let module = unsafe { Module::load(ctx.clone(), bytes)? };
    let (_module, done) = module.eval()?;
    done.finish::<()>()
}

impl Run<'_> {
    /// Declares the code as an ES module (its imports resolved and
    /// loaded) and, unless only checked, evaluates it to its end.
    fn module<'js>(&self, ctx: &Ctx<'js>, evaluate: Evaluate) -> rquickjs::Result<Value<'js>> {
        let module = Module::declare(ctx.clone(), self.filename, self.code)?;
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

fn script_options(filename: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some(filename.to_string());
    options
}

fn out_of_memory(finished: &Result<String, String>) -> bool {
    matches!(finished, Err(error) if error.contains("out of memory"))
}

/// `--execute` mode's stdout: `{"result": …}` or `{"error": {"name",
/// "message", "stack"}}`, with what the script printed.
fn envelope(finished: Option<Result<String, String>>, stdout: &[u8], stderr: &[u8]) -> String {
    let outcome = match finished {
        Some(Ok(json)) => format!("\"result\":{json}"),
        Some(Err(error)) => format!("\"error\":{error}"),
        None => format!(
            "\"error\":{{\"name\":\"Error\",\"message\":{},\"stack\":\"\"}}",
            json_string("execute(input) returned a promise that never settled")
        ),
    };
    format!(
        "{{{outcome},\"stdout\":{},\"stderr\":{}}}",
        json_string(&String::from_utf8_lossy(stdout)),
        json_string(&String::from_utf8_lossy(stderr))
    )
}

/// A thrown value as `{"name", "message", "stack"}` JSON.
fn thrown(caught: CaughtError<'_>) -> String {
    let (name, message, stack) = match caught {
        CaughtError::Exception(exception) => (
            exception
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".into()),
            exception.message().unwrap_or_default(),
            exception.stack().unwrap_or_default(),
        ),
        CaughtError::Value(value) => (
            "Error".into(),
            format!("Uncaught {}", describe(&value)),
            String::new(),
        ),
        CaughtError::Error(error) => ("Error".into(), error.to_string(), String::new()),
    };
    format!(
        "{{\"name\":{},\"message\":{},\"stack\":{}}}",
        json_string(&name),
        json_string(&message),
        json_string(&stack)
    )
}

/// An uncaught exception as Node reports it: the error, then its stack.
fn uncaught(caught: CaughtError<'_>) -> String {
    match caught {
        CaughtError::Exception(exception) => {
            let name = exception
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".into());
            let message = exception.message().unwrap_or_default();
            let head = if message.is_empty() {
                name
            } else {
                format!("{name}: {message}")
            };
            match exception.stack() {
                Some(stack) if !stack.trim().is_empty() => {
                    format!("Uncaught {head}\n{}\n", stack.trim_end())
                }
                _ => format!("Uncaught {head}\n"),
            }
        }
        CaughtError::Value(value) => format!("Uncaught {}\n", describe(&value)),
        CaughtError::Error(error) => format!("{error}\n"),
    }
}

fn describe(value: &Value<'_>) -> String {
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return format!("'{text}'");
    }
    if let Some(n) = value.as_number() {
        return n.to_string();
    }
    format!("{value:?}")
}

/// The hex digest of `data` under `algorithm` (`sha256`, `sha512`, `sha1`,
/// `md5`), keyed (HMAC) when `key` is given; `None` for an unknown one.
fn digest(algorithm: &str, key: Option<&str>, data: &[u8]) -> Option<String> {
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::Digest;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
    fn keyed<M: Mac + KeyInit>(key: &str, data: &[u8]) -> String {
        let mut mac = <M as KeyInit>::new_from_slice(key.as_bytes()).expect("HMAC takes any key");
        mac.update(data);
        hex(&mac.finalize().into_bytes())
    }
    Some(match (algorithm.to_ascii_lowercase().as_str(), key) {
        ("sha256", None) => hex(&sha2::Sha256::digest(data)),
        ("sha512", None) => hex(&sha2::Sha512::digest(data)),
        ("sha384", None) => hex(&sha2::Sha384::digest(data)),
        ("sha1", None) => hex(&sha1::Sha1::digest(data)),
        ("md5", None) => hex(&md5::Md5::digest(data)),
        ("sha256", Some(key)) => keyed::<Hmac<sha2::Sha256>>(key, data),
        ("sha512", Some(key)) => keyed::<Hmac<sha2::Sha512>>(key, data),
        ("sha384", Some(key)) => keyed::<Hmac<sha2::Sha384>>(key, data),
        ("sha1", Some(key)) => keyed::<Hmac<sha1::Sha1>>(key, data),
        ("md5", Some(key)) => keyed::<Hmac<md5::Md5>>(key, data),
        _ => return None,
    })
}

/// `__host`: what the prelude builds Node's globals on.
fn install<'js>(
    ctx: &Ctx<'js>,
    host: &Rc<RefCell<Host>>,
    exiting: &Arc<AtomicBool>,
) -> rquickjs::Result<()> {
    let object = Object::new(ctx.clone())?;
    let h = host.clone();
    object.set(
        "write",
        Function::new(ctx.clone(), move |fd: usize, text: String| {
            h.borrow_mut().write(fd.saturating_sub(1), &text);
        })?,
    )?;
    let h = host.clone();
    object.set(
        "fs",
        Function::new(ctx.clone(), move |op: String, args: String| {
            h.borrow().fs(&op, &args)
        })?,
    )?;
    let h = host.clone();
    object.set(
        "cwd",
        Function::new(ctx.clone(), move || h.borrow().cwd.clone())?,
    )?;
    let h = host.clone();
    object.set(
        "argv",
        Function::new(ctx.clone(), move || {
            let items: Vec<String> = h.borrow().argv.iter().map(|a| json_string(a)).collect();
            format!("[{}]", items.join(","))
        })?,
    )?;
    let h = host.clone();
    object.set(
        "env",
        Function::new(ctx.clone(), move || {
            let pairs: Vec<String> = h
                .borrow()
                .env
                .iter()
                .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
                .collect();
            format!("{{{}}}", pairs.join(","))
        })?,
    )?;
    let h = host.clone();
    let flag = exiting.clone();
    object.set(
        "exit",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, code: i32| -> rquickjs::Result<()> {
                h.borrow_mut().exit.get_or_insert(code);
                flag.store(true, Ordering::Release);
                Err(Exception::throw_internal(&ctx, "process.exit"))
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "hash",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, algorithm: String, key: Option<String>, data: String| {
                if h.borrow().grants.is_some_and(|grants| !grants.crypto) {
                    return Err(Exception::throw_message(
                        &ctx,
                        "crypto needs the crypto grant",
                    ));
                }
                digest(&algorithm, key.as_deref(), data.as_bytes()).ok_or_else(|| {
                    Exception::throw_message(
                        &ctx,
                        &format!("Digest method not supported: {algorithm}"),
                    )
                })
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "fetch",
        Function::new(
            ctx.clone(),
            move |method: String, url: String, headers: String, body: Option<String>| {
                h.borrow().fetch(&method, &url, &headers, body.as_deref())
            },
        )?,
    )?;
    let h = host.clone();
    object.set(
        "tool",
        Function::new(ctx.clone(), move |path: String, stdin: String| {
            let host = h.borrow();
            let Some(tools) = &host.tools else {
                return error_json("ENOENT", "this engine has no tools");
            };
            let mut path: Vec<String> = parse_args(&path)
                .into_iter()
                .filter_map(|arg| match arg {
                    Arg::Text(text) => Some(text),
                    Arg::Flag(_) => None,
                })
                .collect();
            if path.is_empty() {
                return error_json("EINVAL", "a tool name is required");
            }
            let name = path.remove(0);
            let env: HashMap<String, String> = host.env.iter().cloned().collect();
            tools.call(&name, &path, &stdin, &env, &host.cwd)
        })?,
    )?;
    let h = host.clone();
    object.set(
        "grants",
        Function::new(ctx.clone(), move || h.borrow().grants.map(Grants::json))?,
    )?;
    let h = host.clone();
    object.set(
        "finish",
        Function::new(ctx.clone(), move |ok: bool, json: String| {
            let mut host = h.borrow_mut();
            if host.finished.is_none() {
                host.finished = Some(if ok { Ok(json) } else { Err(json) });
            }
        })?,
    )?;
    object.set(
        "compile",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, code: String, file: String| -> rquickjs::Result<Value<'js>> {
                let mut options = EvalOptions::default();
                options.global = true;
                options.strict = false;
                options.filename = Some(file);
                ctx.eval_with_options(code, options)
            },
        )?,
    )?;
    ctx.globals().set("__host", object)
}

mod modules;

#[cfg(test)]
mod tests;
