//! A call's options: `%ExBashkit.Session.ExecOptions{}`, checked and
//! normalized in Elixir. The NIF reads it from `exec/3`, a worker from its
//! `{:exec, ...}` frame: one type.

use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::options::{CommandPolicy, CredentialRules};

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "Elixir.ExBashkit.Session.ExecOptions")]
pub struct CallOptions {
    pub timeout_ms: Option<u64>,
    #[serde(with = "serde_bytes")]
    pub stdin: Option<Vec<u8>>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub args: Option<Vec<String>>,
    /// `$0` for this call.
    pub arg0: Option<String>,
    /// Processes that follow the output, `{pid, tag}`: the NIF reads them
    /// itself (a pid is the VM's); here they only count.
    pub stream_to: Vec<IgnoredAny>,
    /// Keep the output, for the error of a script that ends without a
    /// result. To a worker: send the output to the VM as it is written
    /// (the owner process keeps and forwards it).
    pub keep_output: bool,
    /// Fresh values of the session's injected headers (header functions).
    /// The owner of a worker applies them itself: a worker never sees them.
    pub credentials: Option<CredentialRules>,
    /// The call's own command policy, instead of the session's.
    pub command_policy: Option<CommandPolicy>,
}

impl CallOptions {
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// Whether anyone follows the output as it is written.
    pub fn streams(&self) -> bool {
        self.keep_output || !self.stream_to.is_empty()
    }
}
