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
        commands: true,
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

#[test]
fn timers_wait_and_run_in_order_of_due_time() {
    let code = r#"
        const started = Date.now();
        const order = [];
        setTimeout(() => order.push("30"), 30);
        setTimeout(() => order.push("10"), 10);
        const gone = setTimeout(() => order.push("cleared"), 5);
        clearTimeout(gone);
        setTimeout(() => order.push("20"), 20);
        setImmediate(() => order.push("immediate"));
        Promise.resolve().then(() => order.push("microtask"));
        let ticks = 0;
        const every = setInterval(() => { if (++ticks === 3) clearInterval(every); }, 5);
        setTimeout(() => setTimeout(() => order.push("nested"), 1), 25);
        (async () => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            const waited = Date.now() - started;
            console.log(order.join(" "), ticks, waited >= 95 ? "waited" : "did not wait: " + waited);
        })();
    "#;
    let result = run(code, false).unwrap();
    assert_eq!(
        result.stdout,
        "microtask immediate 10 20 nested 30 3 waited\n",
        "{}",
        String::from_utf8_lossy(result.stderr.as_bytes())
    );
}

#[test]
fn timers_promises_unref_and_the_timers_module() {
    let code = r#"
        const { setTimeout: sleep } = require("timers/promises");
        const timers = require("node:timers");
        setTimeout(() => console.log("never"), 10_000).unref();
        (async () => {
            const value = await sleep(20, "slept");
            timers.setTimeout(() => console.log(value, typeof timers.clearTimeout), 1);
        })();
    "#;
    let result = run(code, false).unwrap();
    assert_eq!(result.stdout, "slept function\n");
    assert_eq!(result.exit_code, 0);
}

#[test]
fn a_wait_past_the_deadline_is_a_timeout_and_a_timer_flood_a_clear_error() {
    let started = Instant::now();
    let waited = run("setTimeout(() => {}, 60_000)", false);
    assert!(
        matches!(
            waited,
            Err(bashkit::Error::ResourceLimit(
                bashkit::LimitExceeded::Timeout(_)
            ))
        ),
        "{waited:?}"
    );
    let forever = run("setInterval(() => {}, 1)", false);
    assert!(matches!(forever, Err(bashkit::Error::ResourceLimit(_))));
    // Both end at the 2 s deadline, not at the timers' own times (a
    // minute, forever).
    assert!(started.elapsed() < Duration::from_secs(40));

    let flood = run(
        "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1000)",
        false,
    )
    .unwrap();
    assert_eq!(flood.exit_code, 1);
    let stderr = String::from_utf8_lossy(flood.stderr.as_bytes()).into_owned();
    assert!(
        stderr.contains("too many timers pending (10000)"),
        "{stderr}"
    );
}

#[test]
fn a_console_flood_stops_at_the_output_cap() {
    // Stopped at the cap: had it printed on, the 2 s deadline would have
    // ended it as a timeout (an error).
    let result = run("for (;;) console.log('flood')", false).unwrap();
    assert!(result.stdout_truncated);
    assert_eq!(result.stdout.len(), 1 << 20);
    assert!(result.stdout.starts_with("flood\nflood\n"));
    assert_eq!(result.exit_code, 1);
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    assert!(stderr.contains("the script was stopped"), "{stderr}");
}

#[test]
fn buffer_encodings_views_and_binary_files() {
    let code = r#"
        const { Buffer: B } = require("buffer");
        const fs = require("fs");
        const b = Buffer.from("héllo wörld");
        const bytes = Buffer.from([0, 1, 127, 128, 200, 255]);
        fs.writeFileSync("/bin.dat", bytes);
        const back = fs.readFileSync("/bin.dat");
        const view = b.slice(0, 2);
        view[0] = 72;
        const n = Buffer.alloc(8);
        n.writeUInt32BE(0xdeadbeef, 0);
        n.writeInt16LE(-2, 4);
        const { StringDecoder } = require("string_decoder");
        const d = new StringDecoder("utf8");
        const euro = Buffer.from("€");
        const split = d.write(euro.subarray(0, 1)) + "|" + d.write(euro.subarray(1)) + d.end();
        console.log(B === Buffer, b.length, b.toString("hex").slice(0, 8), b.toString("base64"));
        console.log(Buffer.from(b.toString("base64"), "base64").toString(), back.equals(bytes), back);
        console.log(n.toString("hex"), n.readInt16LE(4), Buffer.concat([view, Buffer.from("!")]).toString());
        console.log(split, Buffer.byteLength("€"), fs.readFileSync("/bin.dat", "hex"), JSON.stringify(Buffer.from("hi")));
        console.log(require("crypto").createHash("sha256").update("abc").digest().subarray(0, 4));
    "#;
    let result = run(code, false).unwrap();
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    assert_eq!(
        result.stdout,
        "true 13 48c3a96c SMOpbGxvIHfDtnJsZA==\n\
         Héllo wörld true <Buffer 00 01 7f 80 c8 ff>\n\
         deadbeeffeff0000 -2 H\u{fffd}!\n\
         |€ 3 00017f80c8ff {\"type\":\"Buffer\",\"data\":[104,105]}\n\
         <Buffer ba 78 16 bf>\n",
        "{stderr}"
    );
}

