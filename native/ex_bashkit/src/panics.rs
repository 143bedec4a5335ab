//! Panics inside the interpreter, kept off the VM's stderr.
//!
//! bashkit catches panics in its builtins (tomlq has one on non-ASCII
//! input), and we catch the rest, so a panic costs one command or one
//! script, not the VM. But Rust's default hook still prints the message to
//! the process's stderr, and the message can hold raw bytes from the script:
//! terminal escapes, or a flood. Our hook takes over on our own threads: the
//! message is escaped, cut short, rate-limited and handed to the Elixir
//! process registered with `set_panic_reporter/1`, which logs it through
//! `Logger`; and during a script's first poll on a BEAM scheduler
//! (`ex_bashkit_core::inline`), sent from a thread of its own. Panics
//! anywhere else go to the previous hook unchanged.

use std::panic::PanicHookInfo;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use rustler::{Encoder, LocalPid, OwnedEnv};

use ex_bashkit_core::sync::lock;
use ex_bashkit_core::{inline, runtime};

mod atoms {
    rustler::atoms! { ex_bashkit_panic }
}

/// How much of a panic message is reported.
const MAX_MESSAGE_CHARS: usize = 300;
/// At most this many reports per window; the rest are counted.
const REPORTS_PER_WINDOW: u32 = 10;
const WINDOW: Duration = Duration::from_secs(60);

struct Reporter {
    pid: Option<LocalPid>,
    window_start: Instant,
    reported: u32,
    suppressed: u64,
}

static REPORTER: Mutex<Option<Reporter>> = Mutex::new(None);

/// Installs the hook once per OS process (the library may be reloaded).
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if runtime::on_interpreter_thread() {
                report(describe(info));
            } else if inline::polling_here() {
                // A script's first poll on a BEAM scheduler, which may not
                // send: the report goes from a thread of its own, before
                // the script answers.
                let text = describe(info);
                if let Ok(reporter) = std::thread::Builder::new().spawn(move || report(text)) {
                    let _ = reporter.join();
                }
            } else {
                previous(info);
            }
        }));
    });
}

/// The text reported for a panic: its location and message, escaped so no
/// control byte reaches a log, and cut to [`MAX_MESSAGE_CHARS`].
pub fn describe(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let mut escaped: String = message.escape_debug().take(MAX_MESSAGE_CHARS).collect();
    if message.escape_debug().nth(MAX_MESSAGE_CHARS).is_some() {
        escaped.push_str("...");
    }
    match info.location() {
        Some(at) => format!("{}:{}: {escaped}", at.file(), at.line()),
        None => escaped,
    }
}

fn report(text: String) {
    let (pid, suppressed) = {
        let mut guard = lock(&REPORTER);
        let Some(reporter) = guard.as_mut() else {
            return;
        };
        let Some(pid) = reporter.pid else {
            return;
        };
        if reporter.window_start.elapsed() >= WINDOW {
            reporter.window_start = Instant::now();
            reporter.reported = 0;
        }
        if reporter.reported >= REPORTS_PER_WINDOW {
            reporter.suppressed += 1;
            return;
        }
        reporter.reported += 1;
        (pid, std::mem::take(&mut reporter.suppressed))
    };
    // Our threads may send from an OwnedEnv; a panic mid-job is no reason
    // not to. Sending fails only if the reporter is gone.
    let _ = OwnedEnv::new().send_and_clear(&pid, |env| {
        (atoms::ex_bashkit_panic(), text, suppressed).encode(env)
    });
}

/// Names the process that logs interpreter panics (`ExBashkit.PanicReporter`).
/// The hook itself is installed when the library loads.
#[rustler::nif]
fn set_panic_reporter(pid: LocalPid) -> rustler::Atom {
    *lock(&REPORTER) = Some(Reporter {
        pid: Some(pid),
        window_start: Instant::now(),
        reported: 0,
        suppressed: 0,
    });
    crate::atoms::ok()
}
