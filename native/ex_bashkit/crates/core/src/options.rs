//! Session construction options, validated on the Elixir side
//! (`ExBashkit.Session.Options`) and applied to a `BashBuilder` here.

use std::path::Path;
use std::sync::Arc;

use bashkit::{Bash, BashBuilder, SessionLimits};

use crate::builtins::ElixirBuiltin;
use crate::callback::Channel;
use crate::cow_fs::CowFs;
use crate::error::SessionError;
use crate::limits::LimitsExt;
use crate::mounts;
use crate::network::Credentials;
use crate::policy::Gate;
use crate::python::{self, PythonRuntime};
use crate::virtual_fs::ElixirFs;
use crate::written::{Counted, Written};

/// Where a session's HTTP requests go when not straight to the network:
/// a worker's, to the host (the worker's `egress.rs`).
#[cfg(feature = "network")]
pub type Egress = Arc<dyn bashkit::HttpTransport>;

/// Commands a session gets from whoever builds it, by name.
pub struct Extra {
    pub builtins: Vec<(String, Box<dyn bashkit::Builtin>)>,
    /// Variables bashkit reads when the session is built, to allow a
    /// part of its own (`BASHKIT_ALLOW_INPROCESS_SQLITE`): set for the
    /// build, unset before the first script.
    pub switches: Vec<&'static str>,
}

impl Extra {
    pub fn none() -> Self {
        Self {
            builtins: Vec::new(),
            switches: Vec::new(),
        }
    }
}

/// A build without the network part makes no requests at all.
#[cfg(not(feature = "network"))]
pub type Egress = std::convert::Infallible;

pub use ex_bashkit_protocol::SessionOptions;

/// What a session's options make: its interpreter, and what a worker
/// process must allow it.
pub trait SessionPlan {
    /// Builds the interpreter with its mounts attached and its working
    /// directory in place; callbacks reach Elixir through `channel`. Async
    /// because the filesystem is.
    /// Its own files are `storage.files`; they and its mounts count what
    /// is written to them in `storage.written`.
    fn build(
        &self,
        channel: &Arc<Channel>,
        credentials: &Credentials,
        egress: Option<Egress>,
        gate: &Arc<Gate>,
        extra: Extra,
        storage: &Storage,
    ) -> impl std::future::Future<Output = Result<Bash, SessionError>> + Send;

    /// Builds a shell that a command of the session starts mid-script
    /// (`node`'s `child_process`): the session's commands, policy and
    /// limits, on the session's own files (`child.fs`), with the
    /// environment and directory it is given and no profile run.
    fn build_child(
        &self,
        child: Child,
        channel: &Arc<Channel>,
        credentials: &Credentials,
        egress: Option<Egress>,
        gate: &Arc<Gate>,
        extra: Extra,
    ) -> impl std::future::Future<Output = Result<Bash, SessionError>> + Send;

    /// What the session needs of a worker process, for its hardening.
    fn worker_needs(&self) -> ex_bashkit_jail::Needs<'_>;

    /// The headers this session injects, with its own values.
    fn credentials(&self) -> Credentials;
}

impl SessionPlan for SessionOptions {
    async fn build(
        &self,
        channel: &Arc<Channel>,
        credentials: &Credentials,
        egress: Option<Egress>,
        gate: &Arc<Gate>,
        extra: Extra,
        storage: &Storage,
    ) -> Result<Bash, SessionError> {
        let written = &storage.written;
        let files = Counted::wrap(storage.files.clone(), written);
        let builder = builder(self, credentials, egress).fs(files);
        let mut bash = self.commands(builder, channel, gate, extra).await?;
        // A child shell leaves the flag alone: the policy stops the
        // session's script, which waits for the child.
        gate.stop_with(bash.cancellation_token());
        let allowed = self.allowed_mount_paths.as_deref();
        mounts::attach(&bash, &self.mounts, allowed, written).await?;
        for path in &self.virtual_fs {
            let backend = ElixirFs::new(path.clone(), channel.clone());
            bash.mount(path, Counted::wrap(Arc::new(backend), written))
                .map_err(|e| SessionError::Build(format!("virtual_fs {path:?}: {e}")))?;
        }
        bash.fs()
            .mkdir(Path::new(&self.cwd), true)
            .await
            .map_err(|e| SessionError::Build(format!("cannot create cwd {:?}: {e}", self.cwd)))?;
        if let Some(profile) = &self.profile {
            run_profile(&mut bash, profile).await?;
        }
        Ok(bash)
    }

