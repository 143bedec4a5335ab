# Session servers (issue 15): what a hibernated server holds, how fast it
# wakes, how fast a 10 MB session moves between nodes, and what an exec
# costs through a server (here and on a sandbox node) against a bare
# session.
#
#   MIX_ENV=prod mix run bench/server.exs
#
# Memory: 1,000 servers that ran one script, hibernated; process memory
# (Process.info/2) and the snapshot each holds off-heap or in the store.
# Wake: hibernate/1 then one exec("true"), timed from the exec; 200 samples
# for an empty session, 30 for one holding 10 MB of files. Move: a 10 MB
# session moved back and forth between two peer nodes on this machine, 10
# times. Exec: 2,000 samples of exec("true") each way, p50 and p90.
# List: Server.list/0 with 10,000 live servers (each ran one script in the
# VM), 50 calls, p50 and p90.
# Prints Markdown tables for bench/README.md.

Code.require_file("support.exs", __DIR__)
Code.require_file("../test/support/cluster.ex", __DIR__)

alias ExBashkit.{Server, Session, Store}
alias ExBashkit.Test.Cluster

defmodule ServerBench do
  @servers 1_000
  @ten_mb 10_000_000

  def run do
    memory()
    wake()
    move()
    exec()
    list()
  end

  defp memory do
    IO.puts("| 1,000 hibernated servers | process memory p50 | max | snapshot held |")
    IO.puts("|---|---|---|---|")

    for {label, opts} <- [
          {"no store (snapshot off-heap)", []},
          {"`Store.Memory`", [store: Store.Memory]}
        ] do
      pids =
        for i <- 1..@servers do
          {:ok, pid} = Server.start([id: {:bench, label, i}, idle_after: 1] ++ opts)
          {:ok, _} = Server.exec(pid, "cd /tmp && export N=#{i} && echo #{i} > f")
          pid
        end

      wait(fn -> Enum.all?(pids, &(Server.info(&1).state == :hibernated)) end)
      memory = pids |> Enum.map(&elem(Process.info(&1, :memory), 1)) |> Enum.sort()
      {:ok, snapshot} = Server.snapshot(hd(pids))

      IO.puts(
        "| #{label} | #{at(memory, 0.5)} B | #{List.last(memory)} B | " <>
          "#{byte_size(snapshot)} B |"
      )

      Enum.each(pids, &Server.stop(&1, delete: true))
    end
  end

  defp wake do
    IO.puts("\n| wake (hibernated → first exec answered) | p50 | p99 | samples |")
    IO.puts("|---|---|---|---|")

    for {label, size, n} <- [{"empty session", 0, 200}, {"10 MB of files", @ten_mb, 30}] do
      {:ok, pid} = Server.start()
      if size > 0, do: :ok = Server.write_file(pid, "/big", :crypto.strong_rand_bytes(size))

      samples =
        for _ <- 1..n do
          :ok = Server.hibernate(pid)
          {us, {:ok, _}} = :timer.tc(fn -> Server.exec(pid, "true") end)
          us
        end
        |> Enum.sort()

      IO.puts("| #{label} | #{ms(at(samples, 0.5))} | #{ms(at(samples, 0.99))} | #{n} |")
      Server.stop(pid)
    end
  end

  defp move do
    {_, b} = Cluster.start_node(on_exit: false)
    {_, c} = Cluster.start_node(on_exit: false)
    name = {:global, :bench_move}
    {:ok, pid} = Server.start(node: b, name: name)
    :ok = Server.write_file(pid, "/big", :crypto.strong_rand_bytes(@ten_mb))

    samples =
      for i <- 1..10 do
        target = if rem(i, 2) == 1, do: c, else: b
        {us, {:ok, _}} = :timer.tc(fn -> Server.move(name, target) end)
        us
      end
      |> Enum.sort()

    IO.puts("\n| `move/2` of a 10 MB session between two nodes | p50 | min–max | target |")
    IO.puts("|---|---|---|---|")

    IO.puts(
      "| 10 moves | #{ms(at(samples, 0.5))} | #{ms(hd(samples))}–#{ms(List.last(samples))} | " <>
        "≤ 250 ms |"
    )

    Server.stop(name)
  end

  defp exec do
    session = Session.new()
    {:ok, local} = Server.start()
    {:ok, isolated} = Server.start(isolation: :node)
    {:ok, _} = Server.exec(isolated, "true")

    rows = [
      {"bare `Session.exec/2`", fn -> {:ok, _} = Session.exec(session, "true") end},
      {"`Server.exec/2`, same node", fn -> {:ok, _} = Server.exec(local, "true") end},
      {"`Server.exec/2`, sandbox node", fn -> {:ok, _} = Server.exec(isolated, "true") end}
    ]

    IO.puts("\n| `exec(\"true\")` | p50 | p90 | ratio (p50) |")
    IO.puts("|---|---|---|---|")

    [{_, base} | _] =
      results =
      for {label, fun} <- rows do
        samples = BenchSupport.sorted_samples_ns(2_000, fun)
        {label, samples}
      end

    for {label, samples} <- results do
      ratio = at(samples, 0.5) / at(base, 0.5)

      IO.puts(
        "| #{label} | #{us(at(samples, 0.5))} | #{us(at(samples, 0.9))} | " <>
          "#{Float.round(ratio, 2)}× |"
      )
    end
  end

  defp wait(check) do
    unless check.(), do: Process.sleep(50) && wait(check)
  end

  defp at(sorted, q), do: Enum.at(sorted, min(length(sorted) - 1, floor(length(sorted) * q)))
  defp ms(us), do: "#{Float.round(us / 1000, 2)} ms"
  defp us(ns), do: "#{Float.round(ns / 1000, 1)} µs"

  defp list do
    servers =
      for i <- 1..10_000 do
        {:ok, pid} = Server.start(id: "list-bench-#{i}", session: [isolation: :none])
        {:ok, _} = Server.exec(pid, "true")
        pid
      end

    ^servers = servers
    10_000 = Enum.count(Server.list(), &String.starts_with?(to_string(&1.id), "list-bench-"))
    samples = BenchSupport.sorted_samples_ns(50, fn -> Server.list() end)
    Enum.each(servers, &Server.stop/1)

    IO.puts("""

    ## Server.list/0 with 10,000 live servers
    | figure | p50 / p90 |
    |---|---|
    | one call | #{div(Enum.at(samples, 25), 1_000_000)} / #{div(Enum.at(samples, 45), 1_000_000)} ms |\
    """)
  end
end

BenchSupport.publish(__ENV__.file, &ServerBench.run/0)
