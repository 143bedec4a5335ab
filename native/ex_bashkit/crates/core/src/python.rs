//! The `:python` option: which Python serves the session's Python commands
//! (Monty, bashkit's in-process interpreter, or CPython 3.14 in a
//! WebAssembly guest) and the session limits it runs under.

#[cfg(any(feature = "python", feature = "cpython"))]
use std::time::Duration;

#[cfg(any(feature = "python", feature = "cpython"))]
use crate::limits::count;
use crate::limits::Limits;
#[cfg(any(feature = "python", feature = "cpython"))]
use crate::limits::LimitsExt;
#[cfg(feature = "python")]
use crate::monty_paths::MontyBuiltin;
use bashkit::BashBuilder;

pub use ex_bashkit_protocol::options::PythonRuntime;

/// The `:tools` Python (Monty) calls as functions, and what the bridge
/// to them (`tool_bridge.rs`) is made of.
pub struct Tools<'a> {
    pub names: &'a [String],
    pub builtins: &'a [String],
    pub channel: &'a std::sync::Arc<crate::callback::Channel>,
    pub gate: &'a std::sync::Arc<crate::policy::Gate>,
}

/// Registers `runtime` under each of `names`; nothing for no names.
#[cfg_attr(
    not(any(feature = "python", feature = "cpython")),
    allow(unused_variables)
)]
pub fn register(
    builder: BashBuilder,
    runtime: PythonRuntime,
    names: &[String],
    limits: &Limits,
    tools: Tools<'_>,
) -> BashBuilder {
    if names.is_empty() {
        return builder;
    }
    match runtime {
        #[cfg(feature = "python")]
        PythonRuntime::Monty => {
            // bashkit's opt-in for running Monty inside this process.
            let mut builder = builder.env("BASHKIT_ALLOW_INPROCESS_PYTHON", "1");
            let monty = monty_limits(limits);
            let bridge = (!tools.names.is_empty()).then(|| {
                std::sync::Arc::new(crate::tool_bridge::ToolBridge::new(
                    tools.builtins.to_vec(),
                    tools.channel.clone(),
                    tools.gate.clone(),
                ))
            });
            for name in names {
                let mut python = bashkit::Python::with_limits(monty.clone());
                let mut prelude_lines = 0;
                let site = std::sync::Arc::new(crate::tool_bridge::Site::default());
                if let Some(bridge) = &bridge {
                    let (functions, handler, prelude) =
                        crate::python_tools::functions(tools.names, bridge, &site);
                    // bashkit runs "{prelude}\n{script}".
                    prelude_lines = prelude.matches('\n').count() + 1;
                    python = python.with_external_handler_and_prelude(functions, handler, prelude);
                }
                let monty = MontyBuiltin(python, prelude_lines, site);
                builder = builder.builtin(name, Box::new(monty));
            }
            builder
        }
        #[cfg(feature = "cpython")]
        PythonRuntime::Cpython => {
            let mut builder = builder;
            let cpython = cpython_limits(limits);
            for name in names {
                let python = bashkit::CPython::with_limits(cpython.clone());
                builder = builder.builtin(name, Box::new(CPythonBuiltin(python)));
            }
            builder
        }
        // Refused in Elixir before a session is built.
        #[allow(unreachable_patterns)]
        _ => builder,
    }
}

/// The limits both runtimes share, from the session's, over the runtime's
/// own defaults. Python gets four fifths of the session's wall clock (its
/// `:timeout_ms`, or bashkit's default when none is given), not its
/// runtime's 30-second default, so that a runaway Python program ends with
/// its own timeout (and the script can go on) rather than racing the
/// script's deadline, which a loaded machine decides at random.
#[cfg(any(feature = "python", feature = "cpython"))]
fn common(limits: &Limits, mut common: bashkit::RuntimeLimits) -> bashkit::RuntimeLimits {
    common.max_duration = python_deadline(limits);
    if let Some(bytes) = limits.max_python_memory_bytes {
        common.max_memory = count(bytes);
    }
    if let Some(depth) = limits.max_python_recursion {
        common.max_call_depth = count(depth);
    }
    common
}

