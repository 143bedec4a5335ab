# `isolation: :process` beside the in-VM mode, in one run (issue 28):
#
#   mix run bench/isolation.exs            # the attack 100 + 100 times
#   ATTACKS=20 mix run bench/isolation.exs # a shorter run
#
# Rows:
#   * the sustained attack: ATTACKS runs of a 55-byte jq script that no
#     cap can interrupt, then ATTACKS of a 300 KB `[[ a && … ]]` with
#     timeout_ms: 1000, back to back, each in a fresh session, while a
#     bystander session runs `echo` every 20 ms. In the VM each half runs 3
#     times only: each jq run freezes ~512 MB in this VM for good, and each
#     hog computes on for seconds after its caller is answered;
#   * a script that never yields, timeout_ms: 1000: when its caller is
#     answered, and whether its CPU use stops there;
#   * a fresh isolated session and its first exec("true"); exec("true") on a
#     live one; a builtin's round trip; the same two with the kernel's
#     layers on and off (`ONLY=hardening mix run bench/isolation.exs` runs
#     just those); 1,000 idle isolated sessions, forked by the zygote and
#     started by exec (PSS); snapshot + restore of 10 MB. `ONLY=start`
#     runs the never-yield row, the latencies and the idle sessions.

Code.require_file("support.exs", __DIR__)

