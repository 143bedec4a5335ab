defmodule ExBashkit.ServerListTest do
  # ExBashkit.Server.list/0,1: every live server with its state, age, last
  # call and worker, read from the directory each server keeps its row in,
  # on this node and on a real peer node.
  use ExBashkit.Case, async: false

  alias ExBashkit.Server
  alias ExBashkit.Test.Cluster

  defp mine(servers, ids), do: servers |> Enum.filter(&(&1.id in ids)) |> Map.new(&{&1.id, &1})

  test "running, idle and hibernated servers, their workers and their ages" do
    ids = for name <- ~w(vm worker sleeping), do: unique_name("list_#{name}")
    [vm_id, worker_id, sleeping_id] = ids
    {:ok, vm} = Server.get_or_start(vm_id, session: [isolation: :none])
    {:ok, worker} = Server.get_or_start(worker_id, session: [isolation: :process])
    {:ok, sleeping} = Server.get_or_start(sleeping_id)

    {:ok, _} = Server.exec(vm, "true")
    {:ok, _} = Server.exec(sleeping, "true")
    :ok = Server.hibernate(sleeping)
    test = self()

    running =
      Task.async(fn ->
        Server.exec(worker, "echo started; sleep 2", stream_to: {test, :running})
      end)

    assert_receive {:ex_bashkit, :running, {:stdout, "started\n"}}
    listed = mine(Server.list(), ids)

    assert %{state: :idle, isolation: :none, os_pid: nil, memory: nil, node: node} = listed[vm_id]
    assert node == node()

    assert %{state: :running, isolation: :process, os_pid: os_pid, memory: memory} =
             listed[worker_id]

    assert is_integer(os_pid) and memory > 0
    assert %{state: :hibernated, os_pid: nil} = listed[sleeping_id]
    assert listed[vm_id].pid == vm
    assert listed[vm_id].age_ms >= 0
    assert DateTime.diff(DateTime.utc_now(), listed[vm_id].last_call, :second) < 60

    assert {:ok, _} = Task.await(running, 30_000)
    assert %{state: :idle} = mine(Server.list(node()), ids)[worker_id]

    for pid <- [vm, worker, sleeping], do: :ok = Server.stop(pid)
    assert mine(Server.list(), ids) == %{}
  end

  test "a server killed without terminating is left out" do
    id = unique_name("list_killed")
    {:ok, pid} = Server.get_or_start(id)
    ref = Process.monitor(pid)
    Process.exit(pid, :kill)
    assert_receive {:DOWN, ^ref, :process, ^pid, :killed}
    refute Enum.any?(Server.list(node()), &(&1.pid == pid))
  end

  test "the servers of a peer node, in list/0 and in list/1" do
    {_peer, other} = Cluster.start_node()
    id = Cluster.id_owned_by(other)
    {:ok, pid} = Server.get_or_start(id)
    assert node(pid) == other

    assert [%{node: ^other, pid: ^pid}] = Enum.filter(Server.list(), &(&1.id == id))
    assert [%{id: ^id}] = Enum.filter(Server.list(other), &(&1.id == id))
    assert Server.list(:"nowhere@127.0.0.1") == []
  end
end
