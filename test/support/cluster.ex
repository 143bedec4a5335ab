defmodule ExBashkit.Test.Cluster do
  @moduledoc false
  # Real Erlang nodes for the distributed tests: visible peers on loopback,
  # with this project's code path and ex_bashkit started, linked to the
  # test process that starts them.

  @doc "Starts a connected node running ex_bashkit; returns `{peer, node}`."
  @spec start_node(keyword()) :: {pid(), node()}
  def start_node(opts \\ []) do
    ExBashkit.Peer.ensure_distributed!()
    name = :peer.random_name(Keyword.get(opts, :prefix, ~c"ex_bashkit_cluster"))

    {:ok, peer, node} =
      :peer.start_link(%{
        name: name,
        host: ~c"127.0.0.1",
        longnames: true,
        args: [~c"-kernel", ~c"inet_dist_use_interface", ~c"{127,0,0,1}"],
        env: [{~c"ERL_CRASH_DUMP_SECONDS", ~c"0"}]
      })

    true = :erpc.call(node, :code, :set_path, [:code.get_path()])
    env = Keyword.merge(Application.get_all_env(:ex_bashkit), Keyword.get(opts, :env, []))
    :ok = :erpc.call(node, Application, :put_all_env, [[ex_bashkit: env]])
    {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_bashkit])
    # Names registered from now on are seen by every node.
    :ok = :global.sync()
    :ok = :erpc.call(node, :global, :sync, [])
    {peer, node}
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
end
