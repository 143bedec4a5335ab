//! What one `exec` call asks for beyond its script (`:timeout_ms`, `:env`,
//! `:cwd`, stdin, arguments, live output, fresh credentials), owned by its
//! job; built from the protocol's `CallOptions` (which the NIF reads from
//! the VM's terms and a worker from a frame) by [`Call::new`], here only.

use std::sync::Arc;
use std::time::Duration;

use crate::network::CredentialRules;
use crate::policy::CommandPolicy;
use crate::streaming::Output;
use ex_bashkit_protocol::call::CallOptions;

/// What one call asks for, owned by its job.
#[derive(Default)]
pub struct Call {
    pub timeout: Option<Duration>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub output: Option<Arc<Output>>,
    pub stdin: Option<Vec<u8>>,
    pub args: Option<Vec<String>>,
    /// `$0`.
    pub arg0: Option<String>,
    pub credentials: Option<CredentialRules>,
    /// The call's own `:command_policy`, instead of the session's.
    pub command_policy: Option<CommandPolicy>,
}

impl Call {
    /// The plan of a call with these options; `output` follows what the
    /// script writes, when anyone does.
    pub fn new(options: CallOptions, output: Option<Arc<Output>>) -> Self {
        Self {
            timeout: options.timeout(),
            env: options.env,
            cwd: options.cwd,
            output,
            stdin: options.stdin,
            args: options.args,
            arg0: options.arg0,
            credentials: options.credentials,
            command_policy: options.command_policy,
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
        if let Some(arg0) = self.arg0.take() {
            options = options.arg0(arg0);
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
