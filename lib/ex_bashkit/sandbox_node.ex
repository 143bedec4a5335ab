defmodule ExBashkit.SandboxNode do
  @moduledoc """
  Local VMs that run hostile sessions, each under an OS memory limit.

  Inside one VM some resources cannot be bounded by a NIF: a script, a
  builtin or a backend that exhausts the machine's memory takes the whole
  VM with it. A server started with `isolation: :node` runs on a sandbox
  node instead: a VM of its own on this machine, started and owned by
  this library, whose address space is capped by the kernel
  (`RLIMIT_AS`, set with `prlimit`) and whose CPU priority is lowered
  (`nice`). A runaway
  script there kills that VM alone. Its callers get `{:error, message}`;
  the next `ExBashkit.Server.get_or_start/2` of the session boots a fresh
  sandbox node and restores the session from its store's last record
  (the default store of an isolated server is `ExBashkit.Store.Memory`
  on the host, which the sandbox node's death does not touch).

  Sandbox nodes are booted on first use, like `ExBashkit.Peer`'s VMs:
  distribution on loopback only, hidden, the host's code path, none of the
  host's environment, no crash dump, and halted when the host goes.

  ## Configuration

      config :ex_bashkit, :sandbox_nodes,
        count: 1,                          # VMs sessions are spread over
        max_memory_bytes: 2_147_483_648,   # what each VM may grow by
        nice: 10                           # CPU priority (0..19)

  The kernel limits address space, which a VM reserves well beyond what it
  touches (1 GiB of stack per interpreter thread, the BEAM's literal
  area). So the limit is set once the node has booted and run a script:
  what it has reserved then, plus `:max_memory_bytes`. Threads that start
  later (bashkit's parser pool, 64 MiB of stack each) draw on the same
  allowance. The library's `config :ex_bashkit` (memory budget, timeout
  ceiling) applies on the sandbox nodes too.

  CPython (`python: :cpython`) is loaded before the limit is set
  (`ExBashkit.warm_up/0`): its engine reserves address space for 512
  guest instances up front (about 515 GiB, none of it touched), which no
  limit set afterwards could hold. The pages a Python call touches come
  out of that reservation, so the node's limit does not count them: each
  call is bounded by `:max_python_memory_bytes` instead (see
  `guides/python.md`), and a node by that times its concurrent calls.
  """

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
    case Process.whereis(__MODULE__) do
      nil ->
        case Supervisor.start_child(ExBashkit.Supervisor, __MODULE__) do
          {:ok, pid} -> pid
          {:error, {:already_started, pid}} -> pid
          {:error, :already_present} -> restart()
        end

      pid ->
        pid
    end
  end

  defp restart do
    case Supervisor.restart_child(ExBashkit.Supervisor, __MODULE__) do
      {:ok, pid} -> pid
      {:error, {:already_started, pid}} -> pid
    end
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
