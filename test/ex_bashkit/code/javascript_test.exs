defmodule ExBashkit.JavaScriptTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.{Error, Session}

  @corpus Path.expand("../../fixtures/javascript_conformance.js", __DIR__)

  defp js(opts \\ []), do: Session.new([javascript: true, isolation: :process] ++ opts)

  # The session runs JavaScript again after a breach.
  defp assert_alive(session),
    do: assert(%Result{stdout: "alive\n"} = run(session, "node -e 'console.log(\"alive\")'"))

  # The corpus's snippets, each a program of its own.
  defp snippets do
    @corpus
    |> File.read!()
    |> String.split(~r/^\/\/ ---\n/m)
    |> Enum.map(fn text ->
      text |> String.split("\n") |> Enum.reject(&String.starts_with?(&1, "//")) |> Enum.join("\n")
    end)
    |> Enum.map(&String.trim/1)
    |> Enum.reject(&(&1 == ""))
  end

  describe "conformance against real Node" do
    @describetag timeout: 300_000

    test "at least 97 % of at least 400 snippets print exactly what Node prints" do
      node =
        System.find_executable("node") || flunk("real Node is needed: apt-get install nodejs")

      session = js()
      snippets = snippets()
      assert length(snippets) >= 400
      # Snippets that write files write them under /tmp/exb_* (real Node too).
      on_exit(fn -> Enum.each(Path.wildcard("/tmp/exb_*"), &File.rm_rf!/1) end)

      differences =
        for code <- snippets,
            {expected, _} =
              System.cmd(node, ["-e", code], stderr_to_stdout: true, env: [{"TZ", "UTC"}]),
            :ok = Session.write_file(session, "/snippet.js", code),
            {:ok, %Result{stdout: out, stderr: err}} = Session.exec(session, "node /snippet.js"),
            out <> err != expected,
            do: {code, expected, out <> err}

      passed = length(snippets) - length(differences)

      report =
        Enum.map_join(differences, "\n", fn {code, node, ours} ->
          "#{code}\n  node: #{inspect(node)}\n  ours: #{inspect(ours)}"
        end)

      assert passed * 100 >= length(snippets) * 97, "#{passed}/#{length(snippets)}:\n#{report}"
    end
  end

  describe "node as an agent types it" do
    test "-e, -p, a file with arguments, and a script on stdin" do
      session = js()
      assert %Result{stdout: "3\n"} = run(session, "node -e 'console.log(1 + 2)'")
      assert %Result{stdout: "[ 2, 4 ]\n"} = run(session, "node -p '[1, 2].map(x => x * 2)'")

      assert %Result{stdout: "[ 'one', 'two' ] /app.js\n"} =
               run(session, ~S"""
               echo 'console.log(process.argv.slice(2), process.argv[1])' > /app.js
               node /app.js one two
               """)

      assert %Result{stdout: "piped\n"} = run(session, "echo 'console.log(\"piped\")' | node")

      assert %Result{stdout: "err\n", exit_code: 0} =
               run(session, "node -e 'console.error(\"err\")' 2>&1")
    end

    test "exit codes: process.exit, an uncaught error, a bad option" do
      session = js()

      assert %Result{stdout: "3\n"} =
               run(session, "node -e 'process.exit(3); console.log(1)'; echo $?")

      assert %Result{stdout: "1\n", stderr: stderr} =
               run(session, "node -e 'throw new TypeError(\"bad\")'; echo $?")

      assert stderr =~ "TypeError: bad"
      assert %Result{stdout: "9\n"} = run(session, "node --inspect x.js; echo $?")
    end

    test "promises and async functions run to their end" do
      assert %Result{stdout: "sync\nasync 5\n"} =
               run(js(), ~S"""
               node -e 'const f = async () => { await null; return 5 }; f().then(v => console.log("async", v)); console.log("sync")'
               """)
    end
  end

  describe "the session's files" do
    test "are shared with bash both ways, through fs and require" do
      session =
        js(files: %{"/w/in.txt" => "from bash\n", "/w/lib.js" => "module.exports = x => x * 2;"})

      script = ~S"""
      cd /w && node -e '
        const fs = require("fs");
        const double = require("./lib");
        fs.writeFileSync("out.txt", fs.readFileSync("in.txt", "utf8").trim() + " and js " + double(21));
        fs.mkdirSync("d/e", { recursive: true });
        console.log(fs.existsSync("d/e"), fs.readdirSync("."), fs.statSync("in.txt").size);
      ' && cat out.txt
      """

      assert %Result{
               stdout: "true [ 'd', 'in.txt', 'lib.js', 'out.txt' ] 10\nfrom bash and js 42"
             } = run(session, script)

      assert %Result{stdout: "ENOENT\n"} =
               run(
                 session,
                 "node -e 'try { require(\"fs\").readFileSync(\"/nope\") } catch (e) { console.log(e.code) }'"
               )
    end
  end

  test "import: ES modules, Node's modules, JSON and CommonJS files, top-level await" do
    session =
      js(
        files: %{
          "/w/lib.mjs" => "export const double = (x) => x * 2;\nexport default 'lib';",
          "/w/cjs.js" => "module.exports = { triple: (x) => x * 3 };",
          "/w/data.json" => ~s({"n": 7}),
          "/w/main.mjs" => """
          import fs, { readFileSync } from 'fs';
          import { join } from 'node:path';
          import name, { double } from './lib.mjs';
          import cjs from './cjs.js';
          import data from './data.json';
          fs.writeFileSync('/w/out.txt', 'written');
          console.log(name, double(21), cjs.triple(2), data.n, join('/a', 'b'), readFileSync('/w/out.txt', 'utf8'));
          console.log('awaited', await Promise.resolve(5));
          """
        }
      )

    assert %Result{stdout: "lib 42 6 7 /a/b written\nawaited 5\n"} =
             run(session, "cd /w && node main.mjs")

    assert %Result{stdout: "8\n"} =
             run(
               session,
               ~S|cd /w && node -e 'import { double } from "./lib.mjs"; console.log(double(4))'|
             )

    assert %Result{exit_code: 1, stderr: missing} =
             run(session, ~S|node -e 'import { x } from "./missing.js"'|)

    assert missing =~ "Cannot find module '/w/missing.js' imported from /w/[eval]"

    # Node's modules a sandbox cannot have load, and refuse their use.
    assert %Result{exit_code: 1, stderr: refused} =
             run(session, ~S|node -e 'import cluster from "cluster"; cluster.fork()'|)

    assert refused =~ "cluster.fork is not available in the sandbox: node here runs one process"

    # Node's modules by name, their exports read from the modules.
    imports = ~S"""
    import { EventEmitter, once } from "node:events";
    import { execSync } from "child_process";
    import { Readable } from "stream";
    import { promisify, format } from "util";
    import { randomBytes } from "crypto";
    const e = new EventEmitter();
    setTimeout(() => e.emit("go", 1));
    const [v] = await once(e, "go");
    let text = "";
    for await (const chunk of Readable.from(["a", "b"])) text += chunk;
    console.log(v, execSync("echo shell").toString().trim(), text, typeof promisify, format("%d", 7), randomBytes(4).length);
    """

    :ok = Session.write_file(session, "/w/imports.mjs", imports)
    assert %Result{stdout: "1 shell ab function 7 4\n"} = run(session, "node /w/imports.mjs")

    assert %Result{exit_code: 0} = run(session, "node --check /w/main.mjs")
  end

  test "are shared with Python both ways" do
    session = js(python: true)

    script = ~S"""
    python3 -c '_ = open("/tmp/p.txt", "w").write("from python")'
    node -e 'const fs = require("fs"); fs.writeFileSync("/tmp/j.txt", fs.readFileSync("/tmp/p.txt", "utf8") + " and js")'
    python3 -c 'print(open("/tmp/j.txt").read())'
    """

    assert %Result{stdout: "from python and js\n"} = run(session, script)
  end

  describe "fetch" do
    setup do
      {_server, port} = ExBashkit.Test.HttpServer.start()
      %{base: "http://127.0.0.1:#{port}"}
    end

    defp fetch(session, url),
      do:
        run(
          session,
          "node -e 'fetch(\"#{url}\").then(async (r) => console.log(r.status, r.ok, await r.text())).catch((e) => console.log(e.message))'"
        )

    test "reaches what :allow_net allows, through the host", %{base: base} do
      session = js(allow_net: [base <> "/api"], block_private_ips: false)
      assert %Result{stdout: "200 true hit /api/x\n"} = fetch(session, base <> "/api/x")
      assert_received {:http_request, "/api/x"}

      assert %Result{stdout: "fetch failed: " <> _} = fetch(session, base <> "/elsewhere")
      refute_received {:http_request, "/elsewhere"}
    end

    test "without :allow_net there is no network", %{base: base} do
      assert %Result{stdout: "fetch failed: the sandbox has no network access (no allow_net)\n"} =
               fetch(js(), base <> "/api/x")

      refute_received {:http_request, _}
    end
  end

  # No known input crashes QuickJS-ng; a worker aborted mid-run (SIGABRT,
  # what a failed assertion in C raises) is what a crash of the engine
  # would be. (Not SIGSEGV from kill: Rust's stack-overflow handler
  # survives a SIGSEGV that is not a fault.)
  test "a crash of the engine's process fails its session only" do
    crashing = js()
    other = js()
    test = self()

    task =
      Task.async(fn ->
        Session.exec(crashing, "echo started; node -e 'while (true) {}'",
          stream_to: {test, :crash},
          errors: :struct
        )
      end)

    os_pid = Session.info(crashing).os_pid
    assert_receive {:ex_bashkit, :crash, {:stdout, "started\n"}}
    System.cmd("kill", ["-ABRT", to_string(os_pid)])
    assert {:error, %Error{message: message, stdout: "started\n"}} = Task.await(task, 30_000)
    assert message =~ "worker process exited"
    assert {:error, _} = Session.exec(crashing, "echo after")
    assert_alive(other)
    assert_alive(js())
  end

  test "crypto: an unknown digest is an error the program can catch" do
    assert %Result{stdout: "Digest method not supported: whirlpool\n"} =
             run(js(), ~S"""
             node -e 'try { require("crypto").createHash("whirlpool").digest("hex") } catch (e) { console.log(e.message) }'
             """)
  end

  describe "limits, each a clean error with the session alive after" do
    test "a loop that never ends stops at the deadline" do
      session = js()

      assert {:error, %Error{reason: :timeout, limit: :timeout_ms}} =
               Session.exec(session, "node -e 'while (true) {}'", timeout_ms: 300, errors: :struct)

      assert_alive(session)
    end

    test "memory past :max_javascript_memory_bytes" do
      session = js(limits: [max_javascript_memory_bytes: 16 * 1024 * 1024])

      assert {:error, %Error{reason: :limit, limit: :max_javascript_memory_bytes}} =
               Session.exec(
                 session,
                 "node -e 'const a = []; while (true) a.push(new Array(1e5).fill(1))'",
                 errors: :struct
               )

      assert_alive(session)
    end

    test "timers: a wait past the deadline, an interval that never ends, a flood" do
      session = js()

      for code <- ["setTimeout(() => {}, 600000)", "setInterval(() => {}, 1)"] do
        assert {:error, %Error{reason: :timeout, limit: :timeout_ms}} =
                 Session.exec(session, "node -e '#{code}'", timeout_ms: 300, errors: :struct)
      end

      flood = "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1000)"
      assert %Result{stdout: "1\n", stderr: stderr} = run(session, "node -e '#{flood}'; echo $?")
      assert stderr =~ "RangeError: too many timers pending (10000)"
      assert_alive(session)
    end

    test "a 100 MB Buffer is past the memory cap; a native addon is refused" do
      session = js(limits: [max_javascript_memory_bytes: 64 * 1024 * 1024])

      assert {:error, %Error{reason: :limit, limit: :max_javascript_memory_bytes}} =
               Session.exec(session, "node -e 'Buffer.alloc(100e6, 1)'", errors: :struct)

      :ok = Session.mkdir(session, "/app/node_modules/fast/build", parents: true)

      :ok =
        Session.write_file(
          session,
          "/app/node_modules/fast/package.json",
          ~s({"main": "build/fast.node"})
        )

      :ok = Session.write_file(session, "/app/node_modules/fast/build/fast.node", <<0x7F, "ELF">>)

      assert %Result{stdout: "1\n", stderr: stderr} =
               run(session, "cd /app && node -e 'require(\"fast\")'; echo $?")

      assert stderr =~ "Cannot load native addon"
      assert_alive(session)
    end

    test "deep recursion is a RangeError, as in Node" do
      session = js()

      assert %Result{stdout: "1\n", stderr: stderr} =
               run(session, "node -e 'function f() { return f() } f()'; echo $?")

      assert stderr =~ "RangeError: Maximum call stack size exceeded"
      assert_alive(session)
    end

    test "a console.log that never ends stops at the session's cap, not its deadline" do
      session = js(limits: [max_stdout_bytes: 10_000])

      assert {:ok, %ExBashkit.Result{stdout: out, stderr: err, exit_code: 1, truncated: true}} =
               Session.exec(session, "node -e 'for (;;) console.log(\"flood\")'",
                 timeout_ms: 60_000
               )

      assert byte_size(out) == 10_000
      assert err =~ "the script was stopped"
      assert_alive(session)
    end

    test "output past the session's cap is cut" do
      session = js(limits: [max_stdout_bytes: 1000])
      # 100 lines of 101 bytes: ten times the cap.
      code = "for (let i = 0; i < 100; i++) console.log(\"x\".repeat(100))"
      assert %Result{stdout: out, exit_code: 0} = run(session, "node -e '#{code}'")

      assert out ==
               String.duplicate(String.duplicate("x", 100) <> "\n", 10) |> binary_part(0, 1000)

      assert_alive(session)
    end
  end

  describe "child_process" do
    test "runs commands in the session: its files, exported variables and directory" do
      session = js(files: %{"/w/in.txt" => "one\ntwo\nthree\n"})

      program = ~S"""
      const cp = require("child_process");
      console.log(cp.execSync("grep -c o in.txt", { encoding: "utf8" }).trim());
      console.log(cp.execSync("echo $SHARED-$PRIVATE", { encoding: "utf8" }).trim());
      cp.execSync("sort -r in.txt > sorted.txt && mkdir -p made");
      const r = cp.spawnSync("cat", ["missing.txt"], { encoding: "utf8" });
      console.log(r.status, r.stderr.includes("missing.txt"));
      try { cp.execSync("exit 7", { stdio: "pipe" }); } catch (e) { console.log("status", e.status); }
      """

      :ok = Session.write_file(session, "/w/run.js", program)

      assert %Result{stdout: stdout} =
               run(session, "cd /w && export SHARED=yes && PRIVATE=no && node run.js")

      assert stdout == "2\nyes-\n1 true\nstatus 7\n"
      assert {:ok, "two\nthree\none\n"} = Session.read_file(session, "/w/sorted.txt")
      assert %Result{stdout: "made\n"} = run(session, "cd /w && ls -d made")
    end

    test "the session's command policy applies to its commands" do
      session = js(command_policy: {:deny, ["rm"]}, files: %{"/w/keep.txt" => "kept"})

      program = ~S"""
      const { spawnSync } = require("child_process");
      const r = spawnSync("rm", ["/w/keep.txt"], { encoding: "utf8" });
      console.log(r.status !== 0, r.stderr.length > 0);
      """

      assert %Result{stdout: "true true\n"} = run(session, "node -e '#{program}'")
      assert {:ok, "kept"} = Session.read_file(session, "/w/keep.txt")
    end

    # 21 runs of 17 nested shells: about 30 s on an idle machine, ten
    # times that as the test's own limit.
    @tag timeout: 300_000
    test "node running node running node… stops at 16 shells; a command stops at the deadline" do
      # 17 nested runs take about 1.3 s here: the deadline is far past
      # that, and the deadline part below gives its call one of 5 s.
      session = js(limits: [timeout_ms: 60_000])

      recursion = ~S"""
      const depth = Number(process.argv[2] || 0);
      console.log("depth", depth);
      require("child_process").execSync("node /r.js " + (depth + 1), { stdio: "inherit" });
      """

      :ok = Session.write_file(session, "/r.js", recursion)
      assert %Result{stdout: stdout, stderr: stderr, exit_code: 1} = run(session, "node /r.js")
      assert stdout == Enum.map_join(0..16, &"depth #{&1}\n")
      assert stderr =~ "more than 16 shells started from one another"

      # The same again and again leaves no shell's thread behind.
      tasks = "/proc/#{Session.info(session).os_pid}/task"

      shells = fn ->
        tasks
        |> File.ls!()
        |> Enum.count(&(File.read(tasks <> "/" <> &1 <> "/comm") == {:ok, "ex_bashkit_shell\n"}))
      end

      for _ <- 1..20 do
        assert %Result{exit_code: 1} = run(session, "node /r.js")
      end

      assert wait_until(fn -> shells.() == 0 end, 500), "#{shells.()} shells' threads left"

      started = System.monotonic_time(:millisecond)

      # The command and the script share the deadline: whichever notices
      # first says so (the script, catching the command's error, or the
      # session, stopping the script).
      sleeping = ~S|node -e 'require("child_process").execSync("sleep 100")'|

      said =
        case Session.exec(session, sleeping, timeout_ms: 5_000) do
          {:ok, %Result{exit_code: 1, stderr: stderr}} -> stderr
          {:error, message} -> message
        end

      assert said =~ "(limit :timeout_ms)"
      # The deadline is 5 s; ten times that is a command that did not stop.
      assert System.monotonic_time(:millisecond) - started < 50_000
      assert_alive(session)
    end

    test "exec and spawn deliver their output from the event loop" do
      program = ~S"""
      const { exec, spawn } = require("child_process");
      const { promisify } = require("util");
      exec("echo one; echo two >&2", (error, stdout, stderr) => console.log("exec", error, stdout.trim(), stderr.trim()));
      const wc = spawn("wc", ["-l"]);
      wc.stdout.on("data", (d) => console.log("wc", d.toString().trim()));
      wc.on("close", (code) => console.log("closed", code));
      wc.stdin.end("a\nb\nc\n");
      promisify(exec)("echo three").then(({ stdout }) => console.log("promised", stdout.trim()));
      console.log("first");
      """

      assert %Result{stdout: stdout} = run(js(), "node -e '#{program}'")
      lines = String.split(stdout, "\n", trim: true)
      assert hd(lines) == "first"

      assert Enum.sort(tl(lines)) ==
               Enum.sort(["exec null one two", "wc 3", "closed 0", "promised three"])
    end
  end

  test "process.stdin and readline read what is piped in; streams pipe into files" do
    program = ~S"""
    const readline = require("readline");
    const fs = require("fs");
    const rl = readline.createInterface({ input: process.stdin });
    const out = fs.createWriteStream("/upper.txt");
    rl.on("line", (line) => out.write(line.toUpperCase() + "\n"));
    rl.on("close", () => out.end(() => console.log(fs.readFileSync("/upper.txt", "utf8").trim())));
    """

    session = js()
    :ok = Session.write_file(session, "/up.js", program)
    assert %Result{stdout: "A\nB C\n"} = run(session, "printf 'a\\nb c\\n' | node /up.js")

    bytes =
      ~S|node -e 'let n = 0; process.stdin.on("data", (d) => (n += d.length)).on("end", () => console.log(n))'|

    assert %Result{stdout: "256\n"} = run(session, "head -c 256 /dev/urandom | #{bytes}")
  end

  test "TypeScript files run with their types stripped; what needs code generated is refused" do
    session = js()

    :ok =
      Session.write_file(session, "/app.ts", """
      interface Point { x: number; y: number }
      const norm = (p: Point): number => Math.hypot(p.x, p.y);
      export function main<T extends Point>(points: T[]): string {
        return points.map(norm).join(",");
      }
      console.log(main([{ x: 3, y: 4 } as Point]));
      """)

    assert %Result{stdout: "5\n", exit_code: 0} = run(session, "node /app.ts")
    :ok = Session.write_file(session, "/enum.ts", "const a = 1;\nenum Color { Red }\n")
    assert %Result{stderr: err, exit_code: 1} = run(session, "node /enum.ts")
    assert err =~ "/enum.ts:2"
    assert err =~ "an enum needs code generated"
  end

  test "javascript: true needs a worker process" do
    assert_raise ArgumentError, ~r/javascript: true needs isolation: :process/, fn ->
      Session.new(javascript: true, isolation: :none)
    end

    assert_raise ArgumentError, ~r/:javascript/, fn -> Session.new(javascript: :yes) end
  end

  test "without javascript: true there is no node" do
    assert %Result{exit_code: 127} = run(Session.new(isolation: :process), "node -e 1")
  end
end
