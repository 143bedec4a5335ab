# ExBashkit.Peer under load, with the spare pool (default size, 2) and
# without it (size 0), side by side in one run:
#
#   mix run bench/peer.exs
#
# Every caller runs `Peer.run("1 + 1")`. Warm: before each round the pool
# has its spares booted and nothing in flight. Sustained: callers run back
# to back. The baseline is a plain `:peer.start` + eval + `:peer.stop`.
# Pool on and off alternate over three rounds so that machine noise hits
# both; a row gives median / p95 over all samples and the spread of the
# per-round medians. Prints a Markdown table for bench/README.md.

defmodule PeerBench do
  alias ExBashkit.Peer
  alias ExBashkit.Peer.Pool

  @rounds 3
  @size Application.compile_env(:ex_bashkit, :peer_pool_size, 2)
  @scenarios [
    {"1 caller, warm", 1, :warm, 8},
    {"1 caller, sustained", 1, :sustained, 8},
    {"4 callers, warm", 4, :warm, 3},
    {"4 callers, sustained", 4, :sustained, 4}
  ]

  def run do
    Peer.ensure_distributed!()
    {:ok, _} = Peer.run("1")

    samples =
      for round <- 1..@rounds,
          {name, callers, kind, runs} <- @scenarios,
          size <- if(rem(round, 2) == 1, do: [@size, 0], else: [0, @size]),
          reduce: %{} do
        acc ->
          :ok = Pool.resize(size)
          taken = measure(callers, kind, runs, size)
          IO.puts(:stderr, "round #{round}, #{name}, pool #{size}: #{ms(median(taken))} median")
          Map.update(acc, {name, size}, [taken], &[taken | &1])
      end

    :ok = Pool.resize(@size)
    plain = Enum.map(1..@rounds, fn _ -> for _ <- 1..8, do: timed(&plain_peer/0) end)

    IO.puts("")

    IO.puts(
      "| `Peer.run(\"1 + 1\")` | pool on (size #{@size}) | pool off | plain `:peer.start` |"
    )

    IO.puts("|---|---|---|---|")

    for {name, _, _, _} <- @scenarios do
      IO.puts(
        "| #{name} | #{stats(samples[{name, @size}])} | #{stats(samples[{name, 0}])} | " <>
          "#{stats(plain)} |"
      )
    end
  end

  defp measure(callers, :warm, rounds, size) do
    for _ <- 1..rounds, sample <- await_idle(size) && concurrently(callers, 1), do: sample
  end

  defp measure(callers, :sustained, runs, size) do
    await_idle(size)
    concurrently(callers, runs)
  end

  defp concurrently(callers, runs) do
    1..callers
    |> Enum.map(fn _ -> Task.async(fn -> for _ <- 1..runs, do: timed(&one_run/0) end) end)
    |> Task.await_many(:infinity)
    |> List.flatten()
  end

  defp one_run, do: {:ok, %{result: 2}} = Peer.run("1 + 1")

  defp plain_peer do
    paths = Enum.flat_map(:code.get_path(), &[~c"-pa", &1])
    naming = %{host: ~c"127.0.0.1", longnames: true}
    {:ok, peer, node} = :peer.start(Map.merge(%{name: :peer.random_name(), args: paths}, naming))
    {2, _} = :erpc.call(node, Code, :eval_string, ["1 + 1"])
    :peer.stop(peer)
  end

  defp await_idle(size) do
    case Pool.info() do
      %{spares: spares, booting: 0, lent: 0} when length(spares) == size ->
        true

      _ ->
        Process.sleep(10)
        await_idle(size)
    end
  end

  defp timed(fun) do
    started = System.monotonic_time(:microsecond)
    fun.()
    System.monotonic_time(:microsecond) - started
  end

  # "median / p95 (round medians min–max)"
  defp stats(rounds) do
    all = rounds |> List.flatten() |> Enum.sort()
    p95 = Enum.at(all, ceil(length(all) * 0.95) - 1)
    medians = Enum.map(rounds, &median/1)

    "#{ms(median(all))} / #{ms(p95)} (#{ms(Enum.min(medians))}–#{ms(Enum.max(medians))})"
  end

  defp median(samples), do: samples |> Enum.sort() |> Enum.at(div(length(samples), 2))
  defp ms(us), do: "#{Float.round(us / 1000, 1)} ms"
end

BenchSupport.publish(__ENV__.file, &PeerBench.run/0)