/// Four fifths of the session's timeout.
#[cfg(any(feature = "python", feature = "cpython"))]
pub fn python_deadline(limits: &Limits) -> Duration {
    limits.execution().timeout * 4 / 5
}

#[cfg(feature = "python")]
fn monty_limits(limits: &Limits) -> bashkit::PythonLimits {
    let mut monty = bashkit::PythonLimits::default();
    monty.common = common(limits, monty.common);
    monty
}

/// CPython's output buffer holds at most what the session would keep of
/// it, instead of its own 16 MB default.
#[cfg(feature = "cpython")]
fn cpython_limits(limits: &Limits) -> bashkit::CPythonLimits {
    let execution = limits.execution();
    let mut cpython = bashkit::CPythonLimits::default().max_output(
        execution
            .max_stdout_bytes
            .saturating_add(execution.max_stderr_bytes),
    );
    cpython.common = common(limits, cpython.common);
    cpython
}

/// bashkit's CPython behind a check that the guest's memory image exists.
///
/// wasmtime builds that image once per process, at the first
/// instantiation, in a memfd it then seals; the kernel may refuse the seal
/// for a moment (`EBUSY` while the pages just written are still held
/// elsewhere, which a loaded machine makes likely), and the script's
/// `python3` would fail with "cannot add seals to the memfd". Building it
/// first, with retries, keeps that out of users' scripts.
#[cfg(feature = "cpython")]
struct CPythonBuiltin(bashkit::CPython);

#[cfg(feature = "cpython")]
#[bashkit::async_trait]
impl bashkit::Builtin for CPythonBuiltin {
    async fn execute(
        &self,
        ctx: bashkit::BuiltinContext<'_>,
    ) -> bashkit::Result<bashkit::ExecResult> {
        // A failure is left for the call itself to report, as before.
        let _ = prepare_cpython().await;
        let site = std::path::Path::new(ex_bashkit_packages::SITE_PACKAGES);
        if !ctx.fs.exists(site).await.unwrap_or(false) {
            return self.0.execute(ctx).await;
        }
        let args = crate::site_packages::through_prelude(ctx.args);
        let mut ctx = ctx;
        ctx.args = &args;
        self.0.execute(ctx).await
    }

    fn llm_hint(&self) -> Option<&'static str> {
        self.0.llm_hint()
    }

    fn reset_session_state(&self) {
        self.0.reset_session_state()
    }
}

#[cfg(feature = "cpython")]
static CPYTHON_IMAGE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Runs `python3 -c pass` once per process on a throwaway shell, so that
/// wasmtime builds the guest's memory image here (about 40 ms), retrying
/// while the kernel refuses to seal it; at once when that is done.
#[cfg(feature = "cpython")]
pub async fn prepare_cpython() -> Result<(), String> {
    const ATTEMPTS: u32 = 6;
    CPYTHON_IMAGE
        .get_or_try_init(|| async {
            let mut last = String::new();
            for attempt in 1..=ATTEMPTS {
                let mut bash = bashkit::Bash::builder()
                    .builtin("python3", Box::new(bashkit::CPython::default()))
                    .build();
                let result = bash
                    .exec("python3 -c pass")
                    .await
                    .map_err(|e| e.to_string())?;
                if result.exit_code == 0 {
                    return Ok(());
                }
                last = result.stderr.text_lossy().into_owned();
                if !last.contains("cannot add seals") {
                    return Err(last);
                }
                tokio::time::sleep(std::time::Duration::from_millis(25 << attempt)).await;
            }
            Err(last)
        })
        .await
        .map(|_| ())
}

/// Loads the CPython guest and builds its memory image, now rather than in
/// the first `python3` call of a script.
pub fn warm_up() -> Result<(), String> {
    bashkit::warm_up()?;
    #[cfg(feature = "cpython")]
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(prepare_cpython())?;
    Ok(())
}
