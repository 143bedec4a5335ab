//! `node`'s command line: what to run, and how.

use std::path::{Path, PathBuf};

/// What to run.
pub enum Source {
    Code(String),
    File(PathBuf),
}

pub struct Invocation {
    pub source: Source,
    /// The code came on stdin (`node < app.js`): nothing else was piped in.
    pub from_stdin: bool,
    /// `-p`: print the value of the last expression.
    pub print: bool,
    pub args: Vec<String>,
    /// `--execute`: the code runner's mode (`ExBashkit.Code.run/2`).
    pub execute: Option<Execute>,
    /// `--check`: parse the script, run nothing.
    pub check: bool,
}

/// `node --execute [--allow=GRANTS] FILE`, the code runner's driver
/// (`code.rs`): the script defines `execute(input)`; stdin holds the
/// input as JSON; the value it returned (or the error it threw) goes to
/// the code run that started it, and what it printed to stdout and
/// stderr. The script sees no `require`, `process` or files: only what
/// `--allow` grants (`read_files`, `crypto`, `fetch`, `commands`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execute {
    pub grants: Grants,
    /// The input, as JSON.
    pub input: String,
}

/// What `--allow` grants a script in `--execute` mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Grants {
    /// A global `fs` that reads files (up to `MAX_READ_BYTES` each).
    pub read_files: bool,
    /// A global `crypto`: hashes, HMAC, `randomUUID`.
    pub crypto: bool,
    /// A global `child_process`: commands in the run's own shell.
    pub commands: bool,
    /// A global `fetch`, through the session's network allowlist.
    pub fetch: bool,
}

impl Grants {
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut grants = Self::default();
        for name in list.split(',').filter(|name| !name.is_empty()) {
            match name {
                "read_files" => grants.read_files = true,
                "crypto" => grants.crypto = true,
                "commands" => grants.commands = true,
                "fetch" => grants.fetch = true,
                other => return Err(format!("node: unknown grant in --allow: {other}\n{USAGE}")),
            }
        }
        Ok(grants)
    }
}

/// The largest file a script in `--execute` mode may read (`fs.readFile`
/// there is read-only, at most 1 MB).
pub const MAX_READ_BYTES: u64 = 1 << 20;

const USAGE: &str =
    "usage: node [--check | --execute [--allow=GRANTS]] [-e CODE | -p EXPR | FILE | -] [ARGS...]\n";

impl Invocation {
    pub fn parse(args: &[String], stdin: Option<String>, cwd: &Path) -> Result<Self, String> {
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
        let mut from_stdin = false;
        let (source, print) = match args.next().as_deref() {
            Some("-e" | "--eval") => (Source::Code(next(&mut args)?), false),
            Some("-p" | "--print") => (Source::Code(next(&mut args)?), true),
            Some("-" | "--") | None => match stdin {
                Some(code) => {
                    from_stdin = true;
                    (Source::Code(code), false)
                }
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
            from_stdin,
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
