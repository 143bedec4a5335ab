# Benchmarks for ExBashkit, side by side with their baselines in one run.
#
#   mix run bench/run.exs
#
# Prints a Markdown table (copied into bench/README.md).
# Rust baselines come from native/ex_bashkit/crates/core/src/bin/bench_exec.rs, built here.

Code.require_file("support.exs", __DIR__)

defmodule Bench do
  import BenchSupport
  alias ExBashkit.Session

  def run do
    rust = build_rust_baseline()

    rows =
      exec_rows(rust) ++
        callback_rows(rust) ++
        snapshot_rows(rust) ++
        [concurrency_row()] ++ memory_rows(rust) ++ [neighbours_row()]

    IO.puts("")
    IO.puts("| benchmark | ex_bashkit | baseline | ratio | target |")
    IO.puts("|---|---|---|---|---|")
    Enum.each(rows, &IO.puts/1)
  end

  defp exec_rows(rust) do
    session = Session.new()
    session_us = median_us(20_000, fn -> {:ok, _} = Session.exec(session, "true") end)
    rust_us = rust(rust, ["exec", "20000"])
    once_us = median_us(5_000, fn -> {:ok, _} = ExBashkit.exec("true") end)
    bash_us = median_us(300, fn -> {_, 0} = System.cmd("bash", ["-c", "true"]) end)

    [
      row(
        "`Session.exec(s, \"true\")` median",
        us(session_us),
        "#{us(rust_us)} (bashkit in Rust)",
        ratio(session_us, rust_us),
        "≤ 1.3×"
      ),
      row(
        "`Session.exec(s, \"true\")` vs `System.cmd(\"bash\", [\"-c\", \"true\"])`",
        us(session_us),
        us(bash_us),
        "#{Float.round(bash_us / session_us, 1)}× faster",
        "≥ 50× faster"
      ),
      row(
        "`ExBashkit.exec(\"true\")` (fresh interpreter) median",
        us(once_us),
        us(bash_us),
        "#{Float.round(bash_us / once_us, 1)}× faster",
        "—"
      )
    ]
  end

  # Script → Elixir → script: 1,000 calls in one `for` loop, per call, next
  # to the same loop calling a Rust builtin / reading a Rust in-memory mount.
  defp callback_rows(rust) do
    calls = 1_000
    session = Session.new(builtins: %{"kv_get" => fn _ -> {:ok, "value\n"} end})
    builtin_us = loop_median_us(session, "kv_get a", calls)
    rust_builtin_us = rust(rust, ["builtin", "#{calls}"])

    counter = :counters.new(1, [])

    backend = fn
      %{op: :read} ->
        :counters.add(counter, 1, 1)
        {:ok, "value\n"}

      %{op: :stat} ->
        :counters.add(counter, 1, 1)
        {:ok, %{type: :file, size: 6}}

      _ ->
        {:error, :enotsup}
    end

    vfs = Session.new(virtual_fs: %{"/api" => backend})
    vfs_us = loop_median_us(vfs, "cat /api/f", calls)
    backend_calls = :counters.get(counter, 1) / (calls * 8)
    rust_vfs_us = rust(rust, ["vfs_read", "#{calls}"])

    [
      row(
        "custom builtin round trip (script → Elixir fun → script), per call",
        us(builtin_us),
        "#{us(rust_builtin_us)} (the same builtin in Rust)",
        ratio(builtin_us, rust_builtin_us),
        "≤ 20 µs"
      ),
      row(
        "`cat` of a `:virtual_fs` file (#{backend_calls} backend calls each), per read",
        us(vfs_us),
        "#{us(rust_vfs_us)} (Rust in-memory mount)",
        ratio(vfs_us, rust_vfs_us),
        "—"
      )
    ]
  end

  # 1,000 files of 10,000 distinct bytes each; snapshot + restore into
  # another session, median of 11, next to the same in Rust.
  defp snapshot_rows(rust) do
    files = 1_000
    source = Session.new()

    for i <- 1..files,
        do:
          :ok =
            Session.write_file(source, "/data/file_#{i}.bin", :crypto.strong_rand_bytes(10_000))

    target = Session.new()

    samples =
      for _ <- 1..11 do
        started = System.monotonic_time(:microsecond)
        {:ok, bytes} = Session.snapshot(source)
        {:ok, _} = Session.restore(target, bytes)
        {System.monotonic_time(:microsecond) - started, byte_size(bytes)}
      end

    {micros, size} = samples |> Enum.sort() |> Enum.at(5)
    [rust_ms, rust_size] = rust_words(rust, ["snapshot", "#{files}"])

    python = Session.new(python: true)

    python_us =
      median_us(2_000, fn ->
        {:ok, %{stdout: "1\n"}} = Session.exec(python, ~S|python3 -c "print(1)"|)
      end)

    rust_python_us = rust(rust, ["python", "2000"])

    [
      row(
        "snapshot + restore, 10 MB in 1,000 files (median of 11)",
        ms(micros),
        "#{rust_ms} ms (the same in Rust)",
        ratio(micros / 1000, String.to_float(rust_ms)),
        "≤ 1.2×"
      ),
      row(
        "… its snapshot size",
        "#{mb(size)} MB",
        "#{mb(String.to_integer(rust_size))} MB",
        "—",
        "—"
      ),
      row(
        "`python3 -c \"print(1)\"` in a session, median",
        us(python_us),
        "#{us(rust_python_us)} (bashkit in Rust)",
        ratio(python_us, rust_python_us),
        "—"
      )
    ]
  end

  defp rust_words(binary, args) do
    {out, 0} = System.cmd(binary, args)
    String.split(out)
  end

  defp mb(bytes), do: Float.round(bytes / 1_000_000, 2)

  # Median over 7 runs of a 1,000-iteration loop, per iteration (one warm-up).
  defp loop_median_us(session, command, n) do
    script = "for i in $(seq #{n}); do #{command} >/dev/null; done"

    samples =
      for _ <- 1..8 do
        {us, {:ok, %{exit_code: 0}}} = :timer.tc(fn -> Session.exec(session, script) end)
        us / n
      end

    samples |> tl() |> Enum.sort() |> Enum.at(3)
  end

  # p99 of `exec("echo")` on fresh sessions, quiet and then while four
  # scripts that never yield (`[[ a && … ]]`, seconds each) hog threads.
  defp neighbours_row do
    quiet = probe_latencies(300)
    hog = "[[ " <> Enum.join(List.duplicate("a", 30_000), " && ") <> " ]]"

    hogs =
      for _ <- 1..4 do
        Task.async(fn -> Session.exec(Session.new(limits: [timeout_ms: 120_000]), hog) end)
      end

    wait_for(fn -> ExBashkit.stats().hogged >= 4 end)
    loud = probe_latencies(300)
    Enum.each(hogs, &Task.shutdown(&1, :brutal_kill))
    # The hogs end on their own; nothing after this row may share the cores.
    wait_for(fn -> ExBashkit.stats().hogged == 0 end)

    row(
      "`exec(\"echo\")` on a fresh session while 4 CPU hogs run, p99 (p50)",
      "#{ms_2(p(loud, 0.99))} (#{ms_2(p(loud, 0.5))})",
      "#{ms_2(p(quiet, 0.99))} (#{ms_2(p(quiet, 0.5))}) with no hogs",
      ratio(p(loud, 0.99), p(quiet, 0.99)),
      "≤ 2× and ≤ 50 ms"
    )
  end

  defp probe_latencies(count) do
    for _ <- 1..count do
      session = Session.new()
      {micros, {:ok, _}} = :timer.tc(fn -> Session.exec(session, "echo probe") end)
      micros
    end
    |> Enum.sort()
  end

  defp p(sorted, q), do: Enum.at(sorted, min(round(q * length(sorted)), length(sorted) - 1))
  defp ms_2(us), do: "#{Float.round(us / 1000, 2)} ms"

  defp wait_for(check) do
    unless check.() do
      Process.sleep(20)
      wait_for(check)
    end
  end

  defp concurrency_row do
    sessions = for _ <- 1..500, do: Session.new()

    wall = all_at_once_us(sessions, "sleep 1")

    row(
      "500 sessions running `sleep 1` at once",
      ms(wall),
      "1000 ms (one sleep)",
      ratio(wall, 1_000_000),
      "all done ≤ 2 s"
    )
  end

  defp memory_rows(rust) do
    count = 10_000
    parent = self()
    :erlang.garbage_collect()
    baseline = ExBashkit.Native.live_sessions()

    # Sessions are made and held in a separate process so their handles can
    # be dropped (by its exit) and the reclamation checked afterwards.
    holder =
      spawn(fn ->
        :erlang.garbage_collect()
        before = rss_kib()
        sessions = for _ <- 1..count, do: Session.new()
        wait_until_built(sessions)
        send(parent, {:per_session, (rss_kib() - before) / count, length(sessions)})
        receive do: (:drop -> :ok)
      end)

    per_session =
      receive do
        {:per_session, kib, ^count} -> kib
      end

    send(holder, :drop)
    {freed_ms, _} = :timer.tc(fn -> wait_until_freed(baseline) end)
    rust_kib = rust(rust, ["memory", "#{count}"])

    [
      row(
        "idle session memory (RSS / #{count} sessions)",
        "#{Float.round(per_session, 1)} KiB",
        "#{rust_kib} KiB (bare `Bash` in Rust)",
        ratio(per_session, rust_kib),
        "≤ 26 KiB"
      ),
      row(
        "#{count} dropped sessions freed by GC",
        "#{max(ExBashkit.Native.live_sessions() - baseline, 0)} left",
        "—",
        "in #{ms(freed_ms)}",
        "all"
      )
    ]
  end

  defp median_us(n, fun), do: Enum.at(sorted_samples_ns(n, fun), div(n, 2)) / 1000

  defp row(name, ours, base, ratio, target),
    do: "| #{name} | #{ours} | #{base} | #{ratio} | #{target} |"

  defp us(x), do: "#{Float.round(x / 1, 2)} µs"
  defp ms(us), do: "#{round(us / 1000)} ms"
  defp ratio(a, b), do: "#{Float.round(a / b, 2)}×"
end

BenchSupport.publish(__ENV__.file, &Bench.run/0)
