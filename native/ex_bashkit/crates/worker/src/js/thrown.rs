//! What a script threw: for the code runner, a [`CodeError`] in the
//! library's words; for a plain run, the text Node prints.

use rquickjs::{CaughtError, Ctx, Exception, Value};

use ex_bashkit_protocol::code::CodeError;
use ex_bashkit_protocol::outcome::Reason;

/// A thrown value, as the prelude describes it (`name`, `message`,
/// `stack`; `null` for a thrown `null`), from code in `filename`.
/// `refused` says whether the engine ran out of memory during the run:
/// QuickJS throws an `InternalError` then, or `null` when it cannot make
/// even that, so only then is either of them a lack of memory.
pub fn code_error(
    name: &str,
    message: &str,
    stack: &str,
    null: bool,
    filename: &str,
    refused: bool,
) -> CodeError {
    let out_of_memory = null || (name == "InternalError" && message == "out of memory");
    let mut error = CodeError::exception(name, message, line_in(stack, filename));
    if refused && out_of_memory {
        error.kind = Reason::Memory;
        error.name = "InternalError".into();
        error.message = "out of memory".into();
    }
    error
}

/// An exception caught around the code's evaluation (its syntax, or what
/// its top level threw).
pub fn caught_error(caught: CaughtError<'_>, filename: &str, refused: bool) -> CodeError {
    match caught {
        CaughtError::Exception(exception) => {
            let (name, message) = name_and_message(&exception);
            let stack = exception.stack().unwrap_or_default();
            code_error(&name, &message, &stack, false, filename, refused)
        }
        CaughtError::Value(value) => code_error(
            "Error",
            &format!("Uncaught {}", describe(&value)),
            "",
            value.is_null(),
            filename,
            refused,
        ),
        CaughtError::Error(error) => {
            code_error("Error", &error.to_string(), "", false, filename, refused)
        }
    }
}

/// An exception's name (`Error` when it has none) and message.
fn name_and_message(exception: &Exception<'_>) -> (String, String) {
    let name = exception
        .get::<_, String>("name")
        .unwrap_or_else(|_| "Error".into());
    (name, exception.message().unwrap_or_default())
}

/// The first line of `filename` a stack names (`at f (/code/main.js:3:7)`).
fn line_in(stack: &str, filename: &str) -> Option<u32> {
    let marker = format!("{filename}:");
    stack.match_indices(&marker).find_map(|(at, _)| {
        let digits: String = stack[at + marker.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// An uncaught exception as Node reports it: the error, then its stack.
pub fn uncaught(caught: CaughtError<'_>) -> String {
    match caught {
        CaughtError::Exception(exception) => {
            let (name, message) = name_and_message(&exception);
            let head = if message.is_empty() {
                name
            } else {
                format!("{name}: {message}")
            };
            match exception.stack() {
                Some(stack) if !stack.trim().is_empty() => {
                    format!("Uncaught {head}\n{}\n", stack.trim_end())
                }
                _ => format!("Uncaught {head}\n"),
            }
        }
        CaughtError::Value(value) => format!("Uncaught {}\n", describe(&value)),
        CaughtError::Error(error) => format!("{error}\n"),
    }
}

fn describe(value: &Value<'_>) -> String {
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return format!("'{text}'");
    }
    if let Some(n) = value.as_number() {
        return n.to_string();
    }
    if value.is_null() {
        return "null".into();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    format!("{value:?}")
}

/// An `Error` with Node's `code` (`ERR_…`, `MODULE_NOT_FOUND`, zlib's
/// `Z_…`), thrown into the script.
pub fn coded(ctx: &Ctx<'_>, code: &str, message: &str) -> rquickjs::Error {
    match Exception::from_message(ctx.clone(), message) {
        Ok(exception) => {
            let _ = exception.set("code", code);
            ctx.throw(exception.into_value())
        }
        Err(error) => error,
    }
}

#[cfg(test)]
mod tests {
    use super::{code_error, line_in};
    use ex_bashkit_protocol::outcome::Reason;

    #[test]
    fn a_thrown_null_is_a_lack_of_memory_only_when_memory_ran_out() {
        let thrown =
            |refused| code_error("Error", "Uncaught null", "", true, "/code/main.js", refused);
        assert_eq!(thrown(false).kind, Reason::Exception);
        assert_eq!(thrown(false).message, "Uncaught null");
        assert_eq!(thrown(true).kind, Reason::Memory);
    }

    #[test]
    fn the_line_is_the_first_of_the_code_in_the_stack() {
        let stack = "    at f (/code/main.js:3:7)\n    at execute (/code/main.js:9:1)\n";
        assert_eq!(line_in(stack, "/code/main.js"), Some(3));
        assert_eq!(line_in("    at <eval> (other.js:2)", "/code/main.js"), None);
    }
}
