defmodule ExBashkit.Test.Cluster do
  @moduledoc false
  # Real Erlang nodes for the distributed tests: visible peers on loopback,
  # with this project's code path and ex_bashkit started, linked to the
  # test process that starts them. Each joins the ring of servers before
  # it is handed out, and is gone from it when the test ends.

  alias ExBashkit.Server.Ring

  @doc """
  Starts a connected node running ex_bashkit; returns `{peer, node}`.
  In a test it leaves the ring when the test ends; elsewhere (a
  benchmark) give `on_exit: false` and stop it yourself. `:args` adds
  flags to its `erl` command line.
  """
  @spec start_node(keyword()) :: {pid(), node()}
  def start_node(opts \\ []) do
    ExBashkit.Peer.ensure_distributed!()
    name = :peer.random_name(Keyword.get(opts, :prefix, ~c"ex_bashkit_cluster"))

    {:ok, peer, node} =
      :peer.start_link(%{
        name: name,
        host: ~c"127.0.0.1",
        longnames: true,
        args:
          [~c"-kernel", ~c"inet_dist_use_interface", ~c"{127,0,0,1}"] ++
            Enum.map(Keyword.get(opts, :args, []), &String.to_charlist/1),
        env: [{~c"ERL_CRASH_DUMP_SECONDS", ~c"0"}]
      })

    true = :erpc.call(node, :code, :set_path, [:code.get_path()])
    env = Keyword.merge(Application.get_all_env(:ex_bashkit), Keyword.get(opts, :env, []))
    :ok = :erpc.call(node, Application, :put_all_env, [[ex_bashkit: env]])
    {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_bashkit])
    # Names registered from now on are seen by every node.
    :ok = :global.sync()
    :ok = :erpc.call(node, :global, :sync, [])
    # Servers of ids are placed by a ring every node agrees on.
    true = Ring.await(node, 10_000)
    true = :erpc.call(node, Ring, :await, [node(), 10_000])

    if Keyword.get(opts, :on_exit, true),
      do: ExUnit.Callbacks.on_exit(fn -> leave(peer, node) end)

    {peer, node}
  end

  # The peer stopped (if the test did not stop or kill it) and out of the
  # ring, so that the next test places ids as if it never was.
  defp leave(peer, node) do
    if Process.alive?(peer), do: :peer.stop(peer)
    gone(node)
  catch
    :exit, _ -> gone(node)
  end

  defp gone(node) do
    wait_for(fn -> {Ring.members(), Ring.settled?()} end, fn {members, settled?} ->
      node not in members and settled?
    end)
  end

  @doc """
  Starts a node running ex_bashkit that this VM is not connected to: it
  is driven through `:peer.call/4` over its standard I/O, connects to
  other nodes only when told to (`connect/2`) and stays cut off from
  those it is disconnected from, as in a network partition. Returns
  `{peer, node}`.
  """
  @spec start_detached() :: {pid(), node()}
  def start_detached do
    ExBashkit.Peer.ensure_distributed!()

    {:ok, peer, node} =
      :peer.start_link(%{
        name: :peer.random_name(~c"ex_bashkit_island"),
        host: ~c"127.0.0.1",
        longnames: true,
        connection: :standard_io,
        args: [
          ~c"-kernel",
          ~c"inet_dist_use_interface",
          ~c"{127,0,0,1}",
          ~c"-kernel",
          ~c"dist_auto_connect",
          ~c"never",
          ~c"-kernel",
          ~c"prevent_overlapping_partitions",
          ~c"false",
          ~c"-setcookie",
          Atom.to_charlist(Node.get_cookie())
        ],
        env: [{~c"ERL_CRASH_DUMP_SECONDS", ~c"0"}]
      })

    true = :peer.call(peer, :code, :set_path, [:code.get_path()])
    env = Application.get_all_env(:ex_bashkit)
    :ok = :peer.call(peer, Application, :put_all_env, [[ex_bashkit: env]])
    {:ok, _} = :peer.call(peer, Application, :ensure_all_started, [:ex_bashkit], 30_000)
    {peer, node}
  end

  @doc "Connects the node of `peer` to `other` (both detached) and waits for their ring."
  @spec connect(pid(), node()) :: :ok
  def connect(peer, other) do
    true = :peer.call(peer, :net_kernel, :connect_node, [other])
    true = :peer.call(peer, Ring, :await, [other, 10_000], 15_000)
    :ok
  end

  @doc "Cuts the node of `peer` off from `other`, and waits until its ring no longer has it."
  @spec disconnect(pid(), node()) :: :ok
  def disconnect(peer, other) do
    :peer.call(peer, :erlang, :disconnect_node, [other])
    [_] = wait_for(fn -> :peer.call(peer, Ring, :members, []) end, &(other not in &1))
    :ok
  end

  defp wait_for(read, until, tries \\ 1_000) do
    value = read.()

    cond do
      until.(value) -> value
      tries == 0 -> raise "gave up waiting: #{inspect(value)}"
      true -> Process.sleep(10) && wait_for(read, until, tries - 1)
    end
  end

  @doc "Ends `node` abruptly, as a crash would, and waits until it is down."
  @spec kill_node(node()) :: :ok
  def kill_node(node) do
    :ok = :net_kernel.monitor_nodes(true, node_type: :all)
    :erpc.cast(node, :erlang, :halt, [137, [flush: false]])

    receive do
      {:nodedown, ^node, _} -> :ok
    after
      10_000 -> raise "#{node} did not go down"
    end
  after
    :net_kernel.monitor_nodes(false, node_type: :all)
  end

  @doc "An id (`prefix` and a number) whose owner is `node` among `members`."
  @spec id_owned_by(node(), [node()], String.t()) :: String.t()
  def id_owned_by(node, members \\ Ring.members(), prefix \\ "conversation") do
    unique = System.unique_integer([:positive])

    Stream.iterate(1, &(&1 + 1))
    |> Stream.map(&"#{prefix}-#{unique}-#{&1}")
    |> Enum.find(&(Ring.owner(&1, members) == node))
  end
end
