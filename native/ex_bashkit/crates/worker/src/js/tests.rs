use std::sync::Arc;
use std::time::{Duration, Instant};

use bashkit::ExecResult;
use ex_bashkit_protocol::code::CodeOutcome;
use ex_bashkit_protocol::outcome::Reason;

use super::host::Host;
use super::invocation::{Execute, Grants};
use super::run::Run;
use crate::code::Slot;

fn run(code: &str, print: bool) -> bashkit::Result<ExecResult> {
    run_with(code, print, None, 64 << 20)
}

fn run_with(
    code: &str,
    print: bool,
    execute: Option<(&Execute, &Slot)>,
    max_memory: usize,
) -> bashkit::Result<ExecResult> {
    let mut host = Host::new(
        Arc::new(bashkit::InMemoryFs::new()),
        "/".into(),
        [1 << 20, 1 << 20],
    );
    host.env = [("HOME".to_string(), "/home".to_string())].into();
    host.argv = vec!["/usr/bin/node".into()];
    host.grants = execute.map(|(execute, _)| execute.grants);
    host.filename = "/code/main.js".into();
    let run = Run {
        code,
        filename: "/code/main.js",
        print,
        max_memory,
        deadline: Some((
            Instant::now() + Duration::from_secs(2),
            Duration::from_secs(2),
        )),
        execute,
        module: None,
    };
    run.go(host)
}

#[test]
fn console_log_prints_as_node_does() {
    let result = run("console.log(1 + 2, [1, 2], {a: 1, b: 'x'})", false).unwrap();
    assert_eq!(result.stdout, "3 [ 1, 2 ] { a: 1, b: 'x' }\n");
}

#[test]
fn the_prelude_is_compiled_once_and_each_run_is_fresh() {
    // The second run loads the first's bytecode; globals do not leak
    // from one run to the next.
    let first = run("globalThis.leak = 1; console.log(typeof require)", false).unwrap();
    let second = run("console.log(typeof leak, typeof require)", false).unwrap();
    assert_eq!(first.stdout, "function\n");
    assert_eq!(second.stdout, "undefined function\n");
}

/// The outcome `execute(input)` leaves, and what it printed.
fn execute(code: &str, input: &str, grants: Grants) -> (CodeOutcome, String) {
    let execute = Execute {
        grants,
        input: input.into(),
    };
    let slot = Slot::default();
    let result = run_with(code, false, Some((&execute, &slot)), 64 << 20).unwrap();
    let outcome = slot.take().expect("an outcome");
    assert_eq!(
        result.exit_code,
        i32::from(matches!(outcome, CodeOutcome::Error(_)))
    );
    (outcome, result.stdout.to_string())
}

fn value(outcome: (CodeOutcome, String)) -> String {
    match outcome.0 {
        CodeOutcome::Value(json) => json,
        CodeOutcome::Error(error) => panic!("threw {error:?}"),
    }
}

fn error(outcome: (CodeOutcome, String)) -> ex_bashkit_protocol::code::CodeError {
    match outcome.0 {
        CodeOutcome::Error(error) => error,
        CodeOutcome::Value(json) => panic!("returned {json}"),
    }
}

#[test]
fn execute_mode_leaves_the_value_and_prints_what_the_code_printed() {
    let (outcome, stdout) = execute(
        "async function execute(input) { console.log('sum'); return {sum: input.a + input.b}; }",
        r#"{"a": 2, "b": 3}"#,
        Grants::default(),
    );
    assert_eq!(outcome, CodeOutcome::Value(r#"{"sum":5}"#.into()));
    assert_eq!(stdout, "sum\n");
    let lexical = execute(
        "const execute = (x) => [x, typeof require, typeof process, typeof __host];",
        "7",
        Grants::default(),
    );
    assert_eq!(value(lexical), r#"[7,"undefined","undefined","undefined"]"#);
}

#[test]
fn execute_mode_reports_what_was_thrown_with_its_kind_and_line() {
    let thrown = error(execute(
        "function execute() {\n  throw new TypeError('bad');\n}",
        "null",
        Grants::default(),
    ));
    assert_eq!(
        (
            thrown.kind,
            thrown.name.as_str(),
            thrown.message.as_str(),
            thrown.line
        ),
        (Reason::Exception, "TypeError", "bad", Some(2))
    );
    let syntax = error(execute("function execute( {", "null", Grants::default()));
    assert_eq!(
        (syntax.kind, syntax.name.as_str()),
        (Reason::Syntax, "SyntaxError")
    );
    let missing = error(execute("let x = 1", "null", Grants::default()));
    assert!(
        missing.message.contains("defines no function execute"),
        "{missing:?}"
    );
    let never = error(execute(
        "function execute() { return new Promise(() => {}); }",
        "null",
        Grants::default(),
    ));
    assert!(never.message.contains("never settled"), "{never:?}");
}

#[test]
fn a_thrown_null_is_an_exception_and_running_out_of_memory_is_not() {
    for thrown in ["null", "'boom'", "{code: 7}"] {
        let code = format!("function execute() {{ throw {thrown}; }}");
        let error = error(execute(&code, "null", Grants::default()));
        assert_eq!(error.kind, Reason::Exception, "{thrown}: {error:?}");
        assert!(error.message.starts_with("Uncaught "), "{error:?}");
    }
    let execute = Execute {
        grants: Grants::default(),
        input: "null".into(),
    };
    let slot = Slot::default();
    let bomb = "function execute() { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }";
    let ran = run_with(bomb, false, Some((&execute, &slot)), 16 << 20);
    assert!(
        matches!(
            ran,
            Err(bashkit::Error::ResourceLimit(
                bashkit::LimitExceeded::Memory(_)
            ))
        ),
        "{ran:?}"
    );
}

#[test]
fn execute_mode_grants_what_allow_names_and_nothing_else() {
    let probe = "function execute() { return [typeof fs, typeof crypto, typeof fetch]; }";
    let none = value(execute(probe, "null", Grants::default()));
    assert_eq!(none, r#"["undefined","undefined","undefined"]"#);
    let all = Grants {
        read_files: true,
        crypto: true,
        fetch: true,
    };
    let granted = value(execute(probe, "null", all));
    assert_eq!(granted, r#"["object","object","function"]"#);
    let hashed = value(execute(
        "function execute() { return crypto.createHash('sha256').update('abc').digest('hex').slice(0, 8); }",
        "null",
        all,
    ));
    assert_eq!(hashed, r#""ba7816bf""#);
    let write = value(execute(
        "function execute() { return fs.writeFileSync; }",
        "null",
        all,
    ));
    assert_eq!(write, "null");
}
