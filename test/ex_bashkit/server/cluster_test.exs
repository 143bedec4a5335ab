defmodule ExBashkit.ClusterTest do
  # Real nodes, started with :peer; the names are cluster-wide.
  use ExBashkit.Case, async: false

  alias ExBashkit.{Server, Store}
  alias ExBashkit.Test.{Capabilities, Cluster}

  @moduletag timeout: 180_000

  setup do
    dir = tmp_path("ex_bashkit_cluster")

    on_exit(fn -> File.rm_rf!(dir) end)
    store = {Store.Disk, dir: dir, key: "cluster test key, 16+ bytes"}
    {_, b} = Cluster.start_node()
    {_, c} = Cluster.start_node()
    %{b: b, c: c, store: store}
  end

  defp id, do: "conversation-#{System.unique_integer([:positive])}"

  test "started on a chosen node, found and used by name from every node", %{b: b, c: c} do
    id = id()
    session = [builtins: %{"where" => &Capabilities.where/1}]
    {:ok, pid} = Server.get_or_start(id, node: b, session: session)
    assert node(pid) == b
    name = {:global, {Server, id}}

    # Callbacks run where the server is.
    assert {:ok, %{stdout: "#{b}\n"}} == Server.exec(name, "where") |> stdout()
    assert :erpc.call(c, Server, :whereis, [id]) == pid
    assert {:ok, %{stdout: "from c\n"}} = :erpc.call(c, Server, :exec, [name, "echo from c"])
    assert {:ok, ^pid} = :erpc.call(c, Server, :get_or_start, [id])

    # A list of nodes: the first one connected.
    {:ok, other} = Server.get_or_start(id(), node: [:"gone@127.0.0.1", c])
    assert node(other) == c
  end

  test "move/2 of a 10 MB session while another process keeps calling it", %{b: b, c: c} do
    id = id()
    {:ok, pid} = Server.get_or_start(id, node: b)
    name = {:global, {Server, id}}
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
              case Server.exec(name, "echo #{i}") do
                {:ok, %{stdout: out}} when is_binary(out) ->
                  if out == "#{i}\n", do: {:cont, failures}, else: {:cont, [out | failures]}

                other ->
                  {:cont, [other | failures]}
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

    assert Server.whereis(id) == moved
    assert {:ok, ^big} = Server.read_file(name, "/big")
    assert {:ok, %{stdout: "/tmp 0\n"}} = Server.exec(name, "echo $(pwd) $COUNT")
    # The old pid forwards for a while.
    assert {:ok, %{stdout: "old\n"}} = Server.exec(pid, "echo old")
  end

  test "servers of a node that dies restart elsewhere from their records",
       %{b: b, c: c, store: store} do
    ids = for _ <- 1..3, do: id()

    for id <- ids do
      {:ok, pid} = Server.get_or_start(id, node: b, store: store, persist: :after_exec)
      {:ok, _} = Server.exec(pid, "echo #{id} > /mine; cd /tmp; last() { cat /mine; }")
    end

    Cluster.kill_node(b)

    for id <- ids do
      assert wait_until(fn -> Server.whereis(id) == nil end)
      {:ok, pid} = Server.get_or_start(id, node: [b, c], store: store)
      assert node(pid) == c
      assert {:ok, %{stdout: out}} = Server.exec(pid, "last; pwd")
      assert out == "#{id}\n/tmp\n"
    end
  end

  test "a server under a local name does not move", %{c: c} do
    {:ok, pid} = Server.start(name: :cluster_local_name)
    assert {:error, message} = Server.move(pid, c)
    assert message =~ "local name"
    assert {:ok, _} = Server.exec(:cluster_local_name, "true")
    Server.stop(pid)
  end

  defp stdout({:ok, result}), do: {:ok, %{stdout: result.stdout}}
end