/// Node's everyday modules: what Debian's Node 20 prints for the same program.
#[test]
fn events_util_os_querystring_url_assert_as_node_prints_them() {
    let code = r#"
const EventEmitter = require("events");
const { once } = require("node:events");
const util = require("util");
const os = require("os");
const qs = require("querystring");
const assert = require("assert");
const { URL: U, fileURLToPath } = require("url");
const e = new EventEmitter();
const seen = [];
e.on("x", (a, b) => seen.push(a + b));
e.once("x", () => seen.push("once"));
e.emit("x", 1, 2); e.emit("x", 3, 4);
console.log(seen.join(","), e.listenerCount("x"), e.eventNames());
console.log(util.format("%s=%d %j", "a", 42, { b: [1] }), util.inspect({ a: [1, 2], s: "x" }), util.inspect("str"));
console.log(util.types.isDate(new Date()), util.isDeepStrictEqual({ a: [1] }, { a: [1] }), os.EOL === "\n", os.platform(), typeof os.tmpdir());
console.log(qs.stringify({ a: "1 2", b: ["x", "y&z"] }), JSON.stringify(qs.parse("a=1+2&b=x&b=y%26z")));
const u = new URL("https://user:pw@Example.com:8080/a/b/../c?x=1&y=two#frag");
console.log(u.href, u.host, u.pathname, u.searchParams.get("y"), u.origin, u === u, U === URL);
u.searchParams.append("z", "a b");
console.log(u.search, new URL("../d?q", "http://h.io/a/b/c").href, fileURLToPath("file:///tmp/a%20b"));
const p = new URLSearchParams({ q: "x y", n: "1" });
console.log(p.toString(), [...p.keys()].join("|"), new TextDecoder().decode(new TextEncoder().encode("héllo")));
try { assert.deepStrictEqual({ a: 1 }, { a: 1 }); assert.strictEqual(1, 2); } catch (err) { console.log(err.name, err.code, err.message.split("\n")[0]); }
assert.throws(() => { throw new TypeError("bad"); }, TypeError);
(async () => {
  setTimeout(() => e.emit("ready", 7), 5);
  const [v] = await once(e, "ready");
  const sleep = util.promisify((ms, cb) => setTimeout(() => cb(null, ms * 2), ms));
  console.log(v, await sleep(3));
})();
"#;
    let expected = r#"3,once,7 1 [ 'x' ]
a=42 {"b":[1]} { a: [ 1, 2 ], s: 'x' } 'str'
true true true linux string
a=1%202&b=x&b=y%26z {"a":"1 2","b":["x","y&z"]}
https://user:pw@example.com:8080/a/c?x=1&y=two#frag example.com:8080 /a/c two https://example.com:8080 true true
?x=1&y=two&z=a+b http://h.io/a/d?q /tmp/a b
q=x+y&n=1 q|n héllo
AssertionError ERR_ASSERTION Expected values to be strictly equal:
7 6
"#;
    let result = run(code, false).unwrap();
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    assert_eq!(result.stdout, expected, "{stderr}");
}

