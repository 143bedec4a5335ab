//! How a job is stopped from outside: its caller exited or stopped
//! waiting, or `ExBashkit.Session.cancel/1`.

use std::future::Future;

use tokio::sync::oneshot;

/// Why a job was stopped from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Its caller exited.
    CallerExited,
    /// Its caller stopped waiting; nobody will read the answer.
    Abandoned,
    /// `ExBashkit.Session.cancel/1`.
    Cancelled,
}

impl From<Stop> for String {
    fn from(stop: Stop) -> String {
        match stop {
            Stop::CallerExited => "execution cancelled: the caller exited".into(),
            Stop::Abandoned => "execution cancelled: the caller stopped waiting".into(),
            Stop::Cancelled => "execution cancelled by ExBashkit.Session.cancel/1".into(),
        }
    }
}

/// The job's end of its [`JobHandle::stop`]: work run under [`guard`]
/// is dropped, at its next await point, once the job is stopped.
///
/// [`guard`]: StopSignal::guard
pub struct StopSignal(oneshot::Receiver<Stop>);

impl StopSignal {
    /// A signal and the sender that raises it.
    pub fn new() -> (oneshot::Sender<Stop>, Self) {
        let (sender, receiver) = oneshot::channel();
        (sender, Self(receiver))
    }

    /// Runs `work` to its end, or until the job is stopped: then `work` is
    /// dropped and the answer is the stop, as an `E`.
    pub async fn guard<T, E: From<Stop>>(
        self,
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        tokio::select! {
            biased;
            Ok(stop) = self.0 => Err(E::from(stop)),
            outcome = work => outcome,
        }
    }
}
