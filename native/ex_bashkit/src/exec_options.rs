//! Per-call options of `ExBashkit.Session.exec/3`: the protocol's
//! `CallOptions` (`%ExBashkit.Session.ExecOptions{}`, checked in Elixir),
//! and the processes that follow the output, which only the VM can name.

use std::sync::Arc;

use rustler::{Decoder, LocalPid, NifResult, Term};

use ex_bashkit_core::call::Call;
use ex_bashkit_core::streaming::{Listen, Output};
use ex_bashkit_protocol::call::CallOptions;

use crate::convert::Protocol;
use crate::streaming::Listener;

mod atoms {
    rustler::atoms! { stream_to }
}

pub struct ExecOptions<'a> {
    call: CallOptions,
    /// Processes that follow the output, each with the tag its messages carry.
    stream_to: Vec<(LocalPid, Term<'a>)>,
}

impl<'a> Decoder<'a> for ExecOptions<'a> {
    fn decode(term: Term<'a>) -> NifResult<Self> {
        let Protocol(call) = term.decode()?;
        let stream_to = term.map_get(atoms::stream_to())?.decode()?;
        Ok(ExecOptions { call, stream_to })
    }
}

/// The call's plan; output beyond `caps` (stdout, stderr) is neither
/// sent nor kept.
impl ExecOptions<'_> {
    /// Whether any process follows the output as it is written.
    pub fn streams_live(&self) -> bool {
        !self.stream_to.is_empty()
    }
}

pub fn call(options: Option<ExecOptions<'_>>, caps: (usize, usize)) -> Call {
    let Some(ExecOptions { call, stream_to }) = options else {
        return Call::default();
    };
    let output = call.streams().then(|| {
        let listeners = stream_to
            .into_iter()
            .map(|(pid, tag)| Box::new(Listener::new(pid, tag)) as Box<dyn Listen>)
            .collect();
        Arc::new(Output::new(listeners, call.keep_output, caps))
    });
    Call::new(call, output)
}