/// A TypeScript program runs as its JavaScript, and its errors keep
/// their lines.
#[test]
fn typescript_runs_with_its_types_stripped() {
    let source = r#"
interface Order { id: number; total: number }
type Summary = { count: number; sum: number };
function summarize<T extends Order>(orders: readonly T[]): Summary {
  return { count: orders.length, sum: orders.reduce((s, o) => s + o.total, 0) };
}
class Ledger {
  private readonly entries: Order[] = [];
  add(order: Order): this { this.entries.push(order); return this; }
  get summary(): Summary { return summarize(this.entries); }
}
const ledger = new Ledger().add({ id: 1, total: 5 } as Order).add({ id: 2, total: 7 }!);
console.log(JSON.stringify(ledger.summary satisfies Summary));
const broken: string = fail<string>("boom" as string);
function fail<T>(why: T): never { throw new Error(String(why)); }
"#;
    let stripped = super::typescript::strip(source).unwrap();
    let result = run(&stripped, false).unwrap();
    assert_eq!(result.stdout, "{\"count\":2,\"sum\":12}\n");
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    // Thrown on the program's line 15 (the source's first line is empty),
    // called from line 14, as written.
    assert!(stderr.contains("main.js:15"), "{stderr}");
    assert!(stderr.contains("main.js:14"), "{stderr}");
}

/// `require` of packages in node_modules: "main", "exports" (with
/// conditions and subpaths), scoped names, a directory above; a native
/// addon is a clear error; TypeScript is stripped.
#[test]
fn require_finds_packages_in_node_modules() {
    let code = r#"
        const fs = require("fs");
        const put = (file, text) => { fs.mkdirSync(require("path").dirname(file), { recursive: true }); fs.writeFileSync(file, text); };
        put("/proj/node_modules/pad/package.json", JSON.stringify({ main: "lib/pad.js" }));
        put("/proj/node_modules/pad/lib/pad.js", "module.exports = (s, n) => String(s).padStart(n, '0');");
        put("/proj/node_modules/@acme/util/package.json", JSON.stringify({
            exports: { ".": { import: "./esm.mjs", require: "./cjs.js" }, "./sub": "./sub.js" } }));
        put("/proj/node_modules/@acme/util/cjs.js", "exports.kind = 'cjs';");
        put("/proj/node_modules/@acme/util/sub.js", "exports.kind = 'sub';");
        put("/proj/node_modules/native/package.json", JSON.stringify({ main: "build/addon.node" }));
        put("/proj/node_modules/native/build/addon.node", "\x7fELF");
        put("/proj/src/deep/typed.ts", "const twice = (n: number): number => n * 2; module.exports = { twice };");
        put("/proj/src/deep/main.js", `
            const pad = require("pad");
            const util = require("@acme/util");
            const sub = require("@acme/util/sub");
            let native;
            try { require("native"); } catch (e) { native = e.code + ": " + e.message.split(";")[0]; }
            let hidden;
            try { require("@acme/util/cjs.js"); } catch (e) { hidden = e.code; }
            console.log(pad(7, 3), util.kind, sub.kind, require("./typed.ts").twice(21));
            console.log(native);
            console.log(hidden);
        `);
        require("/proj/src/deep/main.js");
    "#;
    let result = run(code, false).unwrap();
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    assert_eq!(
        result.stdout,
        "007 cjs sub 42\n\
         ERR_DLOPEN_FAILED: Cannot load native addon /proj/node_modules/native/build/addon.node: node in a sandbox runs JavaScript only\n\
         ERR_PACKAGE_PATH_NOT_EXPORTED\n",
        "{stderr}"
    );
}

/// `import` of packages: the "import" condition of "exports", "main", a
/// CommonJS package as a default export, a native addon refused.
#[test]
fn import_finds_packages_in_node_modules() {
    let setup = r#"
        const fs = require("fs");
        const put = (file, text) => { fs.mkdirSync(require("path").dirname(file), { recursive: true }); fs.writeFileSync(file, text); };
        put("/app/node_modules/@acme/util/package.json", JSON.stringify({
            exports: { ".": { import: "./esm.mjs", require: "./cjs.js" } } }));
        put("/app/node_modules/@acme/util/esm.mjs", "export const kind = 'esm';");
        put("/app/node_modules/old/package.json", JSON.stringify({ main: "main.js" }));
        put("/app/node_modules/old/main.js", "module.exports = { kind: 'cjs' };");
        put("/app/node_modules/native/package.json", JSON.stringify({ main: "addon.node" }));
        put("/app/node_modules/native/addon.node", "");
        put("/app/main.mjs", `
            import { kind } from "@acme/util";
            import old from "old";
            console.log(kind, old.kind);
            try { await import("native"); } catch (e) { console.log(String(e.message).includes("native addon")); }
        `);
    "#;
    let host_fs: Arc<dyn bashkit::FileSystem> = Arc::new(bashkit::InMemoryFs::new());
    let mut host = Host::new(host_fs.clone(), "/".into(), [1 << 20, 1 << 20]);
    host.filename = "/setup.js".into();
    let deadline = Some((
        Instant::now() + Duration::from_secs(5),
        Duration::from_secs(5),
    ));
    let setup_run = Run {
        code: setup,
        filename: "/setup.js",
        print: false,
        max_memory: 64 << 20,
        deadline,
        execute: None,
        module: None,
    };
    assert_eq!(setup_run.go(host).unwrap().exit_code, 0);
    let main = String::from_utf8(
        ex_bashkit_core::sync::block_on(host_fs.read_file(std::path::Path::new("/app/main.mjs")))
            .unwrap(),
    )
    .unwrap();
    let mut host = Host::new(host_fs, "/app".into(), [1 << 20, 1 << 20]);
    host.filename = "/app/main.mjs".into();
    let run = Run {
        code: &main,
        filename: "/app/main.mjs",
        print: false,
        max_memory: 64 << 20,
        deadline,
        execute: None,
        module: Some(super::run::Evaluate::Yes),
    };
    let result = run.go(host).unwrap();
    let stderr = String::from_utf8_lossy(result.stderr.as_bytes()).into_owned();
    assert_eq!(result.stdout, "esm cjs\ntrue\n", "{stderr}");
}

