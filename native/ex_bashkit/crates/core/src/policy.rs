//! The command policy (`:command_policy`): every command a script is about
//! to run passes it, however the command was reached (directly, through a
//! wrapper such as `env`, `xargs` or `find -exec`, `eval`, `source`, a
//! trap, a function, a script run by its path). The seam is bashkit's
//! `before_tool` hook, which fires before each builtin with its name and
//! arguments, and every command in bashkit is a builtin.
//!
//! A denied command does not run: bashkit fails it with exit status 1 and
//! `NAME: cancelled by before_tool hook` on stderr, and the script goes on
//! as after any failed command; with `abort`, the whole script is stopped
//! and its caller told why. Each denial is recorded for the caller.
//!
//! A policy that is an Elixir function is asked through the session's
//! callback channel, and the hook, which bashkit calls synchronously,
//! blocks its thread for the answer: only a worker process's sessions
//! (whose interpreter thread is their own) may have one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bashkit::hooks::{HookAction, ToolEvent};

use crate::callback::{Channel, Reply, Request};
use crate::sync::{block_on, lock};

pub use ex_bashkit_protocol::options::{CommandPolicy, Rule};

/// Why `name args` may not run under `policy`, if it may not.
fn refuses(
    policy: &CommandPolicy,
    name: &str,
    args: &[String],
    ask: Option<&Channel>,
) -> Option<String> {
    {
        match &policy.rule {
            Rule::Deny(names) if names.contains(name) => {
                Some("denied by the command policy".into())
            }
            Rule::Allow(names) if !names.contains(name) => {
                Some("not allowed by the command policy".into())
            }
            Rule::Ask => asked(ask, name, args),
            _ => None,
        }
    }
}

/// The function's answer: `None` to run the command, else why not. Any
/// failure to answer denies.
fn asked(channel: Option<&Channel>, name: &str, args: &[String]) -> Option<String> {
    let Some(channel) = channel else {
        return Some("the command policy cannot be asked here".into());
    };
    match block_on(channel.call(Request::Policy { name, args })) {
        Ok(Reply::Ok) => None,
        Ok(Reply::Error(failure)) => Some(failure.text()),
        Ok(_) => Some("the command policy gave no answer".into()),
        Err(why) => Some(why),
    }
}

pub use ex_bashkit_protocol::outcome::Denial;

/// The most denials one script reports; it is stopped or failed at each
/// all the same.
const MAX_REPORTED: usize = 100;

/// A session's gate: the policy in force (the session's own, or a call's
/// instead) and what it denied during the running script.
#[derive(Default)]
pub struct Gate {
    /// The session's own policy, fixed when it is built.
    session: Option<Arc<CommandPolicy>>,
    /// How a function policy is asked (the session's callbacks).
    ask: Mutex<Option<Arc<Channel>>>,
    state: Mutex<State>,
    /// Set while a script runs under a policy: the hook's only cost
    /// otherwise. The session's own work between scripts (tidying after a
    /// failed one, a call's `:env` and `:cwd`) is not the script's.
    active: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The policy in force for the running script.
    policy: Option<Arc<CommandPolicy>>,
    denials: Vec<Denial>,
    /// The interpreter's cancellation flag, to stop a script at a denial.
    cancel: Option<Arc<AtomicBool>>,
    aborted: Option<Denial>,
}

impl Gate {
    /// A gate enforcing `policy` for every script of the session.
    pub fn new(policy: Option<CommandPolicy>) -> Arc<Self> {
        Arc::new(Self {
            session: policy.map(Arc::new),
            ..Self::default()
        })
    }

    /// Whether the session polices its commands: it was given a policy,
    /// which a call may replace with its own.
    pub fn polices(&self) -> bool {
        self.session.is_some()
    }

    /// Asks a function policy through `channel`.
    pub fn ask_through(&self, channel: Arc<Channel>) {
        *lock(&self.ask) = Some(channel);
    }

    /// The `before_tool` hook that consults this gate.
    pub fn hook(self: &Arc<Self>) -> bashkit::hooks::Interceptor<ToolEvent> {
        let gate = self.clone();
        Box::new(
            move |event: ToolEvent| match gate.check(&event.name, &event.args) {
                None => HookAction::Continue(event),
                Some(reason) => HookAction::Cancel(reason),
            },
        )
    }

    /// Stops a script of this session through `flag` when a policy says so.
    pub fn stop_with(&self, flag: Arc<AtomicBool>) {
        lock(&self.state).cancel = Some(flag);
    }

    /// Whether `name args`, run by other means than a command line (a
    /// JavaScript `tools` call), may run: the reason it may not is
    /// recorded, as a command's would be.
    pub fn admits(&self, name: &str, args: &[String]) -> Result<(), String> {
        match self.check(name, args) {
            None => Ok(()),
            Some(message) => Err(message),
        }
    }

