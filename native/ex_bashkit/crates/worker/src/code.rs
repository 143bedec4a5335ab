//! A code run (`{:run_code, …}`): `execute(input)` of the session's
//! `/code/main.*`, run by its language's driver as a command of the
//! session (so its policy, limits, files and tools apply as to any
//! command), answered with the engine's typed [`CodeOutcome`] beside the
//! command's own stdout and stderr.
//!
//! The engines hand their outcome over outside the code's output: `node`
//! puts it in the session's [`Slot`]; the Python drivers, which can reach
//! only files, write it to [`OUTCOME_FILE`], read and removed here.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ex_bashkit_core::session::Session;
use ex_bashkit_core::sync::lock;
use ex_bashkit_protocol::code::{CodeError, CodeOutcome, Grant, Language};
use ex_bashkit_protocol::outcome::Reason;

/// Where a Python driver leaves its outcome, as JSON.
pub const OUTCOME_FILE: &str = "/code/.outcome.json";

/// The code's source, where `ExBashkit.Code` puts it.
const SOURCE: [&str; 3] = ["/code/main.js", "/code/main.py", "/code/main.ts"];

/// The outcome `node --execute` leaves for the run that started it, and
/// whether `node` printed past the output caps (which it enforces itself,
/// so bashkit never sees the excess).
#[derive(Default)]
pub struct Slot {
    outcome: Mutex<Option<CodeOutcome>>,
    truncated: AtomicBool,
}

impl Slot {
    #[cfg_attr(not(feature = "javascript"), allow(dead_code))]
    pub fn put(&self, outcome: CodeOutcome, truncated: bool) {
        *lock(&self.outcome) = Some(outcome);
        self.truncated.fetch_or(truncated, Ordering::AcqRel);
    }

    /// `node` (any mode) printed past the caps.
    #[cfg_attr(not(feature = "javascript"), allow(dead_code))]
    pub fn cut(&self) {
        self.truncated.store(true, Ordering::Release);
    }

    pub fn take(&self) -> Option<CodeOutcome> {
        lock(&self.outcome).take()
    }

    /// Whether the code printed past the caps, since last asked.
    pub fn truncated(&self) -> bool {
        self.truncated.swap(false, Ordering::AcqRel)
    }
}

/// The command that runs `execute(input)` in `language`, the input on
/// its stdin.
pub fn driver(language: Language, grants: &[Grant]) -> Vec<u8> {
    match language {
        Language::Javascript | Language::Typescript => {
            let grants: Vec<&str> = grants.iter().map(|grant| grant_name(*grant)).collect();
            let source = if language == Language::Typescript {
                SOURCE[2]
            } else {
                SOURCE[0]
            };
            format!("node --execute --allow={} {source}", grants.join(",")).into_bytes()
        }
        Language::Python => b"python3 /code/.run.py".to_vec(),
        // Monty's driver is below the code in its file (`ExBashkit.Code`).
        Language::Monty => format!("python3 {}", SOURCE[1]).into_bytes(),
    }
}

fn grant_name(grant: Grant) -> &'static str {
    match grant {
        Grant::ReadFiles => "read_files",
        Grant::Crypto => "crypto",
        Grant::Fetch => "fetch",
        Grant::Commands => "commands",
    }
}

/// What the engine left for a run that ended with `exit_code` and
/// `stderr`: its outcome, or an error read from what it reported when it
/// left none (Monty, which has no `traceback`, only prints one; CPython
/// stopped at its deadline); `None` when the engine said nothing usable.
/// A value longer than `max_value` bytes (the session's stdout cap, which
/// bounded it when it came on stdout) is refused as a limit; an error's
/// message is cut at `max_message` bytes (the stderr cap).
pub async fn outcome(
    slot: &Slot,
    session: &Session,
    language: Language,
    (exit_code, stderr): (i32, &[u8]),
    (max_value, max_message): (usize, usize),
) -> Option<CodeOutcome> {
    let found = left(slot, session, language, (exit_code, stderr), max_value).await;
    found.map(|outcome| match outcome {
        CodeOutcome::Error(mut error) => {
            truncate(&mut error.name, MAX_NAME_BYTES);
            truncate(&mut error.message, max_message);
            CodeOutcome::Error(error)
        }
        value => value,
    })
}

/// The longest name of an error the VM takes.
const MAX_NAME_BYTES: usize = 256;

fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

async fn left(
    slot: &Slot,
    session: &Session,
    language: Language,
    (exit_code, stderr): (i32, &[u8]),
    max_value: usize,
) -> Option<CodeOutcome> {
    let left = match language {
        Language::Javascript | Language::Typescript => slot.take(),
        Language::Python | Language::Monty => {
            let path = Path::new(OUTCOME_FILE);
            let json = session.fs.read_file(path).await.ok();
            let _ = session.fs.remove(path, false).await;
            json.and_then(|json| serde_json::from_slice(&json).ok())
        }
    };
    if let Some(CodeOutcome::Value(json)) = &left {
        if json.len() > max_value {
            return Some(CodeOutcome::Error(CodeError {
                kind: Reason::Limit,
                name: "RangeError".into(),
                message: format!(
                    "the value's JSON is {} bytes, more than the output limit of {max_value}",
                    json.len()
                ),
                line: None,
            }));
        }
    }
    if left.is_some() || exit_code == 0 {
        return left;
    }
    let stderr = String::from_utf8_lossy(stderr);
    let line = traceback_line(&stderr);
    if line.is_none() && stderr.contains("timed out") {
        return Some(CodeOutcome::Error(CodeError {
            kind: Reason::Timeout,
            name: "TimeoutError".into(),
            message: stderr.trim().to_string(),
            line: None,
        }));
    }
    match language {
        Language::Monty => Some(CodeOutcome::Error(traceback_error(&stderr, line))),
        _ => None,
    }
}

/// The line of the code's last frame in a Python traceback.
fn traceback_line(stderr: &str) -> Option<u32> {
    let marker = format!("File \"{}\", line ", SOURCE[1]);
    stderr.rmatch_indices(&marker).next().and_then(|(at, _)| {
        let digits: String = stderr[at + marker.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// A traceback's exception: its last line, `Name: message`.
fn traceback_error(stderr: &str, line: Option<u32>) -> CodeError {
    let last = stderr.trim_end().lines().last().unwrap_or("");
    let (name, message) = last.split_once(": ").unwrap_or((last, ""));
    CodeError::exception(name, message, line)
}

#[cfg(test)]
mod tests {
    use super::{driver, traceback_error, traceback_line};
    use ex_bashkit_protocol::code::{Grant, Language};
    use ex_bashkit_protocol::outcome::Reason;

    #[test]
    fn a_traceback_gives_the_exception_and_its_line_in_the_code() {
        let stderr = "Traceback (most recent call last):\n  File \"/code/main.py\", line 9, in <module>\n  File \"/code/main.py\", line 3, in execute\nZeroDivisionError: division by zero\n";
        let line = traceback_line(stderr);
        assert_eq!(line, Some(3));
        let error = traceback_error(stderr, line);
        assert_eq!(
            (error.kind, error.name.as_str(), error.message.as_str()),
            (Reason::Exception, "ZeroDivisionError", "division by zero")
        );
        assert_eq!(traceback_line("MemoryError\n"), None);
    }

    #[test]
    fn the_driver_names_the_grants() {
        let command = driver(Language::Javascript, &[Grant::ReadFiles, Grant::Fetch]);
        assert_eq!(
            command,
            b"node --execute --allow=read_files,fetch /code/main.js"
        );
    }
}
