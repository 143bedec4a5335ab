# The hostile scripts of issue 11, at full size and default limits (unless
# the row says otherwise), one after another in this VM:
#
#   mix run bench/containment.exs
#
# Per row: how long its caller waited, the slowest `exec("echo")` on a fresh
# probe session while it ran (one every 20 ms), the peak growth of this
# VM's resident set, and whether the session answers afterwards. Takes a
# few minutes: the `[[ … ]]` hogs run on after their callers are answered.

defmodule ContainmentBench do
  alias ExBashkit.Session

  def run do
    IO.puts(
      "| script | caller answered | answer | slowest probe (p99) | peak RSS growth | session after |"
    )

    IO.puts("|---|---|---|---|---|---|")

    row("jq -n 'reduce range(30000) as $i (null; [.])' > /dev/null", [], jq(30_000))
    row("`echo {{{{…` (9.9 MB)", [], "echo " <> String.duplicate("{", 9_900_000))
    row("`echo {{{{…` (900 KB)", [], "echo " <> String.duplicate("{", 900_000))
    row("array literal (9.9 MB)", [], "a=(" <> String.duplicate("1 ", 4_950_000) <> ")")
    row("100,000 nested extglob `+(…)`", [], extglob(100_000))
    row("100,000 nested `$((`", [], arith(100_000))
    row("`sleep 100000 &`, timeout_ms: 1000", [timeout_ms: 1_000], "sleep 100000 &")
    row(~S|`set -u;$P"${}"`|, [], ~S|set -u;$P"${}"|)

    row(
      "300 background jobs of 590 KB output each",
      [max_background_jobs: 1_000],
      "for i in $(seq 300); do seq 100000 & done; wait"
    )

    row("30,000 × `time ` (150 KB)", [], String.duplicate("time ", 30_000) <> "true")
    row("`eval` nested 10,000 deep (50 KB)", [], String.duplicate("eval ", 10_000) <> "echo hi")

    row(
      ~S|`e='eval "$e"'; eval "$e"`, timeout_ms: 10000|,
      [timeout_ms: 10_000],
      ~S|e='eval "$e"'; eval "$e"|
    )

    row("`[[ a && … ]]` (500 KB), timeout_ms: 5000", [timeout_ms: 5_000], conjunction(100_000))
    four_hogs()
  end

  defp jq(n), do: "jq -n 'reduce range(#{n}) as $i (null; [.])' > /dev/null"

  defp extglob(n),
    do:
      "shopt -s extglob; [[ a == " <>
        String.duplicate("+(", n) <> "a" <> String.duplicate(")", n) <> " ]]"

  defp arith(n), do: "echo " <> String.duplicate("$((", n) <> "1" <> String.duplicate("))", n)
  defp conjunction(n), do: "[[ " <> Enum.join(List.duplicate("a", n), " && ") <> " ]]"

  defp row(name, limits, script) do
    session = Session.new(limits: limits)

    {{micros, outcome}, probes, growth_kb} =
      under_watch(fn -> :timer.tc(fn -> Session.exec(session, script) end) end)

    after_ =
      case Session.exec(session, "echo ok") do
        {:ok, %{stdout: "ok\n"}} -> "works"
        {:error, message} -> "refuses: " <> String.slice(message, 0, 60)
        other -> inspect(other, limit: 3)
      end

    IO.puts(
      "| #{name} | #{ms(micros)} | #{summary(outcome)} | #{probe_summary(probes)} | " <>
        "#{div(growth_kb, 1024)} MB | #{after_} |"
    )
  end

  # 4 hogs with timeout_ms: 1000, then 200 new sessions run `echo`.
  defp four_hogs do
    hog = conjunction(100_000)

    {callers, probes, growth_kb} =
      under_watch(fn ->
        hogs =
          for _ <- 1..4 do
            Task.async(fn ->
              :timer.tc(fn -> Session.exec(Session.new(limits: [timeout_ms: 1_000]), hog) end)
            end)
          end

        answered = Enum.map(hogs, &Task.await(&1, 60_000))

        echoes =
          for _ <- 1..200 do
            {us, {:ok, _}} = :timer.tc(fn -> Session.exec(Session.new(), "echo hi") end)
            us
          end
          |> Enum.sort()

        {answered, echoes}
      end)

    {answered, echoes} = callers
    slowest = answered |> Enum.map(&elem(&1, 0)) |> Enum.max()

    IO.puts(
      "| 4 × `[[ a && … ]]` (500 KB), timeout_ms: 1000; then 200 new sessions `echo` | " <>
        "slowest #{ms(slowest)} | 200 echoes: median #{ms(Enum.at(echoes, 100))}, max #{ms(List.last(echoes))} | " <>
        "#{probe_summary(probes)} | #{div(growth_kb, 1024)} MB | — |"
    )
  end

  # Runs `fun` while a probe process measures fresh-session `echo` latency
  # and a sampler tracks peak RSS.
  defp under_watch(fun) do
    before = rss_kb()
    sampler = Task.async(fn -> sample(before) end)
    prober = Task.async(fn -> probe([]) end)
    result = fun.()
    send(prober.pid, :stop)
    send(sampler.pid, :stop)
    probes = Task.await(prober, 120_000)
    {result, probes, Task.await(sampler) - before}
  end

  defp probe(acc) do
    receive do
      :stop -> Enum.sort(acc)
    after
      20 ->
        {us, {:ok, _}} = :timer.tc(fn -> Session.exec(Session.new(), "echo probe") end)
        probe([us | acc])
    end
  end

  defp sample(peak) do
    receive do
      :stop -> peak
    after
      5 -> sample(max(peak, rss_kb()))
    end
  end

  defp rss_kb do
    [kb] = Regex.run(~r/VmRSS:\s+(\d+)/, File.read!("/proc/self/status"), capture: :all_but_first)
    String.to_integer(kb)
  end

  defp probe_summary([]), do: "—"

  defp probe_summary(sorted) do
    p99 = Enum.at(sorted, min(round(0.99 * length(sorted)), length(sorted) - 1))
    "#{ms_2(List.last(sorted))} (#{ms_2(p99)}, n=#{length(sorted)})"
  end

  defp summary({:ok, result}), do: "exit #{result.exit_code}, #{byte_size(result.stdout)} B out"
  defp summary({:error, message}), do: "error: " <> String.slice(message, 0, 90)

  defp ms(us), do: "#{Float.round(us / 1000, 1)} ms"
  defp ms_2(us), do: "#{Float.round(us / 1000, 2)} ms"
end

BenchSupport.publish(__ENV__.file, &ContainmentBench.run/0)
