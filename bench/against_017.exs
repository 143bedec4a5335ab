# The calls agents make most, side by side with ex_bashkit 0.1.7 in one
# VM, on an idle machine and on one kept busy by two busy loops at
# `nice 19` (another process using the CPUs, as on any production server);
# with bashkit 0.20 (ours) and 0.13 (0.1.7's) alone in plain Rust beside
# them:
#
#   EX_BASHKIT_017=/path/to/ex_bashkit-0.1.7 MIX_ENV=prod mix run bench/against_017.exs
#
# ROUNDS rounds (default 5), each measuring every figure idle and then
# loaded; a cell is the median of the round medians and their range.
# Without EX_BASHKIT_017 only our side and the Rust baselines run.

Code.require_file("support.exs", __DIR__)
Code.require_file("v017.exs", __DIR__)

defmodule Against017Bench do
  import BenchSupport
  alias ExBashkit.Session

  @pipeline Path.expand("pipeline.sh", __DIR__)

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    old? = V017.load()
    rust = build_rust_baseline()
    rust013 = if old?, do: V017.plain_binary()
    loop = Path.join(System.tmp_dir!(), "ex_bashkit_loop_1000.sh")
    File.write!(loop, "for i in $(seq 1000); do true; done\n")
    log = for i <- 1..200, into: "", do: log_line(i)
    pipeline = File.read!(@pipeline)

    rounds =
      for round <- 1..rounds do
        IO.puts(:stderr, "round #{round} of #{rounds}")

        for load <- [:idle, :loaded], into: %{} do
          busy = if load == :loaded, do: start_busy_loops(2), else: []

          try do
            {load, measure(old?, rust, rust013, loop, log, pipeline)}
          after
            Enum.each(busy, &stop_busy_loop/1)
          end
        end
      end

    rows = [
      {"`exec(s, \"true\")`, p50 (µs)", :exec},
      {"… its p90 (µs)", :exec_p90},
      {"builtin round trip, per call (µs)", :builtin},
      {"… its p90 (µs)", :builtin_p90},
      {"a loop of 1,000 `true` in one call (ms)", :loop},
      {"20-line pipeline on a 200-line file (ms)", :pipeline},
      {"`Session.new()` (µs)", :new}
    ]

    for load <- [:idle, :loaded] do
      IO.puts("\n#### #{if load == :idle, do: "Idle", else: "Two busy loops at `nice 19`"}\n")

      IO.puts(
        "| figure | ex_bashkit | 0.1.7 | ratio (0.1.7 / ours) | bashkit 0.20 in Rust | bashkit 0.13 in Rust |"
      )

      IO.puts("|---|---|---|---|---|---|")

      for {name, key} <- rows do
        ours = cell(rounds, load, {:ours, key})
        old = cell(rounds, load, {:old, key})
        ratio = ratio(rounds, load, key)
        r20 = cell(rounds, load, {:rust, key})
        r13 = cell(rounds, load, {:rust013, key})
        IO.puts("| #{name} | #{ours} | #{old} | #{ratio} | #{r20} | #{r13} |")
      end
    end
  end

  defp measure(old?, rust, rust013, loop, log, pipeline) do
    ours = measure_side(&Session.new/1, &Session.exec/2, log, pipeline)

    old =
      if old?,
        do:
          measure_side(&ExBashkit017.Session.new/1, &ExBashkit017.Session.exec/2, log, pipeline),
        else: %{}

    rust = %{
      exec: rust(rust, ["exec", "5000"]),
      builtin: rust(rust, ["builtin", "1000"]),
      loop: rust(rust, ["pipeline", "50", loop]) / 1000,
      pipeline: rust(rust, ["pipeline", "100", @pipeline]) / 1000
    }

    rust013 =
      if rust013,
        do: %{
          exec: rust(rust013, ["exec", "5000"]),
          loop: rust(rust013, ["script", "50", loop]) / 1000,
          pipeline: rust(rust013, ["script", "100", @pipeline]) / 1000
        },
        else: %{}

    for {side, figures} <- [ours: ours, old: old, rust: rust, rust013: rust013],
        {key, value} <- figures,
        into: %{},
        do: {{side, key}, value}
  end

  # One library's figures; `new` and `exec` are its Session's. A session
  # serves at most 800 calls here: 0.1.7's refuses its 1,001st.
  defp measure_side(new, exec, log, pipeline) do
    true_samples =
      Enum.flat_map(1..6, fn _ ->
        session = new.([])
        for _ <- 1..100, do: {:ok, _} = exec.(session, "true")
        for _ <- 1..800, do: elapsed_ns(fn -> {:ok, _} = exec.(session, "true") end)
      end)
      |> Enum.sort()

    looped = new.([])
    {:ok, _} = exec.(looped, "for i in $(seq 1000); do true; done")

    loop =
      median(
        for _ <- 1..20,
            do:
              elapsed_ns(fn -> {:ok, _} = exec.(looped, "for i in $(seq 1000); do true; done") end)
      )

    piped = new.(files: %{"/data/log.txt" => log})
    {:ok, %{exit_code: 0}} = exec.(piped, pipeline)

    piped_ns =
      median(
        for _ <- 1..50, do: elapsed_ns(fn -> {:ok, %{exit_code: 0}} = exec.(piped, pipeline) end)
      )

    new_ns = median(for _ <- 1..2_000, do: elapsed_ns(fn -> new.([]) end))
    :erlang.garbage_collect()
    # Both libraries call a builtin with one map.
    {builtin, builtin_p90} = builtin_per_call(1_000, new, exec)

    %{
      exec: at(true_samples, 0.5) / 1000,
      exec_p90: at(true_samples, 0.9) / 1000,
      builtin: builtin,
      builtin_p90: builtin_p90,
      loop: loop / 1_000_000,
      pipeline: piped_ns / 1_000_000,
      new: new_ns / 1000
    }
  end

  defp at(sorted, p), do: Enum.at(sorted, min(length(sorted) - 1, trunc(p * length(sorted))))

  # Busy loops at the lowest priority, as another tenant's batch job.
  defp start_busy_loops(count) do
    for _ <- 1..count do
      port =
        Port.open({:spawn_executable, System.find_executable("nice")}, [
          :binary,
          args: ["-n", "19", "sh", "-c", "echo $$; exec sh -c 'while :; do :; done'"]
        ])

      receive do
        {^port, {:data, pid}} -> String.trim(pid)
      end
    end
  end

  defp stop_busy_loop(os_pid), do: System.cmd("kill", ["-9", os_pid])

  defp values(rounds, load, key),
    do: for(round <- rounds, value = round[load][key], value != nil, do: value)

  defp cell(rounds, load, key) do
    case values(rounds, load, key) do
      [] ->
        "—"

      values ->
        sorted = Enum.sort(values)
        "#{fmt(at(sorted, 0.5))} (#{fmt(hd(sorted))}–#{fmt(List.last(sorted))})"
    end
  end

  # How many times 0.1.7's time ours is as fast: above 1, ours is faster.
  defp ratio(rounds, load, key) do
    with [_ | _] = ours <- values(rounds, load, {:ours, key}),
         [_ | _] = old <- values(rounds, load, {:old, key}) do
      "#{Float.round(median(old) / median(ours), 2)}×"
    else
      _ -> "—"
    end
  end

  defp fmt(value) when value >= 100, do: "#{round(value)}"
  defp fmt(value), do: "#{Float.round(value * 1.0, 2)}"
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &Against017Bench.run/0)