/// A run of `code` as `/app/main.js` on the files `fs`.
fn run_on(fs: &Arc<dyn bashkit::FileSystem>, code: &str) -> ExecResult {
    let mut host = Host::new(fs.clone(), "/app".into(), [1 << 20, 1 << 20]);
    host.filename = "/app/main.js".into();
    let run = Run {
        code,
        filename: "/app/main.js",
        print: false,
        max_memory: 64 << 20,
        deadline: Some((
            Instant::now() + Duration::from_secs(5),
            Duration::from_secs(5),
        )),
        execute: None,
        module: None,
    };
    run.go(host).unwrap()
}

/// A file a run loads is compiled once: the next run (a fresh engine)
/// reads its bytecode and sees what the source gives (its functions'
/// text, its errors' lines, `__filename`); a changed file is compiled anew.
#[test]
fn loaded_files_are_compiled_once_and_changed_ones_again() {
    let fs: Arc<dyn bashkit::FileSystem> = Arc::new(bashkit::InMemoryFs::new());
    let write = |file: &str, text: &str| {
        let path = std::path::Path::new(file);
        ex_bashkit_core::sync::block_on(fs.mkdir(path.parent().unwrap(), true)).unwrap();
        ex_bashkit_core::sync::block_on(fs.write_file(path, text.as_bytes())).unwrap();
    };
    let library = "// a library\nfunction area(r) { return Math.PI * r * r; }\n\
        module.exports = { area, file: __filename, fail() {\n  throw new Error('deep');\n} };\n";
    write("/app/lib.js", library);
    write("/app/esm.mjs", "export const twice = (n) => n * 2;\n");
    let code = r#"
        const lib = require("./lib.js");
        let line;
        try { lib.fail(); } catch (e) { line = e.stack.split("\n").find((l) => l.includes("lib.js")).trim().split(":").slice(0, 2).join(":"); }
        import("./esm.mjs").then(({ twice }) => {
            console.log(lib.area(1).toFixed(3), lib.file, twice(21));
            console.log(lib.area.toString());
            console.log(line);
        });
    "#;
    let first = run_on(&fs, code);
    let wrapped =
        format!("(function (exports, require, module, __filename, __dirname) {{{library}\n}})");
    assert!(super::compiled::holds("script", "/app/lib.js", &wrapped).0);
    assert!(
        super::compiled::holds(
            "module",
            "/app/esm.mjs",
            "export const twice = (n) => n * 2;\n"
        )
        .0
    );
    let expected = "3.142 /app/lib.js 42\n\
        function area(r) { return Math.PI * r * r; }\n\
        at fail (/app/lib.js:4\n";
    assert_eq!(first.stdout, expected, "{}", first.stderr);
    let second = run_on(&fs, code);
    assert_eq!(second.stdout, expected, "{}", second.stderr);

    write("/app/lib.js", &library.replace("Math.PI * r * r", "2 * r"));
    let changed = run_on(&fs, code);
    assert!(
        changed.stdout.starts_with("2.000 /app/lib.js 42\n"),
        "{}",
        changed.stderr
    );
    // Bounded: the oldest bytecode goes first.
    assert!(super::compiled::holds("script", "", "").1 <= 32 << 20);
}
