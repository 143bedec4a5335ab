# Servers of ids across a cluster (issue 60): how fast new servers are
# started and registered, and how fast they are found, at 1, 3 and 5 nodes
# (this VM and peers on loopback, all on this machine's cores), ours
# (ownership by hash, ExBashkit.Server.get_or_start/1) against :global
# (the same servers started under {:global, name}, as get_or_start did
# before) in the same run; and how long a dead node's stored servers take
# to answer again from their new owners.
#
#   ELIXIR_ERL_OPTIONS="+sbwt none +sbwtdcpu none +sbwtdio none" \
#     MIX_ENV=prod mix run bench/cluster.exs       # ROUNDS=3 by default
#
# Rates: 2,000 servers started from this node by one caller, and by 16
# callers at once; then 2,000 from every node at once (16 callers each).
# Servers/s is cluster-wide; "per node" divides it by the nodes. Each
# round stops every server before the next. Lookups: whereis/1 of a
# server on this node and of one on another (10,000 each), against
# :global.whereis_name/1 and a bare :erpc.call round trip. Recovery: 200
# servers with a Store.Disk on a peer that is killed (its OS process
# halted); the time from its nodedown until each answered an exec on its
# new owner. Prints Markdown tables for bench/README.md; median of the
# rounds, with min–max.

Code.require_file("support.exs", __DIR__)
Code.require_file("../test/support/cluster.ex", __DIR__)

# Killing a peer makes :global on the others warn of overlapping partitions.
Logger.configure(level: :error)

alias ExBashkit.{Server, Store}
alias ExBashkit.Server.Ring
alias ExBashkit.Test.Cluster

# What each node runs to start its share: loaded onto the peers too.
{:module, _, starter_beam, _} =
  defmodule ClusterBench.Starter do
    alias ExBashkit.Server

    def start_all(registry, ids, callers) do
      ids
      |> Enum.chunk_every(div(length(ids) + callers - 1, callers))
      |> Enum.map(fn chunk -> Task.async(fn -> Enum.map(chunk, &start(registry, &1)) end) end)
      |> Task.await_many(:infinity)
      |> List.flatten()
    end

    def start(:ring, id) do
      {:ok, pid} = Server.get_or_start(id)
      pid
    end

    def start(:global, id) do
      {:ok, pid} = Server.start(id: id, name: {:global, {:bench, id}})
      pid
    end
  end

