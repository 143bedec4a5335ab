# `node` in an isolated session (issue 43), side by side with real Node on
# this machine (Debian's `nodejs`):
#
#   mix run bench/javascript.exs      (ONLY=packages: the `require` rows only)
#
# Startup: p50/p99 of `node -e 'console.log(1)'` in a live session (a fresh
# engine each call), against `node -e` as a process. CPU: sorting 10^6
# numbers, and JSON.parse + JSON.stringify of ~10 MB, each timed inside
# the script (Date.now()), median of 5 runs; so is a command run through
# child_process (the sandbox: a new shell of the session; Node: a new
# /bin/sh process). Then ExBashkit.Code.run/2
# (a fresh worker per run), `require` of real npm packages (installed by
# real npm) against Node's, and what 1,000 idle isolated sessions with
# `javascript: true` cost (the proportional set size of their workers).

Code.require_file("support.exs", __DIR__)

defmodule JavaScriptBench do
  alias ExBashkit.Session

  @sort "const a = Array.from({length: 1e6}, (_, i) => (i * 7919) % 1000003); const t = Date.now(); a.sort((x, y) => x - y); console.log(Date.now() - t)"
  @base64 "const b = Buffer.alloc(1e7, 7); const t = Date.now(); const s = b.toString('base64'); const back = Buffer.from(s, 'base64'); console.log(Date.now() - t, back.length === b.length)"
  @shell "const cp = require('child_process'); cp.execSync('echo warm'); const t = Date.now(); for (let i = 0; i < 100; i++) cp.execSync('echo hi'); console.log(Math.round((Date.now() - t) * 10))"
  @json "const o = Array.from({length: 1e5}, (_, i) => ({id: i, name: 'item ' + i, tags: ['a', 'b', 'c'], n: i / 3})); const s = JSON.stringify(o); const t = Date.now(); const back = JSON.parse(s); const again = JSON.stringify(back); console.log(Date.now() - t, Math.round(s.length / 1e6))"

  def run do
    node = System.find_executable("node") || raise "real Node is needed (apt-get install nodejs)"

    case System.get_env("ONLY") do
      "packages" -> package_loads(node)
      _ -> run_all(node)
    end
  end

  defp run_all(node) do
    limits = [timeout_ms: 120_000, max_javascript_memory_bytes: 1024 * 1024 * 1024]
    session = Session.new(javascript: true, isolation: :process, limits: limits)
    {:ok, _} = Session.exec(session, "node -e 1")

    sandbox =
      BenchSupport.sorted_samples_ns(500, fn ->
        {:ok, _} = Session.exec(session, "node -e 'console.log(1)'")
      end)

    process =
      BenchSupport.sorted_samples_ns(50, fn ->
        {_, 0} = System.cmd(node, ["-e", "console.log(1)"])
      end)

    IO.puts("""
    ## `node` in an isolated session against real Node (#{String.trim(elem(System.cmd(node, ["--version"]), 0))})
    | figure | sandbox (QuickJS-ng in the worker) | real Node |
    |---|---|---|
    | `node -e 'console.log(1)'`, p50 / p99 | #{us(sandbox, 50)} / #{us(sandbox, 99)} µs | #{us(process, 50)} / #{us(process, 99)} µs (a new process) |\
    """)

    for {name, code} <- [
          {"sort 10^6 numbers (ms)", @sort},
          {"JSON.parse + JSON.stringify of 10 MB (ms)", @json},
          {"Buffer to base64 and back, 10 MB (ms)", @base64},
          {"`child_process.execSync('echo hi')`, per call (µs)", @shell}
        ] do
      :ok = Session.write_file(session, "/bench.js", code)
      ours = for _ <- 1..5, do: ms(Session.exec(session, "node /bench.js"))

      theirs =
        for _ <- 1..5, do: code |> then(&System.cmd(node, ["-e", &1])) |> elem(0) |> first_int()

      IO.puts("| #{name} | #{BenchSupport.spread(ours)} | #{BenchSupport.spread(theirs)} |")
    end

    Session.close(session)
    package_loads(node)
    code_run()
    tool_calls()
    idle_sessions(1_000)
  end

  # A tool's round trip from a program to Elixir and back, per call: the
  # time of 1,000 calls in one program less that of the same program with
  # none, over 1,000; the median (min–max) of 10 such runs. Bash's
  # command and Python's function for comparison.
  defp tool_calls do
    echo = BenchSupport.echo_tool()

    js = Session.new(javascript: true, isolation: :process, tools: [echo])
    py = Session.new(python: true, isolation: :process, tools: [echo])
    bash = Session.new(isolation: :process, tools: [echo])

    rows = [
      {"JavaScript `await tools.echo({n: 1})`", js,
       fn n -> "node -e 'for (let i = 0; i < #{n}; i++) tools.echo({n: 1})'" end},
      {"Python (Monty) `tools.echo(n=1)`", py,
       fn n -> "python3 -c 'for i in range(#{n}):\n    tools.echo(n=1)'" end},
      {"bash `echo --n 1` (the command)", bash,
       fn n -> "for i in $(seq #{n}); do echo --n 1 >/dev/null; done" end}
    ]

    IO.puts("""

    ## A tool call from a program to Elixir and back (isolated sessions)
    | caller | µs per call, median (min–max) of 10 runs of 1,000 |
    |---|---|\
    """)

    for {label, session, script} <- rows do
      per_call =
        for _ <- 1..10 do
          {:ok, %{exit_code: 0}} = Session.exec(session, script.(1))

          {with_calls, {:ok, %{exit_code: 0}}} =
            :timer.tc(fn -> Session.exec(session, script.(1_000)) end)

          {without, {:ok, %{exit_code: 0}}} =
            :timer.tc(fn -> Session.exec(session, script.(0)) end)

          div(with_calls - without, 1_000)
        end

      IO.puts("| #{label} | #{BenchSupport.spread(per_call)} |")
    end
  end

  @packages ~w(ajv lodash yaml zod date-fns axios)

  # `require(name)` of real npm packages (installed by real npm into a
  # directory mounted read-only), timed inside one program. The first
  # load of a session's worker parses every file; later runs (each a
  # fresh engine) read the bytecode the worker kept. Median (min–max) of
  # 5 first loads (each in a new session) and of 5 later ones.
  defp package_loads(node) do
    dir = Path.join(System.tmp_dir!(), "ex_bashkit_bench_npm")
    File.mkdir_p!(dir)
    File.write!(Path.join(dir, "package.json"), ~s({"name": "bench", "private": true}))
    npm = ~w(install --no-audit --no-fund --ignore-scripts --legacy-peer-deps) ++ @packages
    {_, 0} = System.cmd("npm", npm, cd: dir, stderr_to_stdout: true)

    File.write!(Path.join(dir, "load.js"), """
    const t = process.hrtime.bigint();
    require(process.argv[2]);
    console.log(Math.round(Number(process.hrtime.bigint() - t) / 1e3));
    """)

    new_session = fn ->
      Session.new(
        javascript: true,
        isolation: :process,
        mounts: [{"/app", dir, :read_only}],
        limits: [max_javascript_memory_bytes: 512 * 1024 * 1024]
      )
    end

    load = fn session, package ->
      {:ok, %{stdout: out, exit_code: 0}} =
        Session.exec(session, "cd /app && node load.js #{package}")

      first_int(out)
    end

    IO.puts("""

    ## `require` of npm packages from a read-only mount (µs, inside the program)
    | package | sandbox, first load in a session | sandbox, later loads | real Node | ratio of medians (first, later) |
    |---|---|---|---|---|\
    """)

    for package <- @packages do
      {first, later} =
        for _ <- 1..5, reduce: {[], []} do
          {first, later} ->
            session = new_session.()
            cold = load.(session, package)
            warm = load.(session, package)
            Session.close(session)
            {[cold | first], [warm | later]}
        end

      theirs =
        for _ <- 1..5,
            do: System.cmd(node, ["load.js", package], cd: dir) |> elem(0) |> first_int()

      node_median = max(BenchSupport.median(theirs), 1)
      ratio = &:erlang.float_to_binary(BenchSupport.median(&1) / node_median, decimals: 2)

      IO.puts(
        "| #{package} | #{BenchSupport.spread(first)} | #{BenchSupport.spread(later)} | " <>
          "#{BenchSupport.spread(theirs)} | #{ratio.(first)}×, #{ratio.(later)}× |"
      )
    end
  end

  @execute "function execute(input) { return input.a + input.b; }"
  @typed "interface In { a: number; b: number }\nfunction execute(input: In): number { return input.a + input.b; }"

  # JavaScript and the same program in TypeScript take turns, run by run.
  defp code_run do
    samples =
      for _ <- 1..300 do
        js =
          BenchSupport.elapsed_ns(fn ->
            {:ok, %{output: 5}} = ExBashkit.Code.run(@execute, input: %{a: 2, b: 3})
          end)

        ts =
          BenchSupport.elapsed_ns(fn ->
            {:ok, %{output: 5}} =
              ExBashkit.Code.run(@typed, language: :typescript, input: %{a: 2, b: 3})
          end)

        {js, ts}
      end

    runs = samples |> Enum.map(&elem(&1, 0)) |> Enum.sort()
    typed = samples |> Enum.map(&elem(&1, 1)) |> Enum.sort()

    IO.puts("""

    ## ExBashkit.Code.run/2, a fresh worker each run
    | figure | p50 / p99 |
    |---|---|
    | `Code.run` of a tiny JS `execute` | #{us(runs, 50)} / #{us(runs, 99)} µs |
    | the same in TypeScript (`language: :typescript`) | #{us(typed, 50)} / #{us(typed, 99)} µs |\
    """)
  end

  # Each worker's proportional set size: pages shared with the zygote
  # and the other workers count for their share only.
  defp idle_sessions(count) do
    sessions = for _ <- 1..count, do: Session.new(javascript: true, isolation: :process)
    {:ok, _} = Session.exec(hd(sessions), "node -e 1")
    pss = for s <- sessions, do: pss_kib(Session.info(s).os_pid)
    Enum.each(sessions, &Session.close/1)
    sorted = Enum.sort(pss)

    IO.puts("""

    ## #{count} idle isolated sessions with `javascript: true`
    | figure | value |
    |---|---|
    | worker PSS per session, median (min–max) | #{BenchSupport.spread(sorted)} KiB |
    | total | #{div(Enum.sum(pss), 1024)} MiB |\
    """)
  end

  defp pss_kib(os_pid) do
    [kib] =
      Regex.run(~r/Pss:\s+(\d+)/, File.read!("/proc/#{os_pid}/smaps_rollup"),
        capture: :all_but_first
      )

    String.to_integer(kib)
  end

  defp us(sorted, percentile),
    do: div(Enum.at(sorted, div(length(sorted) * percentile, 100)), 1000)

  defp ms({:ok, %{stdout: out, exit_code: 0}}), do: first_int(out)
  defp first_int(text), do: text |> String.split() |> hd() |> String.to_integer()
end

BenchSupport.publish(__ENV__.file, ["ONLY"], &JavaScriptBench.run/0)