    async fn build_child(
        &self,
        child: Child,
        channel: &Arc<Channel>,
        credentials: &Credentials,
        egress: Option<Egress>,
        gate: &Arc<Gate>,
        extra: Extra,
    ) -> Result<Bash, SessionError> {
        let mut limits = self.limits.execution();
        if let Some(timeout) = child.timeout {
            let within = timeout.min(limits.timeout);
            limits = limits.timeout(within);
        }
        // The session's own variables are the child's only where exported:
        // `child.env` is all it inherits.
        let mut builder = Bash::builder()
            .session_limits(SessionLimits::unlimited())
            .limits(limits)
            .fs(child.fs);
        if let Some(memory) = self.limits.memory() {
            builder = builder.memory_limits(memory);
        }
        #[cfg(feature = "git")]
        if self.git {
            builder = builder.builtin("git", Box::new(git(self, credentials, egress.as_ref())));
        }
        #[cfg(feature = "network")]
        {
            builder = package_managers(builder, self, credentials, egress.as_ref());
        }
        builder = network(builder, self, credentials, egress);
        for (key, value) in child.env {
            builder = builder.env(key, value);
        }
        let builder = builder
            .cwd(child.cwd)
            .username(&self.username)
            .hostname(&self.hostname);
        self.commands(builder, channel, gate, extra).await
    }

    fn worker_needs(&self) -> ex_bashkit_jail::Needs<'_> {
        ex_bashkit_jail::Needs {
            mounts: &self.mounts,
            script_bytes: self.limits.script_memory() as u64,
            files_bytes: self.limits.filesystem().max_total_bytes,
            file_bytes: self.limits.max_file_bytes,
            python_vm: self.python_runtime == PythonRuntime::Cpython && !self.python.is_empty(),
        }
    }

    fn credentials(&self) -> Credentials {
        Credentials::new(&self.credentials, self.block_private_ips)
    }
}

/// What a shell of the session is built with beyond its basics.
pub struct Child {
    /// The session's filesystem, as the command starting the shell sees it.
    pub fs: Arc<dyn bashkit::FileSystem>,
    /// The environment the shell starts with.
    pub env: Vec<(String, String)>,
    pub cwd: std::path::PathBuf,
    /// At most this long (what is left of the script that starts it).
    pub timeout: Option<std::time::Duration>,
}

/// The commands of a session's shells: Python, the command policy's hook,
/// the caller's own commands and the builtins that call Elixir.
trait Commands {
    fn commands(
        &self,
        builder: BashBuilder,
        channel: &Arc<Channel>,
        gate: &Arc<Gate>,
        extra: Extra,
    ) -> impl std::future::Future<Output = Result<Bash, SessionError>> + Send;
}

impl Commands for SessionOptions {
    async fn commands(
        &self,
        builder: BashBuilder,
        channel: &Arc<Channel>,
        gate: &Arc<Gate>,
        extra: Extra,
    ) -> Result<Bash, SessionError> {
        let tools = python::Tools {
            names: &self.tools,
            builtins: &self.builtins,
            channel,
            gate,
        };
        let mut builder = python::register(
            builder,
            self.python_runtime,
            &self.python,
            &self.limits,
            tools,
        );
        // Only a policed session pays for the hook, on every command
        // (bashkit copies each command's name and arguments for it).
        if gate.polices() {
            builder = builder.before_tool(gate.hook());
        }
        for (name, builtin) in extra.builtins {
            builder = builder.builtin(name, builtin);
        }
        for switch in &extra.switches {
            builder = builder.env(*switch, "1");
        }
        for name in &self.builtins {
            let builtin = ElixirBuiltin::new(name.clone(), channel.clone());
            builder = builder.builtin(name, Box::new(builtin));
        }
        #[cfg(feature = "escape_probe")]
        {
            let probe = crate::probes::escape_probe::EscapeProbe;
            builder = builder.builtin("escape", Box::new(probe));
            builder = builder.builtin("lie", Box::new(crate::probes::lie_probe::Lie));
        }
        let mut bash = builder.build();
        // The switches were read by the build; a script has no use for them.
        for switch in &extra.switches {
            bash.exec(&format!("unset {switch}"))
                .await
                .map_err(|e| SessionError::Build(format!("{switch}: {e}")))?;
        }
        Ok(bash)
    }
}

