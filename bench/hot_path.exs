# The hot path, figure by figure, against bashkit in plain Rust
# (native/ex_bashkit/crates/core/src/bin/bench_exec.rs), side by side in one run:
#
#   mix run bench/hot_path.exs
#
# Each figure is measured in 10 rounds, Rust baseline included; a cell is
# the median of the round medians and, in brackets, their range. The last
# two rows (idle memory, 10,000 sleepers) run once. Prints a Markdown table
# for bench/README.md.

Code.require_file("support.exs", __DIR__)

defmodule HotPathBench do
  import BenchSupport
  alias ExBashkit.Session

  @rounds 10
  @pipeline Path.expand("pipeline.sh", __DIR__)

  def run do
    rust = build_rust_baseline()
    log = for i <- 1..200, into: "", do: log_line(i)
    pipeline = File.read!(@pipeline)

    rounds =
      for round <- 1..@rounds do
        IO.puts(:stderr, "round #{round} of #{@rounds}")
        measure_round(rust, log, pipeline)
      end

    rows = [
      {"`Session.new()`, 2,000 back to back", :new, :rust_new, "≤ 10 µs"},
      {"… the same 2,000 until all are built, per session", :burst, :rust_new, "—"},
      {"`Session.exec(s, \"true\")`", :exec, :rust_exec, "≤ 4.5 µs"},
      {"… its p90", :exec_p90, nil, "≤ 8 µs"},
      {"20-line pipeline (grep/sed/awk/sort, 200-line file)", :pipeline, :rust_pipeline,
       "≤ 3.5 ms"},
      {"builtin round trip, per call", :builtin, :rust_builtin, "≤ 8 µs"},
      {"… its p90", :builtin_p90, nil, "≤ 12 µs"},
      {"`cat` of a `:virtual_fs` file, per read", :vfs, :rust_vfs, "≤ 1.3× Rust"},
      {"`ExBashkit.exec(\"true\")`, 1,000 back to back", :once, :rust_once, "≤ 20 µs"},
      {"… 40 in a row from a full shelf of 64 prepared interpreters", :once_prepared, :rust_exec,
       "≤ 20 µs"},
      {"`Session.exec(s, \"true\")` 3 ms apart (Rust: handed to a thread of its own)",
       :exec_apart, :rust_exec_handed, "—"},
      {"… in Rust on the caller's own thread", :exec_apart, :rust_exec_apart, "—"},
      {"`ExBashkit.exec(\"true\")` 3 ms apart (Rust: handed to a thread of its own)", :once_apart,
       :rust_exec_handed, "—"}
    ]

    IO.puts("")
    IO.puts("| figure | ex_bashkit | bashkit in Rust | ratio | target |")
    IO.puts("|---|---|---|---|---|")

    for {name, ours, theirs, target} <- rows do
      base = if theirs, do: stat(rounds, theirs), else: "—"

      ratio =
        if theirs,
          do: "#{Float.round(middle(rounds, ours) / middle(rounds, theirs), 2)}×",
          else: "—"

      IO.puts("| #{name} | #{stat(rounds, ours)} | #{base} | #{ratio} | #{target} |")
    end

    for row <- sleepers_rows(rust, 10_000), do: IO.puts(row)
  end

  defp measure_round(rust, log, pipeline) do
    live = ExBashkit.Native.live_sessions()
    session = Session.new()
    {exec, exec_p90} = timed(5_000, fn -> {:ok, _} = Session.exec(session, "true") end)
    piped = Session.new(files: %{"/data/log.txt" => log})
    {pipe, _} = timed(100, fn -> {:ok, %{exit_code: 0}} = Session.exec(piped, pipeline) end)
    {new, _} = timed(2_000, fn -> Session.new() end)
    # The sessions just made are garbage: free them now, not inside the
    # next figure's timings.
    :erlang.garbage_collect()
    wait_until_freed(live + 2)
    # The same burst until all of its interpreters are built: what a
    # session costs the machine when the shelf cannot keep up.
    {burst_us, _} = :timer.tc(fn -> burst(2_000) end)
    :erlang.garbage_collect()
    wait_until_freed(live + 2)
    {once, _} = timed(1_000, fn -> {:ok, _} = ExBashkit.exec("true") end)
    once_prepared = once_from_full_shelf(40)
    {builtin, builtin_p90} = BenchSupport.builtin_per_call(1_000)
    # Spaced out, as an agent's tool calls come: each call wakes a thread.
    {exec_apart, _} = timed(150, fn -> {:ok, _} = Session.exec(session, "true") end, 3_000)
    {once_apart, _} = timed(150, fn -> {:ok, _} = ExBashkit.exec("true") end, 3_000)

    %{
      exec: exec,
      exec_p90: exec_p90,
      pipeline: pipe,
      new: new,
      burst: burst_us / 2_000,
      once: once,
      once_prepared: once_prepared,
      exec_apart: exec_apart,
      once_apart: once_apart,
      builtin: builtin,
      builtin_p90: builtin_p90,
      vfs: vfs_per_read(1_000),
      rust_exec: rust(rust, ["exec", "5000"]),
      rust_new: rust(rust, ["new", "2000"]),
      rust_pipeline: rust(rust, ["pipeline", "100", @pipeline]),
      rust_builtin: rust(rust, ["builtin", "1000"]),
      rust_vfs: rust(rust, ["vfs_read", "1000"]),
      rust_once: rust(rust, ["new", "1000"]) + rust(rust, ["exec", "1000"]),
      rust_exec_apart: rust(rust, ["exec_apart", "150"]),
      rust_exec_handed: rust(rust, ["exec_handed", "150"])
    }
  end

  defp vfs_per_read(reads) do
    backend = fn
      %{op: :read} -> {:ok, "value\n"}
      %{op: :stat} -> {:ok, %{type: :file, size: 6}}
      _ -> {:error, :enotsup}
    end

    session = Session.new(virtual_fs: %{"/api" => backend})
    script = "for i in $(seq #{reads}); do cat /api/f >/dev/null; done"
    {:ok, _} = Session.exec(session, script)
    {us, _} = :timer.tc(fn -> {:ok, _} = Session.exec(session, script) end)
    us / reads
  end

  # Idle memory, as resident set and as bytes asked of the allocator, then
  # every one of the sessions sleeping at once; bashkit alone in Rust beside
  # each (the same allocator), measured right after.
  defp sleepers_rows(rust, count) do
    :erlang.garbage_collect()
    before = {rss_kib(), ExBashkit.stats().live_bytes}
    sessions = for _ <- 1..count, do: Session.new()
    wait_until_built(sessions)
    {rss, allocated} = {rss_kib(), ExBashkit.stats().live_bytes}
    rss = (rss - elem(before, 0)) / count
    allocated = (allocated - elem(before, 1)) / 1024 / count

    ms = all_at_once_us(sessions, "sleep 1") / 1000
    rust_rss = rust(rust, ["memory", "#{count}"])
    rust_allocated = rust(rust, ["allocated", "#{count}"])
    rust_ms = rust(rust, ["sleepers", "#{count}"])

    [
      "| idle session, #{count} built: resident (allocated) | " <>
        "#{Float.round(rss, 1)} KiB (#{Float.round(allocated, 1)}) | " <>
        "#{rust_rss} KiB (#{rust_allocated}) | #{Float.round(rss / rust_rss, 2)}× | ≤ 26 KiB |",
      "| #{count} sessions running `sleep 1` at once | #{round(ms)} ms (once) | " <>
        "#{round(rust_ms)} ms | #{Float.round(ms / rust_ms, 2)}× | ≤ 1.2 s |"
    ]
  end

  # One-offs while prepared interpreters last: a shelf of 64, full.
  defp once_from_full_shelf(n) do
    Application.put_env(:ex_bashkit, :prepared_sessions, 64)
    _ = Session.new()
    wait_until_shelved(64)
    {p50, _} = timed(n, fn -> {:ok, _} = ExBashkit.exec("true") end)
    Application.delete_env(:ex_bashkit, :prepared_sessions)
    _ = Session.new()
    p50
  end

  defp wait_until_shelved(count) do
    if ExBashkit.stats().prepared < count do
      Process.sleep(1)
      wait_until_shelved(count)
    end
  end

  defp burst(count) do
    sessions = for _ <- 1..count, do: Session.new()
    wait_until_built(sessions)
  end

  defp timed(n, fun, gap_us \\ 0) do
    sorted = sorted_samples_ns(n, fun, gap(gap_us))
    {percentile(sorted, 0.5) / 1000, percentile(sorted, 0.9) / 1000}
  end

  defp percentile(sorted, p),
    do: Enum.at(sorted, min(floor(length(sorted) * p), length(sorted) - 1))

  defp middle(rounds, key),
    do: rounds |> Enum.map(& &1[key]) |> Enum.sort() |> Enum.at(div(@rounds, 2))

  defp stat(rounds, key) do
    values = Enum.map(rounds, & &1[key])
    "#{fmt(middle(rounds, key))} (#{fmt(Enum.min(values))}–#{fmt(Enum.max(values))})"
  end

  defp fmt(us) when us >= 1000, do: "#{Float.round(us / 1000, 2)} ms"
  defp fmt(us), do: "#{Float.round(us / 1, 1)} µs"
end

BenchSupport.publish(__ENV__.file, &HotPathBench.run/0)
