defmodule ExBashkit.Server.Owned do
  @moduledoc false
  # The servers `ExBashkit.Server.get_or_start/2` starts: one per id,
  # running on the id's owner (ExBashkit.Server.Ring) and registered there
  # (ExBashkit.Server.Names). A node asked about an id it does not own
  # asks the owner, with one `:erpc` call; no lock, no cluster-wide
  # registration. The server module is passed in: it starts servers, and
  # this module does not depend on it.

  import Kernel, except: [send: 2]

  alias ExBashkit.Server.{Names, Options, Placement, Ring}
  alias ExBashkit.Store

  # How long a call to another node waits before it answers an error.
  @timeout 30_000

  @doc "The name a server of `id` is registered under."
  @spec name(term()) :: {:via, module(), term()}
  def name(id), do: {:via, __MODULE__, id}

  # How a request is routed: how often it may still be sent on (a node
  # whose view of the ring differs from the caller's sends it on once),
  # the owners found down (left out, as the ring will leave them out once
  # it notices), and the members as the node that sent it sees them.
  @first %{hops: 1, gone: [], seen: nil}

  @doc "The server of `id`, started with `opts` (checked options) on the id's owner if none runs."
  @spec get_or_start(term(), map(), module(), map()) :: {:ok, pid()} | {:error, term()}
  def get_or_start(id, opts, server, route \\ @first) do
    case owner(id, route) do
      owner when owner == node() ->
        case find(id, route.seen) do
          nil -> start(id, opts, server)
          pid -> {:ok, pid}
        end

      owner ->
        Options.portable!(opts.session)
        pinned = %{opts | store: Store.pin(opts.store)}

        case remote(owner, __MODULE__, :get_or_start, [id, pinned, server, onward(route)]) do
          :noconnection -> get_or_start(id, opts, server, down(route, owner))
          reply -> reply
        end
    end
  end

  @doc "The pid of `id`'s server, asked of its owner, or `nil`."
  @spec whereis(term(), map()) :: pid() | nil
  def whereis(id, route \\ @first) do
    case owner(id, route) do
      owner when owner == node() ->
        find(id, route.seen)

      owner ->
        case remote(owner, __MODULE__, :whereis, [id, onward(route)]) do
          pid when is_pid(pid) -> pid
          :noconnection -> whereis(id, down(route, owner))
          _nil_or_error -> nil
        end
    end
  end

  # A request sent on once is served where it arrives.
  defp owner(_id, %{hops: 0}), do: node()
  defp owner(id, %{gone: []}), do: Ring.owner(id)
  defp owner(id, %{gone: gone}), do: Ring.owner(id, Ring.members() -- gone)

  defp onward(route), do: %{route | hops: route.hops - 1, seen: route.seen || Ring.members()}
  defp down(route, owner), do: %{route | gone: [owner | route.gone]}

  # This node's server of `id`. While the ring settles after a change of
  # members, or when the asking node sees other members than this one
  # (a change not yet known here), a server another member has not
  # handed over yet is looked for there.
  defp find(id, seen) do
    case Names.lookup(id) do
      nil ->
        members = Ring.members()

        if Ring.settled?() and seen in [nil, members],
          do: nil,
          else: find_elsewhere(id, Enum.uniq(members ++ (seen || [])) -- [node()])

      pid ->
        pid
    end
  end

  defp find_elsewhere(id, nodes) do
    nodes
    |> :erpc.multicall(Names, :lookup, [id], @timeout)
    |> Enum.find_value(fn
      {:ok, pid} when is_pid(pid) -> pid
      _ -> nil
    end)
  end

  defp start(id, opts, server) do
    opts = %{opts | id: id, name: name(id)}

    with {:ok, target} <- Placement.target(opts) do
      # What a backup node restarts it with, if it recovers eagerly.
      roster = if opts.recover == :eager and opts.store != nil and target == node(), do: opts
      init_arg = opts |> Placement.init_arg(target) |> Map.put(:roster, roster)

      case Placement.start_on(target, server, init_arg) do
        {:error, {:already_started, pid}} -> {:ok, pid}
        other -> other
      end
    end
  end

  ## The name's callbacks, for `GenServer` and `:via` users

  @doc false
  @spec whereis_name(term()) :: pid() | :undefined
  def whereis_name(id), do: whereis(id) || :undefined

  @doc false
  @spec send(term(), term()) :: pid()
  def send(id, message) do
    case whereis(id) do
      nil -> exit({:badarg, {id, message}})
      pid -> Kernel.send(pid, message) && pid
    end
  end

  @doc "Registers `pid` for `id` with the id's owner: `:yes` or `:no`."
  @spec register_name(term(), pid()) :: :yes | :no
  def register_name(id, pid) do
    owner = Ring.owner(id)

    reply =
      if owner == node(),
        do: Names.register(id, pid),
        else: remote(owner, Names, :register, [id, pid, nil])

    if reply == :ok, do: :yes, else: :no
  end

  @doc "Takes `id`'s registration out, wherever it is."
  @spec unregister_name(term()) :: :ok
  def unregister_name(id) do
    case whereis(id) do
      nil -> :ok
      pid -> remote(Ring.owner(id), Names, :unregister, [id, pid])
    end

    :ok
  end

  # What the owner answers; `:noconnection` when it is down. What it
  # raised (an ArgumentError for a bad option) is raised here.
  defp remote(owner, module, function, args) when owner == node(),
    do: apply(module, function, args)

  defp remote(owner, module, function, args) do
    :erpc.call(owner, module, function, args, @timeout)
  catch
    :error, {:exception, exception, stacktrace} ->
      reraise exception, stacktrace

    :error, {:erpc, :noconnection} ->
      :noconnection

    kind, reason ->
      {:error, "the owner of this id, #{owner}, did not answer: #{inspect({kind, reason})}"}
  end
end
