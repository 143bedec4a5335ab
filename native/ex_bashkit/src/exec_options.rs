//! Per-call options of `ExBashkit.Session.exec/3`, checked and normalized
//! in Elixir (`ExBashkit.Session.ExecOptions`).

use std::sync::Arc;
use std::time::Duration;

use rustler::{LocalPid, NifStruct, Term};

use crate::network::CredentialRules;
use crate::streaming::{Listen, Listener, Output};
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
}

/// What one call asks for, owned by its job.
#[derive(Default)]
pub struct Call {
    pub timeout: Option<Duration>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub output: Option<Arc<Output>>,
    pub stdin: Option<Vec<u8>>,
    pub args: Option<Vec<String>>,
    pub credentials: Option<CredentialRules>,
}

impl Call {
    /// The call's plan; output beyond `caps` (stdout, stderr) is neither
    /// sent nor kept.
    pub fn new(options: Option<ExecOptions<'_>>, caps: (usize, usize)) -> Self {
        let Some(options) = options else {
            return Self::default();
        };
        let streamed = !options.stream_to.is_empty() || options.keep_output;
        Self {
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
        }
    }

    /// bashkit's options for the run: stdin, positional parameters, and
    /// the output callback.
    pub fn bashkit_options(&mut self) -> bashkit::ExecOptions {
        let mut options = bashkit::ExecOptions::new();
        if let Some(stdin) = self.stdin.take() {
            options = options.stdin(stdin);
        }
        if let Some(args) = self.args.take() {
            options = options.positional(args);
        }
        if let Some(output) = &self.output {
            options = options.streaming(output.callback());
        }
        options
    }

    /// What the script printed so far, if it was kept.
    pub fn kept_output(&self) -> (Vec<u8>, Vec<u8>) {
        self.output
            .as_ref()
            .map(|output| output.take_kept())
            .unwrap_or_default()
    }
}
