defmodule ExBashkit.CodeTest do
  # ExBashkit.Code.run/2 and validate/2: each language, each grant off and
  # on, each limit, against real workers and a real HTTP server on loopback.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Code, Error}
  alias ExBashkit.Test.HttpServer

  doctest ExBashkit.Code

  @values %{
    "map" => %{"nested" => %{"list" => [1, 2.5, -3]}},
    "string" => "héllo \"quoted\"\n",
    "true" => true,
    "false" => false,
    "nil" => nil,
    "empty" => [],
    "big" => 9_007_199_254_740_991
  }

  @echo %{
    javascript: "function execute(input) { return input; }",
    python: "def execute(input):\n    return input\n",
    bash: "cat",
    elixir: "input"
  }

  for {language, code} <- @echo do
    test "#{language}: input and output round-trip every JSON value" do
      assert {:ok, run} =
               Code.run(unquote(code), language: unquote(language), input: @values, trusted: true)

      assert run.output == @values
      assert is_integer(run.duration_ms) and run.duration_ms >= 0
    end
  end

  describe "failures are data" do
    test "a syntax error is :syntax with its line, in each language" do
      assert {:error, %Error{reason: :syntax, line: 2}} =
               Code.run("function execute() {\n  return (;\n}", language: :javascript)

      assert {:error, %Error{reason: :syntax, line: 2}} =
               Code.run("def execute(input):\n    return (\n", language: :python)

      assert {:error, %Error{reason: :syntax}} = Code.run("if then fi (", language: :bash)
    end

    test "an exception is :exception with the language's message and line" do
      assert {:error, %Error{reason: :exception, line: 3} = error} =
               Code.run("function execute() {\n  console.log('before');\n  null.x;\n}")

      assert error.message =~ "TypeError"
      assert error.stdout == "before\n"

      assert {:error, %Error{reason: :exception, line: 2, message: "ZeroDivisionError" <> _}} =
               Code.run("def execute(input):\n    return 1 / 0\n", language: :python)

      assert {:error, %Error{reason: :exception, message: "the script exited with status 3"} = e} =
               Code.run("echo partial; exit 3", language: :bash)

      assert e.stdout == "partial\n"

      assert {:error, %Error{reason: :exception, message: message}} =
               Code.run(~S|raise "boom"|, language: :elixir, trusted: true)

      assert message =~ "boom"
    end

    test "a rejected promise, a thrown non-error and a missing execute" do
      assert {:error, %Error{reason: :exception, message: "Error: later (line 1)"}} =
               Code.run("async function execute() { await null; throw new Error('later'); }")

      assert {:error, %Error{reason: :exception, message: "Error: Uncaught 'text'"}} =
               Code.run("function execute() { throw 'text'; }")

      assert {:error, %Error{message: "ReferenceError: " <> _}} = Code.run("let x = 1;")

      assert {:error, %Error{reason: :exception, message: "NameError: " <> _}} =
               Code.run("x = 1\n", language: :python)
    end

    test "a value JSON cannot carry is an exception, not a crash" do
      assert {:error, %Error{reason: :exception, message: "TypeError" <> _}} =
               Code.run("function execute() { return 1n; }")
    end

    test "a loop that never ends stops at :timeout_ms; the next run is unaffected" do
      assert {:error, %Error{reason: :timeout}} =
               Code.run("function execute() { while (true) {} }", timeout_ms: 300)

      assert {:error, %Error{reason: :timeout}} =
               Code.run("def execute(input):\n    while True:\n        pass\n",
                 language: :python,
                 timeout_ms: 500
               )

      assert {:ok, %{output: 1}} = Code.run("function execute() { return 1; }")
    end

    test "memory beyond :memory_mb is :memory" do
      grow = "function execute() { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }"
      assert {:error, %Error{reason: :memory}} = Code.run(grow, memory_mb: 16)
    end

    test "what the code throws is :exception with the value shown, a thrown null too" do
      for {thrown, shown} <- [{"null", "null"}, {"'boom'", "'boom'"}, {"{code: 7}", "code: 7"}] do
        assert {:error, %Error{reason: :exception, message: message}} =
                 Code.run("function execute() { throw #{thrown}; }")

        assert message =~ "Uncaught" and message =~ shown
      end
    end

    test "the engine's outcome is apart from what the code printed" do
      # Output that looks like an outcome is only output.
      forged = ~S|function execute() { console.log('{"result": 1}'); return 2; }|
      assert {:ok, %{output: 2, stdout: ~s({"result": 1}\n)}} = Code.run(forged)

      printed = "def execute(input):\n    print('{\"value\": \"1\"}')\n    return 2\n"

      assert {:ok, %{output: 2, stdout: ~s({"value": "1"}\n)}} =
               Code.run(printed, language: :python)
    end

    test "a value larger than the output cap is :limit" do
      assert {:error, %Error{reason: :limit, message: message}} =
               Code.run("function execute() { return 'x'.repeat(2e6); }")

      assert message =~ "output limit"
    end

    test "recursion without end is a clean exception" do
      assert {:error, %Error{reason: :exception, message: message}} =
               Code.run("function f() { return f() + 1; }\nfunction execute() { return f(); }")

      assert message =~ "stack"
    end

    test "output beyond the caps is refused, not unbounded" do
      flood = "function execute() { for (let i = 0; i < 2e5; i++) console.log('x'.repeat(100)); }"
      assert {:error, %Error{reason: :limit}} = Code.run(flood)
    end
  end

  describe "a fresh sandbox per run" do
    test "nothing one run leaves is seen by the next" do
      code = """
      function execute() {
        const seen = typeof globalThis.leftover;
        globalThis.leftover = 1;
        return seen;
      }
      """

      assert {:ok, %{output: "undefined"}} = Code.run(code)
      assert {:ok, %{output: "undefined"}} = Code.run(code)

      write = "echo secret > /tmp/left; ls /tmp"
      assert {:ok, %{stdout: "left\n"}} = Code.run(write, language: :bash)
      assert {:ok, %{stdout: ""}} = Code.run("ls /tmp", language: :bash)
    end

    test "the script sees no require, process or __host" do
      code = """
      function execute() {
        // Named so that the scan lets the run start: the sandbox refuses.
        const names = ["req" + "uire", "pro" + "cess", "__host", "fs", "fe" + "tch", "crypto"];
        return names.map((name) => typeof globalThis[name]);
      }
      """

      assert {:ok, %{output: ["undefined" | _] = kinds}} = Code.run(code)
      assert Enum.uniq(kinds) == ["undefined"]
    end
  end

  describe "allow: :read_files" do
    @files %{"/data/in.txt" => "hello", "/data/big.bin" => :binary.copy("x", 2 * 1024 * 1024)}

    test "off: there is no fs, and the scan refuses it" do
      assert {:error, %Error{reason: :denied, message: "fs needs allow: [:read_files]" <> _}} =
               Code.run("function execute() { return fs.readFileSync('/data/in.txt'); }",
                 files: @files
               )

      # Spelled so that the scan misses it, it finds nothing to call.
      assert {:ok, %{output: "undefined"}} =
               Code.run("function execute() { return typeof globalThis['f' + 's']; }",
                 files: @files
               )
    end

    test "on: reads the run's files, at most 1 MiB, and never writes" do
      opts = [files: @files, allow: [:read_files]]

      assert {:ok, %{output: "hello"}} =
               Code.run(
                 "async function execute() { return await fs.readFile('/data/in.txt'); }",
                 opts
               )

      assert {:error, %Error{reason: :exception, message: "Error: EFBIG" <> _}} =
               Code.run(
                 "function execute() { return fs.readFileSync('/data/big.bin').length; }",
                 opts
               )

      assert {:error, %Error{reason: :exception, message: "Error: ENOENT" <> _}} =
               Code.run(
                 "function execute() { return fs.readFileSync('/proc/self/environ'); }",
                 opts
               )

      assert {:ok, %{output: "undefined"}} =
               Code.run("function execute() { return typeof fs['write' + 'FileSync']; }", opts)
    end

    test "it needs something to read" do
      assert_raise ArgumentError, ~r/needs :files or :mounts/, fn ->
        Code.run("function execute() {}", allow: [:read_files])
      end
    end
  end

  describe "allow: :crypto" do
    @hash "function execute(s) { return crypto.createHmac('sha256', 'k').update(s).digest('hex'); }"

    test "off: refused; on: hashes and HMAC" do
      assert {:error, %Error{reason: :denied}} = Code.run(@hash, input: "abc")

      assert {:ok, %{output: hmac}} = Code.run(@hash, input: "abc", allow: [:crypto])
      assert hmac == :crypto.mac(:hmac, :sha256, "k", "abc") |> Base.encode16(case: :lower)
    end
  end

  describe "allow: :fetch" do
    setup do
      {_server, port} = HttpServer.start()
      %{base: "http://127.0.0.1:#{port}"}
    end

    @get "async function execute(url) { const r = await fetch(url); return [r.status, await r.text()]; }"

    test "off: there is no fetch, and no network", %{base: base} do
      assert {:error, %Error{reason: :denied}} = Code.run(@get, input: base <> "/x")

      assert {:ok, %{output: "undefined"}} =
               Code.run("function execute() { return typeof globalThis['fe' + 'tch']; }")

      refute_received {:http_request, _}
    end

    test "on: reaches what :allow_net allows, and nothing else", %{base: base} do
      opts = [allow: [:fetch], allow_net: [base <> "/api"], block_private_ips: false]

      assert {:ok, %{output: [200, "hit /api/x"]}} =
               Code.run(@get, [input: base <> "/api/x"] ++ opts)

      assert_received {:http_request, "/api/x"}

      assert {:error, %Error{reason: :exception, message: message}} =
               Code.run(@get, [input: base <> "/other"] ++ opts)

      assert message =~ "fetch failed"
      refute_received {:http_request, "/other"}
    end

    test "it needs :allow_net" do
      assert_raise ArgumentError, ~r/needs :allow_net/, fn -> Code.run(@get, allow: [:fetch]) end
    end
  end

  describe "validate/2" do
    @banned [
      {"eval('1')", "eval() is forbidden"},
      {"new Function('return 1')", "new Function() is forbidden"},
      {"require('child_process')", "require() is forbidden"},
      {"import('fs')", "import is forbidden"},
      {"process.exit(1)", "process is forbidden"},
      {"fs.writeFileSync('/x', 'y')", "fs writes are forbidden"},
      {"fs.unlinkSync('/x')", "fs writes are forbidden"},
      {"fetch('http://x')", "fetch() needs allow: [:fetch]"},
      {"fs.readFileSync('/x')", "fs needs allow: [:read_files]"},
      {"crypto.randomUUID()", "crypto needs allow: [:crypto]"},
      {"child_process.execSync('ls')", "child_process needs allow: [:commands]"}
    ]

    test "each banned JavaScript API, with its line" do
      for {use, message} <- @banned do
        code = "function execute() {\n  return #{use};\n}"
        assert {:error, found} = Code.validate(code, language: :javascript)
        assert %{kind: :forbidden, line: 2} = Enum.find(found, &(&1.message == message)), use
      end
    end

    test "strings and comments are not code" do
      code = """
      // eval() and require() are mentioned here only
      /* process.exit() */
      function execute() { return "eval(1) require('fs') " + `${'process'}`; }
      """

      assert :ok = Code.validate(code, language: :javascript)
    end

    test "granted APIs pass" do
      code = "async function execute() { return [crypto.randomUUID(), await fetch('x')]; }"

      assert {:error, [_, _]} = Code.validate(code)
      assert :ok = Code.validate(code, allow: [:crypto, :fetch])
    end

    test "a syntax error and a forbidden use, together" do
      assert {:error, [%{kind: :syntax, line: 2}, %{kind: :forbidden, line: 1}]} =
               Code.validate("eval(1);\nlet = ;")
    end

    test "Python and bash" do
      assert {:error, [%{kind: :forbidden, line: 1}]} =
               Code.validate("import subprocess\ndef execute(i):\n    return 1\n",
                 language: :python
               )

      assert {:error, [%{kind: :forbidden, message: "reading files needs allow: [:read_files]"}]} =
               Code.validate("def execute(i):\n    return open('/x').read()\n", language: :python)

      assert {:error, [%{kind: :forbidden, message: "curl needs allow: [:fetch]"}]} =
               Code.validate("curl -s http://x | jq .", language: :bash)

      assert {:error, [%{kind: :syntax}]} = Code.validate("if then", language: :bash)
      assert :ok = Code.validate("jq .", language: :bash)
    end

    test "code inside a template's ${…} is code; a property named like a global is not" do
      code = "function execute(o) {\n  return `${eval('1')}` + o.process + o.fs.writeFileSync;\n}"

      assert {:error, [%{kind: :forbidden, message: "eval() is forbidden", line: 2}]} =
               Code.validate(code, language: :javascript)
    end

    test "run refuses what validate finds, before the code runs" do
      assert {:error, %Error{reason: :denied, line: 2, message: "eval() is forbidden (line 2)"}} =
               Code.run("function execute() {\n  return eval('1');\n}")
    end
  end

  describe "bad arguments raise, naming the option" do
    test "each option" do
      for {opts, pattern} <- [
            {[language: :ruby], ~r/:language/},
            {[language: :elixir], ~r/trusted: true/},
            {[allow: [:sockets]], ~r/:allow/},
            {[allow: :fetch], ~r/:allow/},
            {[timeout_ms: 0], ~r/:timeout_ms/},
            {[memory_mb: -1], ~r/:memory_mb/},
            {[language: :python, memory_mb: 32], ~r/:memory_mb/},
            {[input: {:tuple}], ~r/:input/},
            {[allow_net: ["http://x"]], ~r/:allow_net/},
            {[language: :python, allow: [:commands]], ~r/allow: \[:commands\]/},
            {[bogus: 1], ~r/bogus/}
          ] do
        assert_raise ArgumentError, pattern, fn -> Code.run("function execute() {}", opts) end
      end
    end
  end

  describe "the run_code tool" do
    test "offers the languages it is given, TypeScript among them" do
      tool = ExBashkit.Tool.run_code(languages: [:typescript, :bash])
      assert tool.parameters["properties"]["language"]["enum"] == ["typescript", "bash"]

      code = "function execute(n: number): number[] { return [n, n * n]; }"
      assert {:ok, "output: [3,9]\n"} = ExBashkit.Tool.call(tool, %{"code" => code, "input" => 3})

      assert_raise ArgumentError, ~r/:languages must be/, fn ->
        ExBashkit.Tool.run_code(languages: [:ruby])
      end
    end

    test "a failure is text the model can act on" do
      tool = ExBashkit.Tool.run_code(code: [allow: [:crypto]])

      assert {:error, text} =
               ExBashkit.Tool.call(tool, %{
                 "code" => "def execute(input):\n    print('working')\n    return input['x']\n",
                 "language" => "python",
                 "input" => %{}
               })

      assert text =~ "The code failed (exception): KeyError"
      assert text =~ "(line 3)"
      assert text =~ "stdout:\nworking\n"

      assert {:ok, "output: \"900150983cd24fb0d6963f7d28e17f72\"\n"} =
               ExBashkit.Tool.call(tool, %{
                 "code" =>
                   "function execute(s) { return crypto.createHash('md5').update(s).digest('hex'); }",
                 "input" => "abc"
               })
    end
  end

  describe "language: :typescript" do
    test "runs with its types stripped, calls tools, and reports errors on the source's lines" do
      orders =
        ExBashkit.Tool.new(
          name: "orders.list",
          description: "The orders of a customer.",
          parameters: %{
            "type" => "object",
            "properties" => %{"customer" => %{"type" => "string"}}
          },
          function: fn %{"customer" => c} -> {:ok, [%{"customer" => c, "total" => 7}]} end
        )

      program = """
      interface Order { customer: string; total: number }
      async function execute(input: { name: string }): Promise<number> {
        const orders = (await tools.orders.list({ customer: input.name })) as Order[];
        return orders.reduce((sum: number, o: Order) => sum + o.total, 0);
      }
      """

      assert {:ok, %{output: 7}} =
               Code.run(program, language: :typescript, input: %{name: "acme"}, tools: [orders])

      thrown =
        "function execute(): never {\n  const x: number = 1;\n  throw new Error(`bad ${x}`);\n}"

      assert {:error, %ExBashkit.Error{reason: :exception, message: message}} =
               Code.run(thrown, language: :typescript)

      assert message =~ "bad 1 (line 3)"

      assert {:error, %ExBashkit.Error{reason: :syntax, message: refused}} =
               Code.run("enum Color { Red }\nfunction execute() { return 1; }",
                 language: :typescript
               )

      assert refused =~ "an enum needs code generated"

      assert {:error, [%{kind: :syntax, line: 1}]} =
               Code.validate("let x: = 1;", language: :typescript)

      assert Code.validate("const f = (n: number): number => n;", language: :typescript) == :ok
    end
  end
end
