use super::*;

fn run(code: &str, print: bool) -> bashkit::Result<ExecResult> {
    let host = Host {
        fs: Arc::new(bashkit::InMemoryFs::new()),
        cwd: "/".into(),
        env: vec![("HOME".into(), "/home".into())],
        argv: vec!["/usr/bin/node".into()],
        out: [Vec::new(), Vec::new()],
        caps: [1 << 20, 1 << 20],
        exit: None,
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
