//! What `ExBashkit.Session.new/1` sends, already checked and normalized in
//! Elixir (`ExBashkit.Session.Options`): the NIF and the worker read this
//! one type, so a new option is a field here, its Elixir option, and the
//! code that uses it.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

pub use crate::limits::Limits;

/// `%ExBashkit.Session.Options{}`; fields Rust has no use for (`:files`,
/// `:approve`, ...) are left out and ignored on reading.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename = "Elixir.ExBashkit.Session.Options")]
pub struct SessionOptions {
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub username: String,
    pub hostname: String,
    pub limits: Limits,
    pub mounts: Vec<Mount>,
    pub allowed_mount_paths: Option<Vec<String>>,
    pub allow_net: AllowNet,
    /// Headers injected into the requests an allowlist pattern matches:
    /// secrets a script uses without seeing them.
    pub credentials: CredentialRules,
    pub block_private_ips: bool,
    /// Names of the `:builtins`; their functions stay in Elixir.
    pub builtins: Vec<String>,
    /// Mount paths of the `:virtual_fs` backends.
    pub virtual_fs: Vec<String>,
    /// Command names of the sandboxed Python builtin; empty for none.
    pub python: Vec<String>,
    pub python_runtime: PythonRuntime,
    /// `:command_policy`: what every script's commands must pass.
    pub command_policy: Option<CommandPolicy>,
    /// `javascript: true`: a `node` command (worker processes only).
    pub javascript: bool,
    /// `git: true`: a `git` command on the session's files.
    pub git: bool,
    /// `sqlite: true`: `sqlite3` on the session's files (worker processes
    /// only: the engine is beta upstream).
    pub sqlite: bool,
    /// The dotted names of the `:tools` (`orders.list`), whose commands
    /// are among `builtins`: Python calls them as functions.
    pub tools: Vec<String>,
    /// `:profile`: a script run once, when the session is built.
    pub profile: Option<String>,
    /// `:package_cache`: the host directory `npm` keeps downloaded
    /// packages in, by digest, shared by sessions; `None` for no cache.
    #[serde(default)]
    pub package_cache: Option<String>,
}

/// `{vfs_path, host_path, mode}`.
pub type Mount = (String, String, MountMode);

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MountMode {
    #[default]
    ReadOnly,
    ReadWrite,
    /// `{:read_write, git_metadata: :writable}`: read-write, and the
    /// repositories' metadata too (hooks, config) for every writer.
    ReadWriteGitMetadata,
}

impl MountMode {
    /// Whether the sandbox may write the mount.
    pub fn writable(self) -> bool {
        self != MountMode::ReadOnly
    }
}

/// `runtime:` of the `:python` option, checked in Elixir against what this
/// build has.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PythonRuntime {
    #[default]
    Monty,
    Cpython,
}

/// `:none`, `:all` or `{:only, patterns}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowNet {
    #[default]
    None,
    All,
    Only(Vec<String>),
}

/// `[{pattern, [{name, value}]}]`: the headers `:allow_net` entries inject.
pub type CredentialRules = Vec<(String, Headers)>;

/// `[{name, value}]`.
pub type Headers = Vec<(String, String)>;

/// A `:command_policy` as given to `new/1` or `exec/3`:
/// `{:deny | :allow | :ask, names, abort}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(from = "PolicyTerm", into = "PolicyTerm")]
pub struct CommandPolicy {
    pub rule: Rule,
    /// Stop the whole script at a denial, instead of failing the command.
    pub abort: bool,
}

/// Which commands may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Any command but these.
    Deny(HashSet<String>),
    /// Only these commands.
    Allow(HashSet<String>),
    /// Whatever the session's Elixir function answers, command by command.
    Ask,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum RuleKind {
    Deny,
    Allow,
    Ask,
}

/// The policy's shape on the Elixir side (a plain tuple: a tuple struct
/// would be a tagged one).
type PolicyTerm = (RuleKind, Vec<String>, bool);

impl From<PolicyTerm> for CommandPolicy {
    fn from((kind, names, abort): PolicyTerm) -> Self {
        let names = names.into_iter().collect();
        let rule = match kind {
            RuleKind::Deny => Rule::Deny(names),
            RuleKind::Allow => Rule::Allow(names),
            RuleKind::Ask => Rule::Ask,
        };
        CommandPolicy { rule, abort }
    }
}

impl From<CommandPolicy> for PolicyTerm {
    fn from(policy: CommandPolicy) -> Self {
        let (kind, names) = match policy.rule {
            Rule::Deny(names) => (RuleKind::Deny, names),
            Rule::Allow(names) => (RuleKind::Allow, names),
            Rule::Ask => (RuleKind::Ask, HashSet::new()),
        };
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort();
        (kind, names, policy.abort)
    }
}
