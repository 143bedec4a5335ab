defmodule ExBashkit.Code.AgentProgramsTest do
  # Programs of the kind agents write, end to end, each both as `node` in a
  # session and as a `Code.run/2`: read a CSV and write JSON, hash a binary
  # file, retry a failing fetch with backoff, run ls and grep through
  # child_process, and a TypeScript program calling three tools.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Code, Result, Session, Tool}

  defp js(opts), do: Session.new([javascript: true, isolation: :process] ++ opts)

  defp node(session, script) do
    {:ok, result} = Session.exec(session, script)
    result
  end

  @csv "name,age,city\nann,31,Oslo\nbob,27,Lima\n\"eve, jr\",45,Rome\n"

  # A CSV reader an agent would write: quoted fields, numbers as numbers.
  @parse_csv ~S"""
  function parseCsv(text) {
    const rows = text.trim().split("\n").map((line) => {
      const cells = [];
      let cell = "", quoted = false;
      for (const c of line) {
        if (c === '"') quoted = !quoted;
        else if (c === "," && !quoted) { cells.push(cell); cell = ""; }
        else cell += c;
      }
      cells.push(cell);
      return cells;
    });
    const [head, ...body] = rows;
    return body.map((r) => Object.fromEntries(r.map((v, i) => [head[i], v !== "" && !isNaN(v) ? Number(v) : v])));
  }
  """

  @people [
    %{"name" => "ann", "age" => 31, "city" => "Oslo"},
    %{"name" => "bob", "age" => 27, "city" => "Lima"},
    %{"name" => "eve, jr", "age" => 45, "city" => "Rome"}
  ]

  test "read a CSV and write JSON" do
    session = js(files: %{"/work/people.csv" => @csv})

    program =
      @parse_csv <>
        ~S"""
        const fs = require("fs");
        const people = parseCsv(fs.readFileSync("/work/people.csv", "utf8"));
        fs.writeFileSync("/work/people.json", JSON.stringify(people, null, 2));
        console.log(`wrote ${people.length} rows`);
        """

    :ok = Session.write_file(session, "/work/convert.js", program)

    assert %Result{stdout: "wrote 3 rows\n", exit_code: 0} =
             node(session, "node /work/convert.js")

    assert {:ok, json} = Session.read_file(session, "/work/people.json")
    assert ExBashkit.JSON.decode(json) == {:ok, @people}

    assert {:ok, %{output: @people}} =
             Code.run(
               @parse_csv <>
                 "function execute() { return parseCsv(fs.readFileSync('/work/people.csv')); }",
               allow: [:read_files],
               files: %{"/work/people.csv" => @csv}
             )
  end

  test "hash a binary file" do
    bytes = :crypto.strong_rand_bytes(100_000) <> <<0, 255, 128, 10, 13>>
    expected = Base.encode16(:crypto.hash(:sha256, bytes), case: :lower)
    session = js(files: %{"/data/blob.bin" => bytes})

    program = ~S"""
    const crypto = require("crypto"), fs = require("fs");
    const data = fs.readFileSync("/data/blob.bin");
    console.log(data.length, crypto.createHash("sha256").update(data).digest("hex"));
    """

    :ok = Session.write_file(session, "/hash.js", program)
    assert %Result{stdout: stdout} = node(session, "node /hash.js")
    assert stdout == "#{byte_size(bytes)} #{expected}\n"

    code = """
    function execute() {
      const data = fs.readFileSync("/data/blob.bin", null);
      return crypto.createHash("sha256").update(data).digest("hex");
    }
    """

    assert {:ok, %{output: ^expected}} =
             Code.run(code, allow: [:read_files, :crypto], files: %{"/data/blob.bin" => bytes})
  end

  describe "retry a failing fetch with backoff" do
    setup do
      {_server, port} = ExBashkit.Test.HttpServer.start()
      %{base: "http://127.0.0.1:#{port}"}
    end

    @retry ~S"""
    async function fetchWithRetry(url, attempts) {
      for (let attempt = 1; ; attempt++) {
        const response = await fetch(url);
        if (response.ok) return { attempt, body: await response.text() };
        if (attempt === attempts) throw new Error(`gave up after ${attempt}: ${response.status}`);
        await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
      }
    }
    """

    test "in node and in Code.run", %{base: base} do
      session = js(allow_net: [base], block_private_ips: false)

      program =
        @retry <>
          """
          const started = Date.now();
          fetchWithRetry("#{base}/flaky/2/node", 5).then(({ attempt, body }) =>
            console.log(attempt, body, Date.now() - started >= 120));
          """

      :ok = Session.write_file(session, "/retry.js", program)
      assert %Result{stdout: "3 hit /flaky/2/node true\n"} = node(session, "node /retry.js")

      code =
        @retry <>
          """
          async function execute({ url }) { return await fetchWithRetry(url, 5); }
          """

      assert {:ok, %{output: %{"attempt" => 3, "body" => "hit /flaky/2/run"}}} =
               Code.run(code,
                 input: %{url: "#{base}/flaky/2/run"},
                 allow: [:fetch],
                 allow_net: [base],
                 block_private_ips: false
               )

      assert {:error, %ExBashkit.Error{reason: :exception, message: message}} =
               Code.run(code,
                 input: %{url: "#{base}/flaky/9/never"},
                 allow: [:fetch],
                 allow_net: [base],
                 block_private_ips: false
               )

      assert message =~ "gave up after 5: 503"
    end
  end

  test "run ls and grep through child_process" do
    files = %{
      "/project/src/app.js" => "// TODO: cache\nconsole.log(1)\n",
      "/project/src/util.js" => "export const x = 1; // TODO: name\n",
      "/project/README.md" => "no todos here\n"
    }

    program = ~S"""
    const { execSync } = require("child_process");
    const files = execSync("ls src", { cwd: "/project", encoding: "utf8" }).trim().split("\n");
    const todos = execSync("grep -rn TODO src", { cwd: "/project", encoding: "utf8" }).trim().split("\n");
    console.log(JSON.stringify({ files, todos }));
    """

    expected = %{
      "files" => ["app.js", "util.js"],
      "todos" => [
        "src/app.js:1:// TODO: cache",
        "src/util.js:1:export const x = 1; // TODO: name"
      ]
    }

    session = js(files: files)
    :ok = Session.write_file(session, "/todos.js", program)
    assert %Result{stdout: stdout} = node(session, "node /todos.js")
    assert ExBashkit.JSON.decode(stdout) == {:ok, expected}

    code = """
    function execute() {
      const run = (command) => child_process.execSync(command, { cwd: "/project", encoding: "utf8" }).trim().split("\\n");
      return { files: run("ls src"), todos: run("grep -rn TODO src") };
    }
    """

    assert {:ok, %{output: ^expected}} = Code.run(code, allow: [:commands], files: files)
  end

  test "a TypeScript program calling three tools" do
    test = self()

    tools = [
      Tool.new(
        name: "weather.today",
        description: "Today's weather in a city.",
        parameters: %{
          "type" => "object",
          "properties" => %{"city" => %{"type" => "string"}},
          "required" => ["city"]
        },
        function: fn %{"city" => city} -> {:ok, %{"city" => city, "celsius" => 21}} end
      ),
      Tool.new(
        name: "calendar.free",
        description: "Whether a day is free.",
        parameters: %{
          "type" => "object",
          "properties" => %{"day" => %{"type" => "string"}},
          "required" => ["day"]
        },
        function: fn %{"day" => day} -> {:ok, day != "monday"} end
      ),
      Tool.new(
        name: "notify",
        description: "Sends a message.",
        parameters: %{
          "type" => "object",
          "properties" => %{"text" => %{"type" => "string"}},
          "required" => ["text"]
        },
        function: fn %{"text" => text} ->
          send(test, {:notified, text})
          {:ok, "sent"}
        end
      )
    ]

    program = ~S"""
    interface Weather { city: string; celsius: number }
    async function plan(days: string[]): Promise<string> {
      const weather: Weather = await tools.weather.today({ city: "Oslo" });
      const free: string[] = [];
      for (const day of days) if (await tools.calendar.free({ day })) free.push(day);
      const text = `${weather.celsius}°C in ${weather.city}; free: ${free.join(", ")}`;
      await tools.notify({ text });
      return text;
    }
    """

    expected = "21°C in Oslo; free: tuesday, friday"
    session = js(tools: tools)
    declarations = Tool.typescript(tools)

    :ok =
      Session.write_file(
        session,
        "/plan.mts",
        declarations <>
          program <> ~s|console.log(await plan(["monday", "tuesday", "friday"]));\n|
      )

    assert %Result{stdout: stdout, exit_code: 0} = node(session, "node /plan.mts")
    assert stdout == expected <> "\n"
    assert_received {:notified, ^expected}

    code =
      program <>
        "async function execute({ days }: { days: string[] }): Promise<string> { return plan(days); }"

    assert {:ok, %{output: ^expected}} =
             Code.run(code,
               language: :typescript,
               tools: tools,
               input: %{days: ["monday", "tuesday", "friday"]}
             )

    assert_received {:notified, ^expected}
  end
end