    /// The reason `name args` may not run, recorded, or `None`.
    fn check(&self, name: &str, args: &[String]) -> Option<String> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut state = lock(&self.state);
        let policy = state.policy.as_ref()?;
        let (why, abort) = match &policy.rule {
            // Not under the state's lock: a function may take its time.
            Rule::Ask => {
                let policy = policy.clone();
                drop(state);
                let ask = lock(&self.ask).clone();
                let why = refuses(&policy, name, args, ask.as_deref())?;
                state = lock(&self.state);
                (why, policy.abort)
            }
            _ => (refuses(policy, name, args, None)?, policy.abort),
        };
        let message = format!("{name}: {why}");
        let denial = Denial {
            name: name.to_string(),
            reason: why,
        };
        if abort && state.aborted.is_none() {
            state.aborted = Some(denial.clone());
            if let Some(flag) = &state.cancel {
                flag.store(true, Ordering::Release);
            }
        }
        if state.denials.len() < MAX_REPORTED {
            state.denials.push(denial);
        }
        Some(message)
    }

    /// Puts the session's policy in force for one script, or `policy`
    /// instead of it, until the returned guard is dropped: `None` (and
    /// nothing to do) when there is no policy at all, the common case.
    pub fn enter(&self, policy: Option<CommandPolicy>) -> Result<Option<Entered<'_>>, String> {
        if policy.is_some() && !self.polices() {
            return Err(UNPOLICED.to_string());
        }
        let Some(policy) = policy.map(Arc::new).or_else(|| self.session.clone()) else {
            return Ok(None);
        };
        let mut state = lock(&self.state);
        state.denials.clear();
        state.aborted = None;
        state.policy = Some(policy);
        self.active.store(true, Ordering::Release);
        Ok(Some(Entered(self)))
    }
}

#[cfg(test)]
impl Gate {
    fn check_name(&self, name: &str) -> Option<String> {
        self.check(name, &[])
    }
}

/// What a call with its own policy on a session without one answers.
const UNPOLICED: &str = "a :command_policy for one call needs a session created with a \
     :command_policy (`{:deny, []}` denies nothing and lets each call bring its own)";

/// A policy in force for one script.
pub struct Entered<'a>(&'a Gate);

impl Entered<'_> {
    /// Ends the script's policy: what it denied, and the denial that
    /// stopped it, if one did.
    pub fn leave(self) -> (Vec<Denial>, Option<Denial>) {
        let mut state = lock(&self.0.state);
        (std::mem::take(&mut state.denials), state.aborted.take())
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).policy = None;
        self.0.active.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny(names: &[&str], abort: bool) -> CommandPolicy {
        let names = names.iter().map(|n| n.to_string()).collect();
        CommandPolicy {
            rule: Rule::Deny(names),
            abort,
        }
    }

    #[test]
    fn a_call_policy_replaces_the_sessions_for_its_script_only() {
        let gate = Gate::new(Some(deny(&["rm"], false)));
        assert!(gate.check_name("rm").is_none(), "no script runs");
        {
            let _call = gate.enter(Some(deny(&["curl"], false))).unwrap();
            assert!(gate.check_name("rm").is_none());
            assert!(gate.check_name("curl").is_some());
        }
        let _script = gate.enter(None).unwrap();
        assert!(gate.check_name("rm").is_some());
        assert!(gate.check_name("curl").is_none());
        let unpoliced = Gate::new(None);
        assert!(unpoliced.enter(None).unwrap().is_none(), "nothing to do");
        assert!(unpoliced.enter(Some(deny(&["rm"], false))).is_err());
    }

    #[test]
    fn an_allow_list_refuses_everything_else_and_denials_are_recorded() {
        let names = ["echo".to_string()].into_iter().collect();
        let policy = CommandPolicy {
            rule: Rule::Allow(names),
            abort: true,
        };
        let gate = Gate::new(Some(deny(&[], false)));
        let flag = Arc::new(AtomicBool::new(false));
        gate.stop_with(flag.clone());
        assert!(gate.check_name("cat").is_none(), "no script runs");
        let call = gate
            .enter(Some(policy))
            .unwrap()
            .expect("a policy in force");
        assert!(gate.check_name("echo").is_none());
        assert_eq!(
            gate.check_name("cat").as_deref(),
            Some("cat: not allowed by the command policy")
        );
        assert!(flag.load(Ordering::Acquire), "abort stops the script");
        let (denials, aborted) = call.leave();
        assert_eq!(denials.len(), 1);
        assert_eq!(aborted.map(|d| d.name).as_deref(), Some("cat"));
    }
}