defmodule IsolationBench do
  alias ExBashkit.Session

  @jq "jq -n 'reduce range(10000) as $i (null; {a: .})' | wc -c"
  @hog "[[ " <> Enum.join(List.duplicate("a", 60_000), " && ") <> " ]]"

  def run do
    case System.get_env("ONLY") do
      "hardening" ->
        hardening()

      "start" ->
        never_yields(:process)
        latencies()
        idle_sessions(1_000)

      _ ->
        run_all()
    end
  end

  defp run_all do
    attacks = String.to_integer(System.get_env("ATTACKS", "100"))
    IO.puts("## isolation: :process beside the VM (#{attacks} + #{attacks} attacks)\n")
    # The in-VM rows go last: what they leave behind (frozen scripts, hogs
    # computing on) would weigh on every row after them.
    attack(:process, attacks, attacks)
    never_yields(:process)
    latencies()
    hardening()
    idle_sessions(1_000)
    snapshot()
    never_yields(:none)
    attack(:none, 3, 3)
  end

  defp rss_kb do
    [_, kb] = Regex.run(~r/^VmRSS:\s+(\d+) kB/m, File.read!("/proc/self/status"))
    String.to_integer(kb)
  end

  # A session that answers `echo` every 20 ms while `fun` runs: its latencies.
  defp with_bystander(isolation, fun) do
    bystander = Session.new(isolation: isolation)
    parent = self()

    prober =
      spawn_link(fn ->
        probe = fn probe, acc ->
          receive do
            :stop -> send(parent, {:probes, acc})
          after
            20 ->
              started = System.monotonic_time(:microsecond)
              {:ok, _} = Session.exec(bystander, "echo probe")
              probe.(probe, [System.monotonic_time(:microsecond) - started | acc])
          end
        end

        probe.(probe, [])
      end)

    result = fun.()
    send(prober, :stop)

    receive do
      {:probes, probes} -> {result, Enum.sort(probes)}
    end
  end

  defp attack(isolation, jq_runs, hog_runs) do
    :erlang.garbage_collect()
    rss_before = rss_kb()
    frozen_before = ExBashkit.stats().frozen_scripts

    {gone_after, probes} =
      with_bystander(isolation, fn ->
        jq = for _ <- 1..jq_runs, do: strike(isolation, @jq, [])
        hog = for _ <- 1..hog_runs, do: strike(isolation, @hog, limits: [timeout_ms: 1_000])
        jq ++ hog
      end)

    gone = Enum.reject(gone_after, &is_nil/1)
    :erlang.garbage_collect()
    Process.sleep(1_000)

    IO.puts("""
    ### sustained attack, isolation: #{inspect(isolation)} (jq × #{jq_runs}, hog × #{hog_runs})
    | figure | value |
    |---|---|
    | bystander exec p50 / p99 / max | #{pct(probes, 50)} / #{pct(probes, 99)} / #{List.last(probes)} µs (#{length(probes)} probes) |
    | host VM RSS growth after | #{div(rss_kb() - rss_before, 1024)} MB |
    | frozen scripts in the host after | #{ExBashkit.stats().frozen_scripts - frozen_before} |
    | worker gone after its answer (p50 / max) | #{if gone == [], do: "—", else: "#{pct(Enum.sort(gone), 50)} / #{Enum.max(gone)} ms"} |
    """)
  end

  # Runs `script` in a fresh session; for a worker, how long after the
  # answer its process was gone.
  defp strike(isolation, script, opts) do
    session = Session.new([isolation: isolation] ++ opts)
    os_pid = Session.info(session).os_pid
    {:error, _} = Session.exec(session, script)
    answered = System.monotonic_time(:millisecond)
    if os_pid, do: gone_ms(os_pid, answered)
  end

  defp gone_ms(os_pid, since) do
    if File.exists?("/proc/#{os_pid}") do
      Process.sleep(1)
      gone_ms(os_pid, since)
    else
      System.monotonic_time(:millisecond) - since
    end
  end

  defp never_yields(isolation) do
    session = Session.new(isolation: isolation, limits: [timeout_ms: 1_000])
    started = System.monotonic_time(:millisecond)
    {:error, _} = Session.exec(session, @hog)
    answered = System.monotonic_time(:millisecond) - started
    cpu_before = cpu_ms()
    Process.sleep(1_000)
    busy = cpu_ms() - cpu_before

    IO.puts("""
    ### a script that never yields, timeout_ms: 1000, isolation: #{inspect(isolation)}
    | caller answered | this VM's CPU time in the next second |
    |---|---|
    | #{answered} ms | #{busy} ms |
    """)
  end

  # This VM's CPU time, its own threads included (the in-VM hog runs on
  # ours, which :erlang.statistics does not see): utime + stime, in ticks
  # of 10 ms.
  defp cpu_ms do
    [_, rest] = String.split(File.read!("/proc/self/stat"), ") ", parts: 2)
    fields = String.split(rest)
    (String.to_integer(Enum.at(fields, 11)) + String.to_integer(Enum.at(fields, 12))) * 10
  end

  defp latencies do
    IO.puts(
      "### latencies (µs)\n| figure | :process p50 / p99 | in the VM p50 / p99 |\n|---|---|---|"
    )

    Session.new(isolation: :process)
    Process.sleep(200)

    fresh = fn isolation ->
      samples =
        for _ <- 1..200 do
          started = System.monotonic_time(:microsecond)
          session = Session.new(isolation: isolation)
          {:ok, _} = Session.exec(session, "true")
          us = System.monotonic_time(:microsecond) - started
          with %ExBashkit.Worker{} = worker <- session.resource, do: ExBashkit.Worker.stop(worker)
          # Let the spares refill, as they would between conversations.
          Process.sleep(15)
          us
        end

      Enum.sort(samples)
    end

    row("fresh session + first exec(\"true\")", fresh.(:process), fresh.(:none))

    live = fn isolation ->
      session = Session.new(isolation: isolation)

      BenchSupport.sorted_samples_ns(5_000, fn -> {:ok, _} = Session.exec(session, "true") end)
      |> Enum.map(&div(&1, 1_000))
    end

    row("exec(\"true\") on a live session", live.(:process), live.(:none))

    builtin = fn isolation ->
      session = Session.new(isolation: isolation, builtins: %{"ok" => fn _ -> {:ok, ""} end})
      {:ok, _} = Session.exec(session, "for i in $(seq 1000); do ok; done")

      BenchSupport.sorted_samples_ns(50, fn ->
        {:ok, _} = Session.exec(session, "for i in $(seq 100); do ok; done")
      end)
      |> Enum.map(&div(&1, 100_000))
    end

    row("builtin round trip (per call, 100 per script)", builtin.(:process), builtin.(:none))
    IO.puts("")
  end

  # The kernel's layers on and off (`harden_workers`), side by side: rounds
  # alternate the two, and each figure is the median of the rounds' p50s
  # with the spread (min–max) of those p50s.
  defp hardening do
    rounds = 5

    IO.puts(
      "### hardening on and off (µs; median of #{rounds} rounds' p50, min–max)\n" <>
        "| figure | hardened | harden_workers: false | difference |\n|---|---|---|---|"
    )

    measure = fn harden, fun ->
      Application.put_env(:ex_bashkit, :harden_workers, harden)
      # Spares started with the other setting are replaced first.
      Session.new(isolation: :process)
      Process.sleep(300)
      fun.()
    end

    fresh = fn ->
      for _ <- 1..100 do
        started = System.monotonic_time(:microsecond)
        session = Session.new(isolation: :process)
        {:ok, _} = Session.exec(session, "true")
        us = System.monotonic_time(:microsecond) - started
        ExBashkit.Worker.stop(session.resource)
        Process.sleep(15)
        us
      end
      |> Enum.sort()
      |> pct(50)
    end

    live = fn ->
      session = Session.new(isolation: :process)

      BenchSupport.sorted_samples_ns(2_000, fn -> {:ok, _} = Session.exec(session, "true") end)
      |> pct(50)
      |> div(1_000)
    end

    for {name, fun} <- [
          {"fresh session + first exec(\"true\")", fresh},
          {"exec(\"true\") on a live session", live}
        ] do
      pairs = for _ <- 1..rounds, do: {measure.(true, fun), measure.(false, fun)}
      {on, off} = Enum.unzip(pairs)
      diffs = Enum.map(pairs, fn {on, off} -> on - off end)

      IO.puts(
        "| #{name} | #{BenchSupport.spread(on)} | #{BenchSupport.spread(off)} | #{BenchSupport.spread(diffs)} |"
      )
    end

    Application.delete_env(:ex_bashkit, :harden_workers)
    IO.puts("")
  end

  defp row(name, process, vm),
    do:
      IO.puts(
        "| #{name} | #{pct(process, 50)} / #{pct(process, 99)} | #{pct(vm, 50)} / #{pct(vm, 99)} |"
      )

  # Side by side: workers forked by the zygote, and started by exec (the
  # design before it). A forked worker's memory is its own and its
  # launcher's (the Port's process); an exec'd worker is its Port's process.
  defp idle_sessions(count) do
    IO.puts("""
    ### #{count} idle isolated sessions
    | figure | forked by the zygote | `worker_zygote: false` (exec) |
    |---|---|---|\
    """)

    rows =
      for zygote <- [true, false] do
        Application.put_env(:ex_bashkit, :worker_zygote, zygote)
        # Spares started the other way are replaced first.
        ExBashkit.Worker.stop(Session.new(isolation: :process).resource)
        Process.sleep(300)
        started = System.monotonic_time(:millisecond)
        sessions = for _ <- 1..count, do: Session.new(isolation: :process)
        created = System.monotonic_time(:millisecond) - started
        pss = Enum.map(sessions, &session_pss_kb/1)
        for %{resource: worker} <- sessions, do: ExBashkit.Worker.stop(worker)
        Process.sleep(1_000)
        {created, Enum.sort(pss)}
      end

    Application.delete_env(:ex_bashkit, :worker_zygote)
    [{forked_ms, forked}, {exec_ms, exec}] = rows

    IO.puts("""
    | created in | #{forked_ms} ms | #{exec_ms} ms |
    | PSS per session (median / max) | #{pct(forked, 50)} / #{Enum.max(forked)} KiB | #{pct(exec, 50)} / #{Enum.max(exec)} KiB |
    """)
  end

  defp session_pss_kb(%{resource: %{pid: owner}} = session) do
    os_pid = Session.info(session).os_pid
    {:os_pid, port_pid} = Port.info(:sys.get_state(owner).port, :os_pid)
    if port_pid == os_pid, do: pss_kb(os_pid), else: pss_kb(os_pid) + pss_kb(port_pid)
  end

  defp pss_kb(os_pid) do
    [_, kb] = Regex.run(~r/^Pss:\s+(\d+) kB/m, File.read!("/proc/#{os_pid}/smaps_rollup"))
    String.to_integer(kb)
  end

  defp snapshot do
    IO.puts("### snapshot + restore of 10 MB (ms)\n| isolation | p50 | max |\n|---|---|---|")
    data = :crypto.strong_rand_bytes(10_000_000)

    for isolation <- [:process, :none] do
      session = Session.new(isolation: isolation)
      :ok = Session.write_file(session, "/big", data)

      samples =
        for _ <- 1..10 do
          started = System.monotonic_time(:microsecond)
          {:ok, bytes} = Session.snapshot(session)
          {:ok, _} = Session.restore(session, bytes)
          System.monotonic_time(:microsecond) - started
        end
        |> Enum.sort()

      IO.puts(
        "| #{inspect(isolation)} | #{div(pct(samples, 50), 1000)} | #{div(List.last(samples), 1000)} |"
      )
    end
  end

  defp pct([], _), do: 0
  defp pct(sorted, p), do: Enum.at(sorted, min(length(sorted) - 1, div(length(sorted) * p, 100)))
end

BenchSupport.publish(__ENV__.file, ["ONLY", "ATTACKS"], &IsolationBench.run/0)
