//! The command line of the sandbox's `git`: the `Git` builtin, what a
//! command prints ([`Out`]), and where it runs ([`Here`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult, FileSystem};

use ex_bashkit_protocol::options::AllowNet;

use crate::{commands, config};

pub struct Git {
    /// Who commits when `git config user.name`/`user.email` do not say.
    pub name: String,
    pub email: String,
    /// The session's `:allow_net`: which remote URLs may be named.
    pub remotes: AllowNet,
    /// The session's host mounts: (mount point, the host directory,
    /// canonical, read-write), so a work tree in one is read (and, where
    /// the mount allows, written) straight on the host.
    pub mounts: Vec<(PathBuf, PathBuf, bool)>,
    /// The client clones and fetches go through (`options::transfer_client`),
    /// where `:allow_net` gave the session a network.
    #[cfg(feature = "network")]
    pub http: Option<Arc<bashkit::HttpClient>>,
}

/// What a command prints and its exit status.
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Out {
    pub fn ok(stdout: impl Into<String>) -> Self {
        Self {
            stdout: stdout.into(),
            stderr: String::new(),
            code: 0,
        }
    }

    pub fn fatal(message: impl std::fmt::Display) -> Self {
        Self::error(format!("fatal: {message}\n"), 128)
    }

    pub fn error(stderr: impl Into<String>, code: i32) -> Self {
        Self {
            stdout: String::new(),
            stderr: stderr.into(),
            code,
        }
    }

    pub fn with_stderr(mut self, stderr: impl Into<String>) -> Self {
        self.stderr.push_str(&stderr.into());
        self
    }
}

/// Whether a remote as given names a directory (`.`, `../x`, `/srv/x.git`,
/// `file://…`) rather than a remote's name or a URL.
pub fn is_path_remote(given: &str) -> bool {
    given == "."
        || given == ".."
        || given.starts_with(['/', '~'])
        || given.starts_with("./")
        || given.starts_with("../")
        || given.starts_with("file://")
}

/// A repository on a path as a remote: git reads it directly; ours
/// speaks only HTTP.
pub fn path_remote_refused(given: &str) -> Out {
    Out::fatal(format!(
        "not supported by the sandbox's git: a repository on a path as a remote ('{given}'); \
         remotes are reached over HTTP(S)"
    ))
}

/// Refuses a remote URL the session's `:allow_net` does not allow.
pub fn check_allowed(git: &Git, url: &str) -> Result<(), Out> {
    let allowed = match &git.remotes {
        AllowNet::None => {
            return Err(Out::fatal(format!(
                "remote URL {url} is not allowed: no remote URLs are allowed in this \
                 session (give the session :allow_net for it)"
            )))
        }
        AllowNet::All => true,
        AllowNet::Only(patterns) => patterns.iter().any(|p| url.starts_with(p.as_str())),
    };
    match allowed {
        true => Ok(()),
        false => Err(Out::fatal(format!(
            "remote URL {url} is not allowed: it matches no pattern of the session's :allow_net"
        ))),
    }
}

/// A command's result: a failure is an `Out` too, so `?` ends a command
/// with what it prints.
pub type Run = Result<Out, Out>;

/// Where a command runs.
pub struct Here<'a> {
    pub fs: Arc<dyn FileSystem>,
    /// git's HTTP client (the session's allowlist, credentials and
    /// egress), where `:allow_net` gave the session a network.
    #[cfg(feature = "network")]
    pub http: Option<Arc<bashkit::HttpClient>>,
    pub cwd: PathBuf,
    pub env: &'a HashMap<String, String>,
    pub git: &'a Git,
    /// `-c key=value` before the command: read after every config file.
    pub overrides: &'a [(String, String)],
}

/// `-c key=value`: the key canonical, as the config files' are.
fn config_override(text: &str) -> Result<(String, String), Out> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(Out::fatal(format!(
            "not supported by the sandbox's git: -c {text} (give it a value: -c {text}=...)"
        )));
    };
    if !key.contains('.') || key.starts_with('.') || key.ends_with('.') {
        return Err(Out::error(
            format!(
                "error: key does not contain a section: {key}\n\
                 fatal: unable to parse command-line config\n"
            ),
            128,
        ));
    }
    Ok((config::canonical(key), value.to_string()))
}

#[async_trait]
impl Builtin for Git {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let mut args: Vec<String> = ctx.args.to_vec();
        let mut cwd = ctx.cwd.clone();
        // Global options before the command.
        let mut overrides = Vec::new();
        let mut refused = None;
        while let Some(first) = args.first().cloned() {
            match first.as_str() {
                "-C" if args.len() > 1 => {
                    cwd = resolve(&cwd, &args[1]);
                    args.drain(..2);
                }
                "-c" if args.len() > 1 => {
                    match config_override(&args[1]) {
                        Ok(pair) => overrides.push(pair),
                        Err(out) => refused = Some(out),
                    }
                    args.drain(..2);
                }
                "--no-pager" | "-P" | "--no-optional-locks" => {
                    args.remove(0);
                }
                "--bare" => {
                    refused = Some(Out::fatal("not supported by the sandbox's git: --bare"));
                    break;
                }
                _ => break,
            }
        }
        let here = Here {
            fs: ctx.fs.clone(),
            #[cfg(feature = "network")]
            http: self.http.clone(),
            cwd,
            env: ctx.env,
            git: self,
            overrides: &overrides,
        };
        let ran = match refused {
            Some(out) => Err(out),
            None => commands::run(&here, &args).await,
        };
        let out = match ran {
            Ok(out) | Err(out) => out,
        };
        let mut result = ExecResult::with_code(out.stdout, out.code);
        result.stderr = out.stderr.into();
        Ok(result)
    }
}

/// `path` from `cwd`, with `.` and `..` resolved.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::from("/");
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}
