//! Per-call options of `ExBashkit.Session.exec/3`, checked and normalized
//! in Elixir (`ExBashkit.Session.ExecOptions`).

use std::sync::Arc;
use std::time::Duration;

use rustler::{LocalPid, NifStruct, Term};

use ex_bashkit_core::call::Call;
use ex_bashkit_core::network::CredentialRules;
use ex_bashkit_core::streaming::{Listen, Output};

use crate::convert::NifPolicy;
use crate::streaming::Listener;
use crate::terms::Bytes;

#[derive(NifStruct)]
#[module = "ExBashkit.Session.ExecOptions"]
pub struct ExecOptions<'a> {
    pub timeout_ms: Option<u64>,
    pub stdin: Option<Bytes>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub args: Option<Vec<String>>,
    /// Processes that follow the output, each with the tag its messages carry.
    pub stream_to: Vec<(LocalPid, Term<'a>)>,
    /// Keep the output, for the error of a script that ends without a result.
    pub keep_output: bool,
    /// Fresh values of the session's injected headers (header functions).
    pub credentials: Option<CredentialRules>,
    /// The call's own command policy, instead of the session's.
    pub command_policy: Option<NifPolicy>,
}

/// The call's plan; output beyond `caps` (stdout, stderr) is neither
/// sent nor kept.
pub fn call(options: Option<ExecOptions<'_>>, caps: (usize, usize)) -> Call {
    let Some(options) = options else {
        return Call::default();
    };
    let streamed = !options.stream_to.is_empty() || options.keep_output;
    Call {
        timeout: options.timeout_ms.map(Duration::from_millis),
        env: options.env,
        cwd: options.cwd,
        output: streamed.then(|| {
            let listeners = options
                .stream_to
                .into_iter()
                .map(|(pid, tag)| Box::new(Listener::new(pid, tag)) as Box<dyn Listen>)
                .collect();
            Arc::new(Output::new(listeners, options.keep_output, caps))
        }),
        stdin: options.stdin.map(|Bytes(bytes)| bytes),
        args: options.args,
        credentials: options.credentials,
        command_policy: options.command_policy.map(|NifPolicy(policy)| policy),
    }
}
