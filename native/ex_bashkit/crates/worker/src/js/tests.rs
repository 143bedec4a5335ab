use super::*;

fn run(code: &str, print: bool) -> bashkit::Result<ExecResult> {
    run_with(code, print, None)
}

fn run_with(code: &str, print: bool, execute: Option<&Execute>) -> bashkit::Result<ExecResult> {
    let host = Host {
        fs: Arc::new(bashkit::InMemoryFs::new()),
        cwd: "/".into(),
        env: vec![("HOME".into(), "/home".into())],
        argv: vec!["/usr/bin/node".into()],
        out: [Vec::new(), Vec::new()],
        caps: [1 << 20, 1 << 20],
        exit: None,
        grants: execute.map(|execute| execute.grants),
        finished: None,
        #[cfg(feature = "network")]
        http: None,
        tools: None,
    };
    let run = Run {
        code,
        filename: "[eval]",
        print,
        max_memory: 64 << 20,
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

fn execute(code: &str, input: &str, grants: Grants) -> String {
    let execute = Execute {
        grants,
        input: input.into(),
    };
    let result = run_with(code, false, Some(&execute)).unwrap();
    assert_eq!(result.exit_code, 0);
    result.stdout.to_string()
}

#[test]
fn execute_mode_answers_the_value_and_what_was_printed() {
    let out = execute(
        "async function execute(input) { console.log('sum'); return {sum: input.a + input.b}; }",
        r#"{"a": 2, "b": 3}"#,
        Grants::default(),
    );
    assert_eq!(out, r#"{"result":{"sum":5},"stdout":"sum\n","stderr":""}"#);
    let lexical = execute(
        "const execute = (x) => [x, typeof require, typeof process, typeof __host];",
        "7",
        Grants::default(),
    );
    assert_eq!(
        lexical,
        r#"{"result":[7,"undefined","undefined","undefined"],"stdout":"","stderr":""}"#
    );
}

#[test]
fn execute_mode_reports_what_was_thrown() {
    let out = execute(
        "function execute() {\n  throw new TypeError('bad');\n}",
        "null",
        Grants::default(),
    );
    assert!(
        out.starts_with(r#"{"error":{"name":"TypeError","message":"bad","stack":"#),
        "{out}"
    );
    let syntax = execute("function execute( {", "null", Grants::default());
    assert!(
        syntax.starts_with(r#"{"error":{"name":"SyntaxError""#),
        "{syntax}"
    );
    let missing = execute("let x = 1", "null", Grants::default());
    assert!(missing.contains("defines no function execute"), "{missing}");
    let never = execute(
        "function execute() { return new Promise(() => {}); }",
        "null",
        Grants::default(),
    );
    assert!(never.contains("never settled"), "{never}");
}

#[test]
fn execute_mode_grants_what_allow_names_and_nothing_else() {
    let probe = "function execute() { return [typeof fs, typeof crypto, typeof fetch]; }";
    let none = execute(probe, "null", Grants::default());
    assert!(
        none.starts_with(r#"{"result":["undefined","undefined","undefined"]"#),
        "{none}"
    );
    let all = Grants {
        read_files: true,
        crypto: true,
        fetch: true,
    };
    let granted = execute(probe, "null", all);
    assert!(
        granted.starts_with(r#"{"result":["object","object","function"]"#),
        "{granted}"
    );
    let hashed = execute(
        "function execute() { return crypto.createHash('sha256').update('abc').digest('hex').slice(0, 8); }",
        "null",
        all,
    );
    assert!(hashed.starts_with(r#"{"result":"ba7816bf""#), "{hashed}");
    let write = execute(
        "function execute() { return fs.writeFileSync; }",
        "null",
        all,
    );
    assert!(write.starts_with(r#"{"result":null"#), "{write}");
}