defmodule ClusterBench do
  @servers 2_000
  @callers 16
  @lookups 10_000
  # Five VMs share this machine's cores: schedulers that spin while idle
  # (the default) would take them from each other. One VM per machine,
  # as a cluster runs, needs no such flag.
  @peer [
    on_exit: false,
    args: ~w(+sbwt none +sbwtdcpu none +sbwtdio none -kernel logger_level error)
  ]

  def run(rounds, starter_beam) do
    :ok = ExBashkit.Peer.ensure_distributed!()
    IO.puts("rounds: #{rounds}; cores: #{System.schedulers_online()}\n")

    IO.puts(
      "| nodes | registry | from one node, 1 caller | from one node, #{@callers} callers | " <>
        "from every node at once | per node (every node) |"
    )

    IO.puts("|---|---|---|---|---|---|")

    peers =
      Enum.reduce([1, 3, 5], [], fn size, peers ->
        peers = peers ++ for(_ <- 1..(size - 1 - length(peers))//1, do: Cluster.start_node(@peer))
        nodes = [node() | Enum.map(peers, &elem(&1, 1))]

        for node <- nodes -- [node()],
            do:
              {:module, _} =
                :erpc.call(node, :code, :load_binary, [
                  ClusterBench.Starter,
                  ~c"nofile",
                  starter_beam
                ])

        wait(fn -> Ring.members() == Enum.sort(nodes) and Ring.settled?() end)

        for registry <- [:ring, :global] do
          rows =
            for _ <- 1..rounds do
              {one(registry, 1), one(registry, @callers), every(registry, nodes)}
            end

          {single, many, all} = {col(rows, 0), col(rows, 1), col(rows, 2)}

          IO.puts(
            "| #{size} | #{label(registry)} | #{rate(single)} | #{rate(many)} | #{rate(all)} | " <>
              "#{rate(Enum.map(all, &(&1 / size)))} |"
          )
        end

        lookups(size, nodes, rounds)
        peers
      end)

    IO.puts("")
    recovery(rounds)
    Enum.each(peers, fn {peer, _} -> :peer.stop(peer) end)
  end

  defp label(:ring), do: "ours (ring)"
  defp label(:global), do: "`:global`"

  defp col(rows, i), do: Enum.map(rows, &elem(&1, i))

  # Servers/s of `@servers` started from this node by `callers` processes.
  defp one(registry, callers) do
    ids = ids()
    {us, pids} = :timer.tc(fn -> ClusterBench.Starter.start_all(registry, ids, callers) end)
    stop(pids)
    @servers / (us / 1_000_000)
  end

  # Servers/s, cluster-wide, of `@servers` started from each node at once.
  defp every(registry, nodes) do
    batches = for _ <- nodes, do: ids()

    {us, pids} =
      :timer.tc(fn ->
        nodes
        |> Enum.zip(batches)
        |> Enum.map(fn {node, ids} ->
          Task.async(fn ->
            :erpc.call(
              node,
              ClusterBench.Starter,
              :start_all,
              [registry, ids, @callers],
              :infinity
            )
          end)
        end)
        |> Task.await_many(:infinity)
        |> List.flatten()
      end)

    stop(pids)
    length(nodes) * @servers / (us / 1_000_000)
  end

  defp stop(pids) do
    pids
    |> Enum.chunk_every(250)
    |> Enum.map(fn chunk -> Task.async(fn -> Enum.each(chunk, &Server.stop/1) end) end)
    |> Task.await_many(:infinity)
  end

  defp ids, do: for(_ <- 1..@servers, do: {:bench, make_ref()})

  defp lookups(size, nodes, rounds) do
    local = Cluster.id_owned_by(node(), Ring.members(), "local")
    {:ok, local_pid} = Server.get_or_start(local)
    {:ok, _} = Server.start(id: :g_local, name: {:global, {:bench, :local}})

    remote = if size > 1, do: Cluster.id_owned_by(Enum.at(nodes, 1), Ring.members(), "remote")

    if remote, do: {:ok, _} = Server.get_or_start(remote)

    if size > 1,
      do: {:ok, _} = Server.start(node: Enum.at(nodes, 1), name: {:global, {:bench, :remote}})

    cases =
      [
        {"ours, local server", fn -> Server.whereis(local) end},
        {"`:global`, local server", fn -> :global.whereis_name({:bench, :local}) end}
      ] ++
        if size > 1 do
          other = Enum.at(nodes, 1)

          [
            {"ours, remote server", fn -> Server.whereis(remote) end},
            {"`:global`, remote server", fn -> :global.whereis_name({:bench, :remote}) end},
            {"one `:erpc.call` round trip", fn -> :erpc.call(other, :erlang, :node, []) end}
          ]
        else
          []
        end

    IO.puts("\n| #{size} node(s): lookup | p50 | p99 |")
    IO.puts("|---|---|---|")

    # The cases take turns, sample by sample, so that each sees the same
    # machine.
    measured =
      for _ <- 1..rounds do
        1..@lookups
        |> Enum.map(fn _ -> Enum.map(cases, fn {_, fun} -> BenchSupport.elapsed_ns(fun) end) end)
        |> Enum.zip_with(& &1)
        |> Enum.map(fn samples ->
          samples = Enum.sort(samples)
          {at(samples, 0.5), at(samples, 0.99)}
        end)
      end

    for {{label, _}, i} <- Enum.with_index(cases) do
      rows = Enum.map(measured, &Enum.at(&1, i))
      IO.puts("| #{label} | #{us(col(rows, 0))} | #{us(col(rows, 1))} |")
    end

    Server.stop(local_pid)
    Server.stop({:global, {:bench, :local}})
    if remote, do: Server.stop(Server.name(remote))
    if size > 1, do: Server.stop({:global, {:bench, :remote}})
    IO.puts("")
  end

  defp recovery(rounds) do
    IO.puts("| recovery of a killed node's 200 stored servers | median | min–max | target |")
    IO.puts("|---|---|---|---|")

    dir =
      Path.join(
        System.tmp_dir!(),
        "ex_bashkit_bench_cluster_#{System.unique_integer([:positive])}"
      )

    store = {Store.Disk, dir: dir, key: "bench cluster key, 16+ bytes"}

    samples =
      for _ <- 1..rounds do
        {_, b} = Cluster.start_node(@peer)
        wait(fn -> Ring.settled?() and b in Ring.members() end)
        ids = for _ <- 1..200, do: Cluster.id_owned_by(b, Ring.members(), "dying")

        for id <- ids do
          {:ok, pid} = Server.get_or_start(id, store: store, persist: :after_exec)
          {:ok, _} = Server.exec(pid, "echo #{id} > /mine")
        end

        Cluster.kill_node(b)
        noticed = System.monotonic_time(:microsecond)

        for id <- ids do
          {:ok, pid} = Server.get_or_start(id, store: store)
          {:ok, %{stdout: out}} = Server.exec(pid, "cat /mine")
          ^out = "#{id}\n"
        end

        elapsed = System.monotonic_time(:microsecond) - noticed
        Enum.each(ids, &Server.stop(Server.name(&1), delete: true))
        elapsed
      end
      |> Enum.sort()

    IO.puts(
      "| 200 servers, `Store.Disk` | #{ms(at(samples, 0.5))} | " <>
        "#{ms(hd(samples))}–#{ms(List.last(samples))} | ≤ 5 s |"
    )

    File.rm_rf!(dir)
  end

  defp at(sorted, q), do: Enum.at(sorted, min(length(sorted) - 1, trunc(q * length(sorted))))

  defp rate(values) do
    values = Enum.sort(values)
    "#{round(at(values, 0.5))}/s (#{round(hd(values))}–#{round(List.last(values))})"
  end

  defp us(values) do
    values = values |> Enum.sort() |> Enum.map(&Float.round(&1 / 1000, 2))
    "#{at(values, 0.5)} µs (#{hd(values)}–#{List.last(values)})"
  end

  defp ms(us), do: "#{Float.round(us / 1000, 1)} ms"

  defp wait(check, tries \\ 1_000) do
    cond do
      check.() -> :ok
      tries == 0 -> raise "gave up waiting"
      true -> Process.sleep(10) && wait(check, tries - 1)
    end
  end
end

BenchSupport.publish(__ENV__.file, ["ELIXIR_ERL_OPTIONS", "ROUNDS"], fn ->
  ClusterBench.run(String.to_integer(System.get_env("ROUNDS", "3")), starter_beam)
end)
