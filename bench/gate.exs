# The hot-path figures bench/compare.sh compares between two commits. It
# uses only the public API every commit since the Session contract has,
# so the same file measures both sides:
#
#   MIX_ENV=prod mix run bench/gate.exs     (one round; prints "figure<TAB>µs")
#
# ONLY=exec,builtin measures those figures alone; LIST=1 prints the names.
# bench/compare.sh runs each figure in a VM of its own: what one leaves
# behind (the spare workers refilled after exec_worker, the prepared
# interpreters after new) must not weigh on the next.
#
# Figures (each a p50 of its samples, in µs):
#   new              Session.new(), 2,000 calls back to back (more than prepared
#                    interpreters can be refilled: mostly builds)
#   new_warm         Session.new(), 2,000 calls 300 µs apart (the prepared
#                    interpreters refilled between calls, where a commit has them)
#   new_cold         Session.new(env: ...), 2,000 calls: options of its own, so
#                    every call builds its interpreter (bashkit's build and ours)
#   once             ExBashkit.exec("true"), 1,000 one-offs back to back
#   once_apart       the same, 300 one-offs 3 ms apart (tool calls spaced out: the
#                    prepared interpreters refilled between them, where a commit does)
#   exec             Session.exec(s, "true") in the VM, 5,000 calls
#   exec_worker      the same in an isolated session (isolation: :process), 2,000 calls
#   builtin          a builtin's round trip, per call: the gaps between 1,000 calls of
#                    one script's loop
#   pipeline         the 20-line pipeline of bench/pipeline.sh over a 200-line file, 100 runs
#   snapshot_restore snapshot + restore of a session holding 10 MB in 1,000 files, 10 runs

Code.require_file("support.exs", __DIR__)

alias ExBashkit.Session

defmodule Gate do
  def run do
    pipeline = File.read!(Path.expand("pipeline.sh", __DIR__))
    log = for i <- 1..200, into: "", do: "2026-11-26 12:00:#{rem(i, 60)} INFO request #{i} ok\n"

    figures = [
      new: fn -> p50(2_000, fn -> Session.new() end) end,
      new_warm: fn -> p50(2_000, fn -> Session.new() end, 300) end,
      new_cold: fn -> p50(2_000, fn -> Session.new(env: %{"AGENT" => "1"}) end) end,
      once: fn -> p50(1_000, fn -> {:ok, _} = ExBashkit.exec("true") end) end,
      once_apart: fn -> p50(300, fn -> {:ok, _} = ExBashkit.exec("true") end, 3_000) end,
      exec: fn ->
        session = Session.new()
        p50(5_000, fn -> {:ok, _} = Session.exec(session, "true") end)
      end,
      exec_worker: fn ->
        session = Session.new(isolation: :process)
        p50(2_000, fn -> {:ok, _} = Session.exec(session, "true") end)
      end,
      builtin: fn -> builtin_per_call(1_000) end,
      pipeline: fn ->
        session = Session.new(files: %{"/data/log.txt" => log})
        p50(100, fn -> {:ok, %{exit_code: 0}} = Session.exec(session, pipeline) end)
      end,
      snapshot_restore: fn -> snapshot_restore(10) end,
      # A fresh worker per run.
      code_run: fn ->
        execute = "function execute(input) { return input.a + input.b; }"

        p50(100, fn -> {:ok, %{output: 5}} = ExBashkit.Code.run(execute, input: %{a: 2, b: 3}) end)
      end,
      # A `node` program's tool call to Elixir and back, per call: 200
      # calls in one program less the same program with none.
      js_tool_call: fn -> js_tool_call(200) end
    ]

    only = System.get_env("ONLY")

    if System.get_env("LIST") do
      figures |> Keyword.keys() |> Enum.join(",") |> IO.puts()
      System.halt(0)
    end

    for {name, measure} <- figures,
        only in [nil, ""] or to_string(name) in String.split(only, ",") do
      # A commit without the figure's feature (isolation before it existed)
      # prints nothing for it.
      case (try do
              {:ok, measure.()}
            rescue
              error in [ArgumentError] -> {:skip, Exception.message(error)}
            end) do
        {:ok, value} -> IO.puts("#{name}\t#{:erlang.float_to_binary(value / 1, decimals: 2)}")
        {:skip, why} -> IO.puts(:stderr, "#{name}: not measured (#{why})")
      end

      :erlang.garbage_collect()
    end
  end

  # The median of `n` timed calls, after `n / 10` warm-up calls, in µs;
  # with `gap_us`, the calls are that far apart (the scheduler kept busy
  # meanwhile, as a sleep would let the caches go cold).
  defp p50(n, fun, gap_us \\ 0) do
    samples = BenchSupport.sorted_samples_ns(n, fun, BenchSupport.gap(gap_us))
    Enum.at(samples, div(n, 2)) / 1000
  end

  defp builtin_per_call(calls), do: calls |> BenchSupport.builtin_per_call() |> elem(0)

  defp js_tool_call(calls) do
    echo = BenchSupport.echo_tool()

    session = Session.new(javascript: true, isolation: :process, tools: [echo])
    script = fn n -> "node -e 'for (let i = 0; i < #{n}; i++) tools.echo({n: 1})'" end
    {:ok, %{exit_code: 0}} = Session.exec(session, script.(1))

    samples =
      for _ <- 1..9 do
        {with_calls, {:ok, %{exit_code: 0}}} =
          :timer.tc(fn -> Session.exec(session, script.(calls)) end)

        {without, {:ok, %{exit_code: 0}}} = :timer.tc(fn -> Session.exec(session, script.(0)) end)
        (with_calls - without) / calls
      end

    Enum.at(Enum.sort(samples), 4)
  end

  defp snapshot_restore(runs) do
    chunk = :binary.copy("x", 10_000)
    files = for i <- 1..1_000, into: %{}, do: {"/data/f#{i}.txt", chunk}
    session = Session.new(files: files)

    samples =
      for _ <- 1..runs do
        started = System.monotonic_time(:nanosecond)
        {:ok, snapshot} = Session.snapshot(session)
        {:ok, _} = Session.restore(Session.new(), snapshot)
        System.monotonic_time(:nanosecond) - started
      end

    Enum.at(Enum.sort(samples), div(runs, 2)) / 1000
  end
end

Gate.run()
