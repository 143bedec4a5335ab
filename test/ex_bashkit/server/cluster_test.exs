defmodule ExBashkit.ClusterTest do
  # Servers of ids across real nodes (:peer on loopback): one server per
  # id, on the id's owner; joins, deaths and a partition.
  use ExBashkit.Case, async: false

  alias ExBashkit.{Server, Store}
  alias ExBashkit.Server.{Names, Ring}
  alias ExBashkit.Test.{Capabilities, Cluster, ShellRun}

  @moduletag timeout: 180_000

  setup do
    dir = tmp_path("ex_bashkit_cluster")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{store: {Store.Disk, dir: dir, key: "cluster test key, 16+ bytes"}}
  end

  defp ids(count),
    do: for(_ <- 1..count, do: "conversation-#{System.unique_integer([:positive])}")

  # The servers of `ids` registered on `nodes`, as {id, pid}, where they run.
  defp servers(nodes, ids) do
    ids = MapSet.new(ids)

    Enum.flat_map(nodes, fn node ->
      for {id, pid} <- :erpc.call(node, Names, :entries, []),
          node(pid) == node and MapSet.member?(ids, id),
          do: {id, pid}
    end)
  end

  test "one server per id, on its owner, found from every node by pid or by name" do
    {_, b} = Cluster.start_node()
    {_, c} = Cluster.start_node()
    nodes = [node(), b, c]
    ids = ids(300)

    # Each id asked for from two nodes at once.
    answers =
      for id <- ids, from <- Enum.take_random(nodes, 2) do
        Task.async(fn -> {id, :erpc.call(from, Server, :get_or_start, [id])} end)
      end
      |> Task.await_many(60_000)

    for {id, answers} <- Enum.group_by(answers, &elem(&1, 0), &elem(&1, 1)) do
      assert [{:ok, pid}] = Enum.uniq(answers)
      assert node(pid) == Ring.owner(id)
      for node <- nodes, do: assert(:erpc.call(node, Server, :whereis, [id]) == pid)
    end

    assert length(servers(nodes, ids)) == 300

    assert Enum.frequencies_by(servers(nodes, ids), fn {_, pid} -> node(pid) end) |> map_size() ==
             3

    # By the id's name, from any node; the name of earlier versions too.
    [id | _] = ids
    assert {:ok, %{stdout: "hi\n"}} = :erpc.call(c, Server, :exec, [Server.name(id), "echo hi"])

    assert {:ok, %{exit_code: 0}} =
             :erpc.call(b, Server, :exec, [{:global, {Server, id}}, "true"])

    assert :erpc.call(b, GenServer, :whereis, [Server.name(id)]) == Server.whereis(id)

    # Callbacks run where the server is.
    owned_by_b = Cluster.id_owned_by(b)
    session = [builtins: %{"where" => &Capabilities.where/1}]
    {:ok, pid} = :erpc.call(c, Server, :get_or_start, [owned_by_b, [session: session]])
    assert {:ok, %{stdout: "#{b}\n"}} == Server.exec(pid, "where") |> stdout()

    # A server of an id is placed by the ring, not by hand.
    assert_raise ArgumentError, ~r/no :node/, fn -> Server.get_or_start(id, node: b) end
    elsewhere = Enum.find(nodes, &(&1 != Ring.owner(id)))
    assert {:error, message} = Server.move(Server.name(id), elsewhere)
    assert message =~ "owner"
  end

  test "2,000 servers on 1 node, then on 5 nodes from one node and from all at once" do
    alone = ids(2_000)
    started = Enum.map(alone, &Server.get_or_start/1)
    assert Enum.all?(started, &match?({:ok, pid} when node(pid) == node(), &1))
    assert started |> Enum.uniq() |> length() == 2_000
    Enum.each(started, fn {:ok, pid} -> Server.stop(pid) end)

    peers = for _ <- 1..4, do: Cluster.start_node()
    nodes = [node() | Enum.map(peers, &elem(&1, 1))]
    assert Ring.members() == Enum.sort(nodes)

    from_one = ids(2_000)
    assert Enum.all?(from_one, &match?({:ok, _}, Server.get_or_start(&1)))

    from_all = ids(2_000)

    nodes
    |> Enum.zip(Enum.chunk_every(from_all, 400))
    |> Enum.map(fn {node, ids} ->
      Task.async(fn -> :erpc.call(node, Enum, :map, [ids, &Server.get_or_start/1], 60_000) end)
    end)
    |> Task.await_many(90_000)
    |> List.flatten()
    |> Enum.each(&assert(match?({:ok, _}, &1)))

    servers = servers(nodes, from_one ++ from_all)
    assert length(servers) == 4_000
    assert servers |> Enum.map(&elem(&1, 0)) |> Enum.uniq() |> length() == 4_000
    for {id, pid} <- servers, do: assert(node(pid) == Ring.owner(id))

    # Each of the five holds about a fifth.
    for {_node, count} <- Enum.frequencies_by(servers, fn {_, pid} -> node(pid) end),
        do: assert(count in 550..1_050)
  end

  test "a node that joins takes over about 1/N, sessions and all; calls meanwhile are served once" do
    {_, b} = Cluster.start_node()
    before = [node(), b]
    ids = ids(300)

    for id <- ids do
      {:ok, pid} = Server.get_or_start(id)
      {:ok, _} = Server.exec(pid, "echo #{id} > /f; cd /tmp; export MINE=#{id}")
    end

    placed = Map.new(ids, &{&1, node(Server.whereis(&1))})

    # A counter on an id the joining node will not own... and one it may:
    # every call made during the join is served by exactly one server.
    counted = List.first(ids)
    {:ok, _} = Server.exec(Server.name(counted), "echo 0 > /n")

    caller =
      Task.async(fn ->
        Stream.repeatedly(fn ->
          Server.exec(Server.name(counted), "echo $(( $(cat /n) + 1 )) > /n; cat /n")
        end)
        |> Enum.reduce_while([], fn answer, seen ->
          receive do
            :stop -> {:halt, Enum.reverse([answer | seen])}
          after
            0 -> {:cont, [answer | seen]}
          end
        end)
      end)

    {_, c} = Cluster.start_node()
    after_join = [node(), b, c]
    for node <- after_join, do: assert(:erpc.call(node, Ring, :await, [c, 10_000]))
    send(caller.pid, :stop)
    answers = Task.await(caller, 60_000)
    counts = for {:ok, %{stdout: out}} <- answers, do: out |> String.trim() |> String.to_integer()
    assert length(counts) == length(answers), inspect(answers -- Enum.map(counts, & &1))
    expected = Enum.to_list(1..length(counts))
    at = Enum.zip(counts, expected) |> Enum.find_index(fn {got, want} -> got != want end)

    assert counts == expected,
           "call #{inspect(at && at + 1)} of #{length(counts)} answered out of order: " <>
             "#{inspect(Enum.slice(counts, max((at || 0) - 3, 0), 8))}"

    moved = Enum.filter(ids, &(node(Server.whereis(&1)) != placed[&1]))
    assert Enum.sort(moved) == Enum.sort(Enum.filter(ids, &(Ring.owner(&1, after_join) == c)))
    assert length(moved) in 60..140
    # Nothing moved between the nodes that were there.
    for id <- ids -- moved, do: assert(placed[id] == Ring.owner(id, before))

    for id <- ids do
      assert {:ok, %{stdout: out}} = Server.exec(Server.name(id), "cat /f; echo $MINE $(pwd)")
      assert out == "#{id}\n#{id} /tmp\n"
    end

    assert length(servers(after_join, ids)) == 300
  end

  test "servers on sandbox nodes are handed over to sandbox nodes of their new owner" do
    ids = ids(20)

    for id <- ids do
      {:ok, pid} = Server.get_or_start(id, isolation: :node)
      assert node(pid) in ExBashkit.SandboxNode.nodes()
      {:ok, _} = Server.exec(pid, "echo #{id} > /f")
    end

    before = Map.new(ids, &{&1, Server.whereis(&1)})
    {_, b} = Cluster.start_node()
    moving = Enum.filter(ids, &(Ring.owner(&1) == b))
    assert moving != []
    sandboxes = :erpc.call(b, ExBashkit.SandboxNode, :nodes, [])

    for id <- ids do
      pid = Server.whereis(id)
      assert :erpc.call(b, Server, :whereis, [id]) == pid

      if id in moving,
        do: assert(node(pid) in sandboxes),
        else: assert(pid == before[id])

      assert {:ok, %{stdout: "#{id}\n"}} == Server.exec(Server.name(id), "cat /f") |> stdout()
    end
  end

  test "a node's death: its stored servers answer from their new owners; the others are gone",
       %{store: store} do
    {_, b} = Cluster.start_node()
    {c_peer, c} = Cluster.start_node()
    on_b = for _ <- 1..10, do: Cluster.id_owned_by(b)
    unstored = Cluster.id_owned_by(b)
    on_c = for _ <- 1..5, do: Cluster.id_owned_by(c)

    eager = for _ <- 1..5, do: Cluster.id_owned_by(b)

    for id <- on_b ++ on_c ++ eager do
      recover = if id in eager, do: :eager, else: :on_use
      {:ok, pid} = Server.get_or_start(id, store: store, persist: :after_exec, recover: recover)
      {:ok, _} = Server.exec(pid, "echo #{id} > /mine; cd /tmp; last() { cat /mine; }")
    end

    {:ok, _} = Server.exec(elem(Server.get_or_start(unstored), 1), "echo gone > /f")

    # A brutal death: the OS process halts.
    Cluster.kill_node(b)
    noticed = System.monotonic_time(:millisecond)

    # Those that recover eagerly are back before anyone asks.
    assert wait_until(fn -> Enum.all?(eager, &(servers([node(), c], [&1]) != [])) end)
    assert System.monotonic_time(:millisecond) - noticed < 5_000

    for id <- eager do
      assert [{^id, pid}] = servers([node(), c], [id])
      assert Server.whereis(id) == pid
      assert {:ok, %{stdout: "#{id}\n"}} == Server.exec(pid, "last") |> stdout()
    end

    for id <- on_b do
      {:ok, pid} = Server.get_or_start(id, store: store)
      assert node(pid) in [node(), c]
      assert {:ok, %{stdout: out}} = Server.exec(pid, "last; pwd")
      assert out == "#{id}\n/tmp\n"
    end

    assert System.monotonic_time(:millisecond) - noticed < 5_000

    # No store, nothing to come back from: an error, then a new session.
    assert Server.whereis(unstored) == nil
    assert {:error, message} = Server.exec(Server.name(unstored), "cat /f")
    assert message =~ "not available"
    {:ok, fresh} = Server.get_or_start(unstored)
    assert {:ok, %{exit_code: 1}} = Server.exec(fresh, "cat /f")

    # A graceful stop of a node: its servers write their sessions as they go.
    :peer.stop(c_peer)
    assert wait_until(fn -> Ring.members() == [node()] end)

    for id <- on_c do
      {:ok, pid} = Server.get_or_start(id, store: store)
      assert node(pid) == node()
      assert {:ok, %{stdout: "#{id}\n"}} == Server.exec(pid, "last") |> stdout()
    end
  end

  test "a partition: the newer owner's writes are kept, the cut-off server's refused; healed, one server",
       %{store: store} do
    {b_peer, b} = Cluster.start_detached()
    {c_peer, c} = Cluster.start_detached()
    :ok = Cluster.connect(b_peer, c)
    on_b = fn f, args -> :peer.call(b_peer, Server, f, args, 30_000) end
    on_c = fn f, args -> :peer.call(c_peer, Server, f, args, 30_000) end

    # Two ids B owns while whole, which C owns alone.
    [busy, idle] =
      Stream.repeatedly(fn -> Cluster.id_owned_by(b, [b, c]) end)
      |> Stream.filter(&(Ring.owner(&1, [c]) == c))
      |> Enum.take(2)

    opts = [store: store, persist: :after_exec]

    for id <- [busy, idle] do
      {:ok, pid} = on_b.(:get_or_start, [id, opts])
      assert node(pid) == b
      {:ok, _} = on_b.(:exec, [pid, "echo before > /f"])
    end

    busy_on_b = on_b.(:whereis, [busy])
    :ok = Cluster.disconnect(b_peer, c)
    :ok = Cluster.disconnect(c_peer, b)

    # Each half owns both ids now; C starts its own servers from the store.
    for id <- [busy, idle] do
      {:ok, pid} = on_c.(:get_or_start, [id, opts])
      assert node(pid) == c
      assert {:ok, %{stdout: "before\n"}} == on_c.(:exec, [pid, "cat /f"]) |> stdout()
      {:ok, _} = on_c.(:exec, [pid, "echo from-c > /f"])
    end

    # B's server of `busy` writes: the store refuses it, and it stops.
    assert {:error, message} = on_b.(:exec, [busy_on_b, "echo from-b > /f"])
    assert message =~ "newer server"
    assert :peer.call(b_peer, Process, :alive?, [busy_on_b]) == false

    # Healed: one server per id again, on the owner, with the newer writes.
    :ok = Cluster.connect(b_peer, c)
    :ok = Cluster.connect(c_peer, b)

    for id <- [busy, idle] do
      pid = on_b.(:whereis, [id])
      assert pid == on_c.(:whereis, [id])
      assert node(pid) == b
      assert {:ok, %{stdout: "from-c\n"}} == on_b.(:exec, [pid, "cat /f"]) |> stdout()
      # C's server handed its session over; B's own of `idle`, older, stopped.
      assert wait_until(fn -> serving(b_peer, b, id) ++ serving(c_peer, c, id) == [pid] end)
    end
  end

  test "a server started on a chosen node moves, and is found by its :global name" do
    {_, b} = Cluster.start_node()
    {_, c} = Cluster.start_node()
    name = {:global, {:moving, System.unique_integer()}}
    {:ok, pid} = Server.start(node: b, name: name)
    assert node(pid) == b
    big = :crypto.strong_rand_bytes(10_000_000)
    :ok = Server.write_file(pid, "/big", big)
    {:ok, _} = Server.exec(pid, "cd /tmp && export COUNT=0")

    caller =
      Task.async(fn ->
        Stream.iterate(1, &(&1 + 1))
        |> Enum.reduce_while([], fn i, failures ->
          receive do
            :stop -> {:halt, {i, failures}}
          after
            0 ->
              expected = "#{i}\n"

              case Server.exec(name, "echo #{i}") do
                {:ok, %{stdout: ^expected}} -> {:cont, failures}
                other -> {:cont, [other | failures]}
              end
          end
        end)
      end)

    Process.sleep(100)
    assert {:ok, moved} = Server.move(name, c)
    assert node(moved) == c
    Process.sleep(200)
    send(caller.pid, :stop)
    assert {calls, []} = Task.await(caller, 60_000)
    assert calls > 1

    assert GenServer.whereis(name) == moved
    assert {:ok, ^big} = Server.read_file(name, "/big")
    assert {:ok, %{stdout: "/tmp 0\n"}} = Server.exec(name, "echo $(pwd) $COUNT")
    # The old pid forwards for a while.
    assert {:ok, %{stdout: "old\n"}} = Server.exec(pid, "echo old")
  end

  test "a server under a local name does not move" do
    {_, c} = Cluster.start_node()
    {:ok, pid} = Server.start(name: :cluster_local_name)
    assert {:error, message} = Server.move(pid, c)
    assert message =~ "local name"
    assert {:ok, _} = Server.exec(:cluster_local_name, "true")
    Server.stop(pid)
  end

  test "a session survives a VM restart: a second VM opens the same store", %{store: store} do
    {peer, first} = Cluster.start_node()
    id = Cluster.id_owned_by(first)
    {:ok, pid} = Server.get_or_start(id, store: store, persist: :after_exec)
    assert node(pid) == first

    {:ok, _} =
      Server.exec(pid, """
      mkdir -p /proj && cd /proj && echo notes > notes.txt
      export STAGE=two; report() { echo "$STAGE in $(pwd): $(cat notes.txt)"; }
      """)

    :peer.stop(peer)

    {_peer, second} = Cluster.start_node()
    # Looked up by id alone: the options come back with the record.
    {:ok, pid} = :erpc.call(second, Server, :get_or_start, [id, [store: store]])
    assert node(pid) == Ring.owner(id)
    assert {:ok, %{stdout: "two in /proj: notes\n"}} = Server.exec(pid, "report")
  end

  test "the shell attaches to a server on another node, by name" do
    {_peer, node} = Cluster.start_node()
    id = Cluster.id_owned_by(node)
    {:ok, server} = Server.get_or_start(id)
    assert node(server) == node

    {:ok, output} =
      ShellRun.run("hostname; echo from-host > /note\n", attach: {:global, {Server, id}})

    assert output =~ "bashkit-sandbox\n"
    assert :erpc.call(node, Server, :read_file, [server, "/note"]) == {:ok, "from-host\n"}

    # What the shell relies on: a server streams to a listener on another node.
    assert {:ok, %{stdout: "a\nb\n"}} =
             Server.exec(server, "echo a; echo b", stream_to: {self(), :t})

    assert_receive {:ex_bashkit, :t, {:stdout, "a\n"}}
    assert_receive {:ex_bashkit, :t, {:stdout, "b\n"}}
    assert_receive {:ex_bashkit, :t, {:exit, {:ok, %{exit_code: 0}}}}
  end

  # The live servers of `id` running on the node of `peer`.
  defp serving(peer, node, id) do
    for {^id, pid} <- :peer.call(peer, Names, :entries, []),
        node(pid) == node and :peer.call(peer, Process, :alive?, [pid]),
        do: pid
  end

  defp stdout({:ok, result}), do: {:ok, %{stdout: result.stdout}}
  defp stdout(other), do: other
end