/// Runs the `:profile` in the built session, under its limits and policy:
/// what it sets is what every later script starts with. Nothing serves
/// the session's callbacks yet, so it reaches no builtin of Elixir's.
async fn run_profile(bash: &mut Bash, profile: &str) -> Result<(), SessionError> {
    let ran = bash
        .exec(profile)
        .await
        .map_err(|e| SessionError::Build(format!("profile: {}", crate::error::message(&e))))?;
    if ran.exit_code != 0 {
        let stderr = String::from_utf8_lossy(ran.stderr.as_bytes());
        return Err(SessionError::Build(format!(
            "profile exited with status {}: {}",
            ran.exit_code,
            stderr.trim()
        )));
    }
    Ok(())
}

/// `git`, committing as the session's user (`git config user.name`
/// changes it) and naming only the remotes `:allow_net` allows.
#[cfg(feature = "git")]
#[cfg_attr(not(feature = "network"), allow(unused_variables))]
fn git(
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<&Egress>,
) -> crate::git::GitBuiltin {
    crate::git::GitBuiltin(ex_bashkit_git::Git {
        #[cfg(feature = "network")]
        http: transfer_client(options, credentials, egress.cloned()),
        name: options.username.clone(),
        email: format!("{}@{}", options.username, options.hostname),
        remotes: options.allow_net.clone(),
        mounts: options
            .mounts
            .iter()
            .filter_map(|(point, host, mode)| {
                let host = std::fs::canonicalize(host).ok()?;
                let writable = mode.writable();
                Some((std::path::PathBuf::from(point), host, writable))
            })
            .collect(),
    })
}

/// How long one of git's or npm's requests may take (bashkit's most);
/// the script's own deadline ends it sooner.
#[cfg(feature = "network")]
const TRANSFER_REQUEST_SECS: u64 = 600;

/// The client `git`'s clones and fetches and `npm`'s downloads go through:
/// the session's allowlist, credentials and egress (as `curl`'s), but
/// bounded by `:max_git_transfer_bytes` instead of one response's 10 MB.
#[cfg(feature = "network")]
fn transfer_client(
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<Egress>,
) -> Option<Arc<bashkit::HttpClient>> {
    use crate::limits::LimitsExt;
    // In a worker the host checks private addresses and adds the
    // credentials (`network/4` below).
    let allowlist = crate::network::allowlist(
        &options.allow_net,
        options.block_private_ips && egress.is_none(),
    )?;
    let mut client = bashkit::HttpClient::with_config(
        allowlist,
        std::time::Duration::from_secs(TRANSFER_REQUEST_SECS),
        options.limits.git_transfer_bytes(),
    );
    match egress {
        Some(egress) => client.set_transport(egress),
        None => {
            client.set_before_http(vec![credentials.hook()]);
            // Without it (a TLS setup that fails), bashkit's own client
            // makes the requests, each body read whole.
            #[cfg(feature = "git")]
            if let Ok(transport) =
                crate::pack_transport::PackTransport::new(options.block_private_ips)
            {
                client.set_transport(Arc::new(transport));
            }
        }
    }
    Some(Arc::new(client))
}

/// How `npm` and `pip` download: through the session's network (its
/// client made on the first download), each download checked against
/// the digest its lockfile or index names; the host's package cache
/// answers first (in a worker, the host looks it up for the request).
#[cfg(feature = "network")]
fn package_net(
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<Egress>,
) -> ex_bashkit_packages::Net {
    let in_worker = egress.is_some();
    let cache = match in_worker {
        true => None,
        false => options
            .package_cache
            .as_ref()
            .map(ex_bashkit_packages::Cache::new),
    };
    let host_caches = in_worker && options.package_cache.is_some();
    let allow_net = options.allow_net.clone();
    let make = {
        // What the client is made of, not the session's whole options.
        let plan = SessionOptions {
            allow_net: options.allow_net.clone(),
            block_private_ips: options.block_private_ips,
            limits: options.limits.clone(),
            ..SessionOptions::default()
        };
        let credentials = credentials.clone();
        std::sync::Arc::new(move || transfer_client(&plan, &credentials, egress.clone()))
    };
    ex_bashkit_packages::Net::new(make, allow_net, cache, host_caches)
}

