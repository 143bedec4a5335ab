//! What `node`'s host functions share for one run, and the file and HTTP
//! operations the prelude (`prelude.js`) builds `fs` and `fetch` on. Each
//! operation answers JSON, `{"ok": value}` or `{"err": code, "msg": text}`.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bashkit::{ExecResult, FileSystem};
use ex_bashkit_core::sync::block_on;
use ex_bashkit_protocol::code::CodeOutcome;
use serde_json::{json, Value};

use super::invocation::{Grants, MAX_READ_BYTES};
use ex_bashkit_core::tool_bridge::ToolBridge;

/// An operation's value, or Node's error code and message.
pub type Answer = Result<Value, (&'static str, String)>;

/// An HTTP response: its status, its headers in order, its body.
pub type Response = (u16, Vec<(String, String)>, Vec<u8>);

/// A failed operation.
pub fn failed<T>(
    code: &'static str,
    message: impl Into<String>,
) -> Result<T, (&'static str, String)> {
    Err((code, message.into()))
}

/// An answer as the prelude reads it.
pub fn encode(answer: Answer) -> String {
    match answer {
        Ok(value) => json!({ "ok": value }),
        Err((code, message)) => json!({ "err": code, "msg": message }),
    }
    .to_string()
}

pub struct Host {
    pub fs: Arc<dyn FileSystem>,
    /// The script's name, as its stack traces give it.
    pub filename: String,
    pub cwd: String,
    pub env: HashMap<String, String>,
    pub argv: Vec<String>,
    pub out: [Vec<u8>; 2],
    pub caps: [usize; 2],
    /// Whether stdout, stderr went past their caps.
    pub truncated: [bool; 2],
    pub exit: Option<i32>,
    /// `--execute` mode: what the script may use.
    pub grants: Option<Grants>,
    /// `--execute` mode: how `execute(input)` ended, once it has.
    pub finished: Option<CodeOutcome>,
    #[cfg(feature = "network")]
    pub http: Option<Arc<bashkit::HttpClient>>,
    pub tools: Option<Arc<ToolBridge>>,
    /// Whether the engine refused an allocation (`memory.rs`).
    pub refused: Arc<AtomicBool>,
    /// Whether output went past a cap: the script stops there, as a
    /// command's output does, rather than print on to its deadline.
    pub flooded: Arc<AtomicBool>,
    /// What was piped in, when the script came from elsewhere.
    pub stdin: Option<Vec<u8>>,
    /// Runs a command in a new shell of the session (`child_process`).
    pub shell: Option<Shell>,
    /// Counts what the script changed on the files (writes, commands
    /// run): module resolution forgets the files it found missing.
    pub changes: Rc<Cell<u64>>,
}

/// Runs a command in a new shell of the session and waits for it.
pub type Shell = Box<dyn Fn(Command) -> Result<ExecResult, String>>;

/// A command to run in a new shell of the session (`child_process`).
pub struct Command {
    pub script: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
}

impl Host {
    /// A host on `fs`, at `cwd`, with nothing printed yet.
    pub fn new(fs: Arc<dyn FileSystem>, cwd: String, caps: [usize; 2]) -> Self {
        Self {
            fs,
            filename: String::new(),
            cwd,
            env: HashMap::new(),
            argv: Vec::new(),
            out: [Vec::new(), Vec::new()],
            caps,
            truncated: [false, false],
            exit: None,
            grants: None,
            finished: None,
            #[cfg(feature = "network")]
            http: None,
            tools: None,
            refused: Arc::default(),
            flooded: Arc::default(),
            stdin: None,
            shell: None,
            changes: Rc::default(),
        }
    }

    /// Appends to stdout (`stream` 0) or stderr (1), within the caps.
    pub fn write(&mut self, stream: usize, text: &str) {
        if self.exit.is_some() {
            return;
        }
        let index = stream.min(1);
        let out = &mut self.out[index];
        let room = self.caps[index].saturating_sub(out.len());
        if text.len() > room {
            self.truncated[index] = true;
            self.flooded.store(true, Ordering::Release);
        }
        out.extend_from_slice(&text.as_bytes()[..text.len().min(room)]);
    }

    /// A file's bytes (`fs.readFileSync` without an encoding, and with one).
    pub fn read_bytes(&self, file: &Path) -> Result<Vec<u8>, (&'static str, String)> {
        if let Some(grants) = self.grants {
            if !grants.read_files {
                return failed("EACCES", "file access needs the read_files grant");
            }
            let meta = block_on(self.fs.stat(file)).map_err(|e| os_error(&e, "open", file))?;
            if meta.size > MAX_READ_BYTES {
                let message = format!(
                    "EFBIG: file too large ({} bytes; the limit is {MAX_READ_BYTES}), open '{}'",
                    meta.size,
                    file.display()
                );
                return failed("EFBIG", message);
            }
        }
        block_on(self.fs.read_file(file)).map_err(|e| os_error(&e, "open", file))
    }

    /// Writes (or appends) bytes to a file.
    pub fn write_bytes(
        &self,
        file: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<(), (&'static str, String)> {
        self.changed();
        if self.grants.is_some() {
            return failed("EACCES", "files are read-only here");
        }
        let done = if append {
            block_on(self.fs.append_file(file, data))
        } else {
            block_on(self.fs.write_file(file, data))
        };
        done.map_err(|e| os_error(&e, "open", file))
    }

    /// One file operation of `fs`, its arguments a JSON array.
    pub fn fs(&self, op: &str, args: &str) -> Answer {
        match self.grants {
            Some(grants) if !grants.read_files => {
                return failed("EACCES", "file access needs the read_files grant");
            }
            Some(_) if !matches!(op, "read" | "exists" | "readdir" | "stat") => {
                return failed("EACCES", "files are read-only here");
            }
            _ => {}
        }
        if !matches!(op, "read" | "exists" | "readdir" | "stat") {
            self.changed();
        }
        let args: Vec<Value> = serde_json::from_str(args).unwrap_or_default();
        let path = |i: usize| match args.get(i) {
            Some(Value::String(path)) => Ok(PathBuf::from(path)),
            _ => failed("EINVAL", "a path is required"),
        };
        let flag = |i: usize| matches!(args.get(i), Some(Value::Bool(true)));
        let fs = &self.fs;
        match op {
            "read" => {
                let bytes = self.read_bytes(&path(0)?)?;
                Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
            }
            "write" => {
                let data = args.get(1).and_then(Value::as_str).unwrap_or_default();
                self.write_bytes(&path(0)?, data.as_bytes(), flag(2))?;
                Ok(Value::Null)
            }
            "exists" => Ok(Value::Bool(block_on(fs.exists(&path(0)?)).unwrap_or(false))),
            "readdir" => {
                let dir = path(0)?;
                let mut entries =
                    block_on(fs.read_dir(&dir)).map_err(|e| os_error(&e, "scandir", &dir))?;
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(entries.into_iter().map(|entry| entry.name).collect())
            }
            "mkdir" => {
                let dir = path(0)?;
                block_on(fs.mkdir(&dir, flag(1))).map_err(|e| os_error(&e, "mkdir", &dir))?;
                Ok(Value::Null)
            }
            "remove" => {
                let file = path(0)?;
                block_on(fs.remove(&file, flag(1))).map_err(|e| os_error(&e, "rm", &file))?;
                Ok(Value::Null)
            }
            "rename" | "copy" => {
                let (from, to) = (path(0)?, path(1)?);
                let done = if op == "rename" {
                    block_on(fs.rename(&from, &to))
                } else {
                    block_on(fs.copy(&from, &to))
                };
                done.map_err(|e| os_error(&e, op, &from))?;
                Ok(Value::Null)
            }
            "stat" => {
                let file = path(0)?;
                let meta = block_on(fs.stat(&file)).map_err(|e| os_error(&e, "stat", &file))?;
                let kind = ex_bashkit_core::file_kind::of(meta.file_type).name();
                let modified = meta
                    .modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |since| since.as_secs_f64() * 1000.0);
                Ok(json!([kind, meta.size, meta.mode, modified]))
            }
            _ => failed("ENOSYS", format!("unknown file operation {op}")),
        }
    }

    /// Notes that the files may have changed.
    pub fn changed(&self) {
        self.changes.set(self.changes.get() + 1);
    }

    /// One HTTP request of `fetch`, through the session's client (its
    /// allowlist, its limits, and in a worker the host's egress),
    /// answered as `[status, [name, value, …], body]`. `headers` is a
    /// JSON array of names and values.
    pub fn fetch(&self, method: &str, url: &str, headers: &str, body: Option<&str>) -> Answer {
        let headers: Vec<String> = serde_json::from_str::<Vec<Value>>(headers)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|value| match value {
                Value::String(text) => Some(text),
                _ => None,
            })
            .collect();
        let headers: Vec<(String, String)> = headers
            .chunks_exact(2)
            .map(|pair| (pair[0].clone(), pair[1].clone()))
            .collect();
        let (status, headers, body) =
            self.request(method, url, &headers, body.map(str::as_bytes))?;
        let flat: Vec<&String> = headers.iter().flat_map(|(n, v)| [n, v]).collect();
        Ok(json!([status, flat, String::from_utf8_lossy(&body)]))
    }

    /// One HTTP request, bytes both ways: what `fetch` and the `http`
    /// and `https` modules send.
    pub fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Result<Response, (&'static str, String)> {
        if self.grants.is_some_and(|grants| !grants.fetch) {
            return failed("EACCES", "fetch needs the fetch grant");
        }
        #[cfg(feature = "network")]
        if let Some(client) = &self.http {
            let Some(method) = ex_bashkit_core::network::http_method(method) else {
                return failed("EINVAL", format!("unsupported method {method}"));
            };
            let request = client.request_with_headers(method, url, body, headers);
            return match block_on(request) {
                Ok(response) => Ok((response.status, response.headers, response.body)),
                Err(error) => failed("EFETCH", format!("fetch failed: {error}")),
            };
        }
        let _ = (method, url, headers, body);
        failed(
            "EACCES",
            "fetch failed: the sandbox has no network access (no allow_net)",
        )
    }
}

/// A file error as Node words it: `ENOENT: no such file or directory, open '/x'`.
fn os_error(error: &bashkit::Error, syscall: &str, path: &Path) -> (&'static str, String) {
    let text = error.to_string();
    // A rule of the session's (git metadata in a mount) says which.
    if let Some((_, why)) = text.split_once("refused: ") {
        return (
            "EACCES",
            format!(
                "EACCES: permission denied, {syscall} '{}' (refused: {why})",
                path.display()
            ),
        );
    }
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
