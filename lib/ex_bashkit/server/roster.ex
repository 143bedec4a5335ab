defmodule ExBashkit.Server.Roster do
  @moduledoc false
  # Eager recovery (`recover: :eager`): the servers of ids that start
  # again as soon as their node's death is noticed, not on their next use.
  # Each such server enlists, with its start options, on its id's backup:
  # the member that ranks second for the id (ExBashkit.Server.Ring), which
  # is the id's owner once the first is gone. When members leave, each
  # node starts the enlisted servers of the departed nodes (through the
  # owner, in case the members changed otherwise too). The ring asks each
  # server to enlist again after every change of members, since an id's
  # backup may change with them. This process follows the ring's `:pg`
  # scope itself, and knows the servers only by their messages.

  use GenServer

  alias ExBashkit.Server.{Names, Owned, Ring}

  require Logger

  @table __MODULE__

  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc """
  Enlists the server of `id` (started by `server` with checked `opts`)
  on the id's backup.
  """
  @spec enlist(term(), map(), module()) :: :ok
  def enlist(id, opts, server) do
    with backup when backup != nil <- Ring.backup(id) do
      send({__MODULE__, backup}, {:enlist, id, node(), {opts, server}})
    end

    :ok
  end

  @doc "Takes the server of `id` off the roster: it stopped for good."
  @spec delist(term()) :: :ok
  def delist(id) do
    with backup when backup != nil <- Ring.backup(id) do
      send({__MODULE__, backup}, {:delist, id, node()})
    end

    :ok
  end

  @doc "How many servers are enlisted here (for tests)."
  @spec size() :: non_neg_integer()
  def size, do: :ets.info(@table, :size)

  @impl true
  def init(nil) do
    :ets.new(@table, [:named_table, :protected, :set])
    {ref, _groups} = :pg.monitor_scope(Ring.scope())
    {:ok, ref}
  end

  # Members left: their enlisted servers start again. Members came or
  # went: the servers here enlist again, where their backups are now.
  @impl true
  def handle_info({ref, change, _group, pids}, ref) do
    if change == :leave, do: departed(Enum.map(pids, &node/1))
    for {_id, pid} <- Names.entries(), node(pid) == node(), do: send(pid, :enlist)
    {:noreply, ref}
  end

  @impl true
  def handle_info({:enlist, id, owner, opts}, state) do
    :ets.insert(@table, {id, owner, opts})
    {:noreply, state}
  end

  def handle_info({:delist, id, owner}, state) do
    :ets.match_delete(@table, {id, owner, :_})
    {:noreply, state}
  end

  def handle_info(_other, state), do: {:noreply, state}

  defp departed(nodes) do
    for node <- Enum.uniq(nodes) -- [node()],
        {id, ^node, {opts, server}} <- :ets.match_object(@table, {:_, node, :_}) do
      :ets.delete(@table, id)
      restart(id, opts, server)
    end
  end

  defp restart(id, opts, server) do
    Task.Supervisor.start_child(ExBashkit.Server.TaskSupervisor, fn ->
      case Owned.get_or_start(id, opts, server) do
        {:ok, _pid} ->
          :ok

        {:error, reason} ->
          Logger.warning("ExBashkit.Server: #{inspect(id)} did not restart: #{inspect(reason)}")
      end
    end)
  end
end