/// `npm` in every session with the network part; `pip` (and `pip3`) where
/// CPython serves the session's Python. They share one client.
#[cfg(feature = "network")]
fn package_managers(
    mut builder: BashBuilder,
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<&Egress>,
) -> BashBuilder {
    let budget = options.limits.filesystem().max_total_bytes;
    let net = package_net(options, credentials, egress.cloned());
    #[cfg(feature = "cpython")]
    if options.python_runtime == PythonRuntime::Cpython && !options.python.is_empty() {
        for name in ["pip", "pip3"] {
            let net = net.clone();
            builder = builder.builtin(name, Box::new(ex_bashkit_packages::Pip { net, budget }));
        }
    }
    builder.builtin("npm", Box::new(ex_bashkit_packages::Npm { net, budget }))
}

/// Where a session keeps what it writes: its own files, and the count of
/// bytes written to them and to its mounts.
pub struct Storage {
    pub files: Arc<CowFs>,
    pub written: Written,
}

impl Storage {
    /// The session's own files: in memory, within its filesystem limits,
    /// with the user's home directory made (as bashkit makes it for the
    /// filesystem it builds by default).
    pub fn new(options: &SessionOptions) -> Self {
        let files = CowFs::with_limits(options.limits.filesystem());
        files.add_dir(&format!("/home/{}", options.username), 0o755);
        Self {
            files: Arc::new(files),
            written: Written::default(),
        }
    }
}

fn builder(
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<Egress>,
) -> BashBuilder {
    // bashkit caps a single instance at 1,000 exec calls and 100,000
    // commands by default; a session lives for a whole agent conversation,
    // so per-script limits (ExecutionLimits) are the ones that bound work.
    let mut builder = Bash::builder()
        .session_limits(SessionLimits::unlimited())
        .limits(options.limits.execution());
    if let Some(memory) = options.limits.memory() {
        builder = builder.memory_limits(memory);
    }
    #[cfg(feature = "git")]
    let git = options
        .git
        .then(|| git(options, credentials, egress.as_ref()));
    #[cfg(feature = "network")]
    {
        builder = package_managers(builder, options, credentials, egress.as_ref());
    }
    builder = network(builder, options, credentials, egress);
    for (key, value) in &options.env {
        builder = builder.env(key, value);
    }
    // Without `git: true` the command is not there at all, as in a shell
    // without it installed (and a session pays nothing for it).
    #[cfg(feature = "git")]
    if let Some(git) = git {
        builder = builder.builtin("git", Box::new(git));
    }
    builder
        .cwd(&options.cwd)
        .username(&options.username)
        .hostname(&options.hostname)
}

/// Where the session's requests may go, and how they leave.
#[cfg_attr(not(feature = "network"), allow(unused_variables))]
fn network(
    builder: BashBuilder,
    options: &SessionOptions,
    credentials: &Credentials,
    egress: Option<Egress>,
) -> BashBuilder {
    #[cfg(feature = "network")]
    match egress {
        // In a worker: the host checks private addresses (the worker
        // resolves no names), adds the credentials and makes the
        // request (`egress.rs`); the allowlist here only saves the
        // trip for a request the host would refuse.
        Some(egress) => {
            if let Some(allowlist) = crate::network::allowlist(&options.allow_net, false) {
                return builder.network(allowlist).http_transport(egress);
            }
        }
        None => {
            if let Some(allowlist) =
                crate::network::allowlist(&options.allow_net, options.block_private_ips)
            {
                let builder = builder.network(allowlist);
                if !options.credentials.is_empty() {
                    return builder.before_http(credentials.hook());
                }
                return builder;
            }
        }
    }
    builder
}
