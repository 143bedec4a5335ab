defmodule ExBashkit.Server.Placement do
  @moduledoc false
  # Where a server runs: the node it starts on, the name it registers
  # under, and its moves to another node. The server module is passed in
  # (`server`): it starts servers, and this module does not depend on it.

  alias ExBashkit.Server.{Names, State}
  alias ExBashkit.Store

  # The name of a server of get_or_start/2 is {:via, ExBashkit.Server.Owned,
  # id} (written as an atom: Owned depends on this module, not back).
  @owned :"Elixir.ExBashkit.Server.Owned"

  # How long a server that moved keeps forwarding calls sent to its pid.
  @linger_ms 5_000

  @doc """
  The node a server with these options starts on. A sandbox node needs
  this VM distributed: it is, from here on.
  """
  @spec target(map()) :: {:ok, node()} | {:error, String.t()}
  def target(%{isolation: :node}) do
    # A sandbox node's server reaches back to this node by its name.
    :ok = ExBashkit.Peer.ensure_distributed!()
    ExBashkit.SandboxNode.node()
  end

  def target(%{node: nil}), do: {:ok, node()}

  def target(%{node: nodes}) do
    connected = [node() | Node.list([:visible, :hidden])]

    case Enum.find(nodes, &(&1 in connected)) do
      nil -> {:error, "none of the nodes #{inspect(nodes)} is connected"}
      target -> {:ok, target}
    end
  end

  @doc """
  The arguments of a server's `init/1` started on `target` from this
  node. A server on this node registers here, under whatever name this
  node has then: it may not be distributed yet, and `node()` would go
  stale. One elsewhere registers through this node, with its store
  pinned here.
  """
  @spec init_arg(map(), node()) :: map()
  def init_arg(opts, target) do
    {registrar, opts} =
      if target == node(),
        do: {:here, opts},
        else: {node(), %{opts | store: Store.pin(opts.store)}}

    opts |> Map.drop([:node, :isolation]) |> Map.put(:registrar, registrar)
  end

  @doc "Starts `server` with `init_arg` under the server supervisor of `target`."
  @spec start_on(node(), module(), map()) :: {:ok, pid()} | {:error, term()}
  def start_on(target, server, init_arg) do
    spec = %{
      id: server,
      start: {server, :start_child_link, [init_arg]},
      restart: :transient
    }

    DynamicSupervisor.start_child({ExBashkit.Server.Supervisor, target}, spec)
  catch
    :exit, reason -> {:error, "cannot start a server on #{target}: #{down(reason)}"}
  end

  @doc "Why a server or its node cannot be reached, in words."
  @spec down(term()) :: String.t()
  def down({:nodedown, node}), do: "its node #{node} is down"
  def down(:noconnection), do: "its node went down"
  def down(:noproc), do: "no such process"
  def down({reason, {GenServer, :call, _}}), do: down(reason)
  def down(reason), do: "it exited (#{inspect(reason, limit: 5)})"

  @doc """
  Registers the calling server under `name`: `:ok`, or `{:stop, reason}`
  for its `init/1`. A server started elsewhere on request registers a
  global name through the node that asked (`registrar`); one started by
  `ExBashkit.Server.start_link/1` (no registrar) is registered already.
  """
  @spec register(GenServer.name() | nil, node() | :here | nil, pid() | nil) ::
          :ok | {:stop, term()}
  def register(nil, _registrar, _takeover), do: :ok
  # start_link/1 registered the name already.
  def register(_name, nil, _takeover), do: :ok

  # A server of get_or_start/2 registers with its id's owner: the node
  # that started it (its registrar: a sandbox node's host), or its own.
  def register({:via, @owned, id}, registrar, takeover) do
    at = if registrar in [nil, :here], do: node(), else: registrar

    reply =
      if at == node(),
        do: Names.register(id, self(), takeover),
        else: :erpc.call(at, Names, :register, [id, self(), takeover])

    case reply do
      :ok -> :ok
      {:already_started, pid} -> {:stop, {:already_started, pid}}
    end
  catch
    kind, reason -> {:stop, {:registration_failed, {kind, reason}}}
  end

  def register({:global, name}, registrar, takeover) when registrar != :here do
    if registrar == node(),
      do: register_global(name, self(), takeover),
      else: :erpc.call(registrar, __MODULE__, :register_global, [name, self(), takeover])
  catch
    kind, reason -> {:stop, {:registration_failed, {kind, reason}}}
  end

  def register({:global, name}, _registrar, takeover),
    do: register_global(name, self(), takeover)

  def register({:via, module, name}, _registrar, _takeover) do
    case module.register_name(name, self()) do
      :yes -> :ok
      :no -> {:stop, {:already_started, module.whereis_name(name)}}
    end
  end

  def register(name, _registrar, _takeover) when is_atom(name) do
    Process.register(self(), name)
    :ok
  rescue
    ArgumentError -> {:stop, {:already_started, Process.whereis(name)}}
  end

  @doc """
  Registers `pid` globally, from the node that started it: a sandbox node
  is hidden, and its own `:global` would keep the name to itself. A
  server that takes over from one that moved re-points the name.
  """
  @spec register_global(term(), pid(), pid() | nil) :: :ok | {:stop, term()}
  def register_global(name, pid, takeover) do
    case :global.whereis_name(name) do
      ^takeover when is_pid(takeover) ->
        :global.re_register_name(name, pid)
        :ok

      _ ->
        case :global.register_name(name, pid) do
          :yes -> :ok
          :no -> {:stop, {:already_started, :global.whereis_name(name)}}
        end
    end
  end

  @doc """
  Moves the calling server's session to a new `server` on `target`: the
  successor restores its snapshot and takes the name over, and this one
  forwards calls to it until it retires (`:retire`, a few seconds on).
  """
  @spec move(State.t(), node(), module()) ::
          {:ok, pid(), State.t()} | {:error, String.t(), State.t()}
  def move(state, target, _server) when target == node(), do: {:ok, self(), state}

  # A server of an id is handed over by the ring (handover/3), not moved.
  def move(%State{name: {:via, @owned, id}} = state, _target, _server) do
    {:error,
     "the server of #{inspect(id)} runs on its id's owner and moves only when the " <>
       "cluster's members change", state}
  end

  def move(%State{name: name} = state, _target, _server) when name != nil and not is_tuple(name),
    do: {:error, "a server registered under a local name (#{inspect(name)}) cannot move", state}

  def move(%State{name: {:via, _, _}} = state, _target, _server),
    do: {:error, "a server registered through :via cannot move", state}

  def move(state, target, server), do: relocate(state, target, server)

  @doc """
  Hands the server of an id (get_or_start/2's) over to `target`, its new
  owner, as `move/3` moves others. One whose capabilities cannot be
  rebuilt there (closures) stays, and answers `{:error, message}`.
  """
  @spec handover(State.t(), node(), module()) ::
          {:ok, pid(), State.t()} | {:error, String.t(), State.t()}
  def handover(state, owner, server) do
    ExBashkit.Server.Options.portable!(state.spec)

    case handover_target(state, owner) do
      {:ok, target} -> relocate(%{state | registrar: owner}, target, server)
      {:error, message} -> {:error, message, state}
    end
  rescue
    exception in ArgumentError -> {:error, Exception.message(exception), state}
  end

  # A server on a sandbox node (registered through its host) goes to a
  # sandbox node of the new owner; any other to the new owner itself.
  defp handover_target(%State{registrar: registrar}, owner) when registrar in [nil, :here],
    do: {:ok, owner}

  defp handover_target(%State{registrar: registrar}, owner) when registrar == node(),
    do: {:ok, owner}

  defp handover_target(_on_a_sandbox_node, owner) do
    :erpc.call(owner, ExBashkit.SandboxNode, :node, [], 60_000)
  catch
    kind, reason -> {:error, "no sandbox node on #{owner}: #{inspect({kind, reason}, limit: 5)}"}
  end

  defp relocate(state, target, server) do
    started = System.monotonic_time()

    with {:ok, state} <- State.wake(state),
         {:ok, snapshot} <- State.snapshot(state),
         {:ok, successor} <- start_successor(state, target, server),
         :ok <- adopt(successor, snapshot) do
      State.observe(:move, started, %{snapshot_bytes: byte_size(snapshot)}, %{
        id: state.id,
        from: node(),
        to: target
      })

      Process.send_after(self(), :retire, @linger_ms)
      {:ok, successor, %{state | session: nil, snapshot: nil, forward_to: successor}}
    else
      {:error, message, state} -> {:error, message, state}
      {:error, message} -> {:error, "cannot move to #{target}: #{message}", state}
    end
  end

  defp start_successor(state, target, server) do
    init_arg = %{
      id: state.id,
      name: state.name,
      session: state.spec,
      idle_after: state.idle_after,
      store: Store.pin(state.store),
      persist: state.persist,
      key: state.key,
      registrar: registrar(state, target),
      epoch: state.epoch,
      roster: state.roster,
      takeover: self()
    }

    case start_on(target, server, init_arg) do
      {:ok, pid} -> {:ok, pid}
      {:error, reason} when is_binary(reason) -> {:error, reason}
      {:error, reason} -> {:error, inspect(reason)}
    end
  end

  # Where the successor registers: where this one registered (an id's
  # server handed over: with its new owner, set by handover/3).
  defp registrar(%State{registrar: registrar}, _target) when registrar in [nil, :here], do: node()
  defp registrar(%State{registrar: registrar}, _target), do: registrar

  defp adopt(successor, snapshot) do
    case GenServer.call(successor, {:adopt, snapshot}, :infinity) do
      :ok ->
        :ok

      {:error, message} ->
        GenServer.stop(successor)
        {:error, message}
    end
  end
end
