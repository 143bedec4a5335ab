defmodule ExBashkit.SandboxNode do
  @moduledoc false
  # The VMs servers with `isolation: :node` run on, each under an OS memory
  # limit: guides/sandbox_per_conversation.md ("Sandbox nodes") tells how
  # they work and are configured.

  use GenServer

  alias ExBashkit.Peer.Pool

  @defaults [count: 1, max_memory_bytes: 2 * 1024 * 1024 * 1024, nice: 10]

  @doc """
  A sandbox node to place a server on: `{:ok, node}`, booting one if
  fewer than `:count` run, or `{:error, message}`.
  """
  @spec node() :: {:ok, node()} | {:error, String.t()}
  def node do
    GenServer.call(owner(), :node, 60_000)
  catch
    :exit, reason -> {:error, "no sandbox node: #{inspect(reason, limit: 5)}"}
  end

  @doc "The sandbox nodes running now."
  @spec nodes() :: [node()]
  def nodes do
    case Process.whereis(__MODULE__) do
      nil -> []
      pid -> GenServer.call(pid, :nodes)
    end
  end

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  # Started under this library's supervisor on first use.
  defp owner do
    ExBashkit.Children.started(__MODULE__) ||
      raise "ExBashkit's sandbox nodes need the :ex_bashkit application running"
  end

  @impl true
  def init(nil) do
    Process.flag(:trap_exit, true)
    {:ok, %{nodes: %{}, next: 0}}
  end

  @impl true
  def handle_call(:nodes, _from, state), do: {:reply, Map.values(state.nodes), state}

  def handle_call(:node, _from, state) do
    config = config!()
    # A node that just died may not have been forgotten yet.
    connected = Node.list([:visible, :hidden])
    state = %{state | nodes: Map.filter(state.nodes, fn {_, node} -> node in connected end)}

    if map_size(state.nodes) < config[:count] do
      case boot(config) do
        {:ok, {controller, node}} ->
          Process.link(controller)
          {:reply, {:ok, node}, %{state | nodes: Map.put(state.nodes, controller, node)}}

        {:error, reason} ->
          {:reply, {:error, "cannot boot a sandbox node: #{inspect(reason, limit: 5)}"}, state}
      end
    else
      nodes = state.nodes |> Map.values() |> Enum.sort()

      {:reply, {:ok, Enum.at(nodes, rem(state.next, length(nodes)))},
       %{state | next: state.next + 1}}
    end
  end

  # A sandbox node that died (its memory limit, say) is forgotten; the
  # next request boots another.
  @impl true
  def handle_info({:EXIT, controller, _reason}, state),
    do: {:noreply, %{state | nodes: Map.delete(state.nodes, controller)}}

  def handle_info(_message, state), do: {:noreply, state}

  # Stopped by the supervisor: the nodes are stopped with it, through their
  # controllers (which do not expect an exit signal from their owner).
  @impl true
  def terminate(_reason, state) do
    for controller <- Map.keys(state.nodes) do
      Process.unlink(controller)
      catch_exit(fn -> :peer.stop(controller) end)
    end

    :ok
  end

  defp catch_exit(fun) do
    fun.()
  catch
    :exit, _ -> :ok
  end

  defp boot(config) do
    ExBashkit.Peer.ensure_distributed!()
    erl = System.find_executable("erl") || Path.join(:code.root_dir(), "bin/erl")
    # $0 is erl, "$@" the arguments :peer gives it.
    wrapper = ~s(exec nice -n #{config[:nice]} "$0" "$@")

    extra = %{
      prefix: ~c"ex_bashkit_sandbox",
      exec: {~c"/bin/sh", [~c"-c", String.to_charlist(wrapper), String.to_charlist(erl)]},
      env: [{~c"ERL_CRASH_DUMP_SECONDS", ~c"0"}]
    }

    with {:ok, {controller, node} = peer} <- Pool.boot(extra) do
      try do
        :ok = :erpc.call(node, Application, :put_all_env, [[ex_bashkit: host_config()]])
        {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_bashkit])
        :ok = limit_memory(node, config[:max_memory_bytes])
        {:ok, peer}
      catch
        kind, reason ->
          Pool.stop({controller, node})
          {:error, {kind, reason}}
      end
    end
  end

  # The VM reserves address space it never touches (1 GiB of stack per
  # interpreter thread, the BEAM's literal area), so the limit is set once
  # the node is warm: what it has reserved, plus what it may grow by.
  defp limit_memory(node, bytes) do
    {:ok, _} = :erpc.call(node, ExBashkit, :exec, ["true"])
    :ok = :erpc.call(node, ExBashkit, :warm_up, [])
    os_pid = :erpc.call(node, System, :pid, [])
    [_, kb] = Regex.run(~r/VmSize:\s+(\d+) kB/, File.read!("/proc/#{os_pid}/status"))
    limit = String.to_integer(kb) * 1024 + bytes

    case System.find_executable("prlimit") do
      nil ->
        raise "prlimit (util-linux) is needed to limit a sandbox node's memory"

      prlimit ->
        {_, 0} = System.cmd(prlimit, ["--pid", os_pid, "--as=#{limit}:#{limit}"])
        :ok
    end
  end

  defp host_config, do: Application.get_all_env(:ex_bashkit) |> Keyword.delete(:sandbox_nodes)

  defp config! do
    config = Keyword.merge(@defaults, Application.get_env(:ex_bashkit, :sandbox_nodes, []))

    valid? =
      is_integer(config[:count]) and config[:count] > 0 and
        is_integer(config[:max_memory_bytes]) and config[:max_memory_bytes] >= 1024 * 1024 and
        config[:nice] in 0..19

    unless valid? do
      raise ArgumentError,
            "config :ex_bashkit, :sandbox_nodes must have a positive :count, " <>
              ":max_memory_bytes of at least 1 MiB and :nice in 0..19, got: #{inspect(config)}"
    end

    config
  end
end
