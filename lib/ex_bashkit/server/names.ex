defmodule ExBashkit.Server.Names do
  @moduledoc false
  # The servers of the ids this node owns (see ExBashkit.Server.Ring), by
  # id: an ETS table each server writes its own row into when it starts
  # (`register/3`, one `insert_new`), read without a message by every
  # lookup. This process owns the table and monitors each registered pid,
  # so that a server that dies without terminating (killed, its node or
  # sandbox node gone) leaves no row. A row may name a pid on another node:
  # a server on a sandbox node, or one that was handed over to a new owner
  # and is still found here by callers whose view of the ring is late.
  use GenServer

  @table __MODULE__

  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "The pid registered for `id` on this node, or `nil`."
  @spec lookup(term()) :: pid() | nil
  def lookup(id) do
    case :ets.lookup(@table, id) do
      [{_, pid}] -> pid
      [] -> nil
    end
  end

  @doc """
  Registers `pid` for `id` on this node: `:ok`, or `{:already_started,
  pid}` for the live server that has it. A server that takes over from
  `takeover` (a handover) replaces its row; a row whose local pid is dead
  (its monitor not yet seen) is replaced too.
  """
  @spec register(term(), pid(), pid() | nil) :: :ok | {:already_started, pid()}
  def register(id, pid, takeover \\ nil) do
    if :ets.insert_new(@table, {id, pid}) do
      watch(id, pid)
    else
      case lookup(id) do
        ^pid ->
          :ok

        existing when existing == takeover or existing == nil ->
          :ets.insert(@table, {id, pid})
          watch(id, pid)

        existing ->
          if node(existing) == node() and not Process.alive?(existing),
            do: :ets.insert(@table, {id, pid}) && watch(id, pid),
            else: {:already_started, existing}
      end
    end
  end

  @doc "Points `id` at `successor` if it still names `pid` (a handover done)."
  @spec forward(term(), pid(), pid()) :: :ok
  def forward(id, pid, successor) do
    if :ets.select_replace(@table, [{{id, pid}, [], [{{{:const, id}, successor}}]}]) == 1,
      do: watch(id, successor)

    :ok
  end

  @doc "Takes `id`'s row out if it names `pid`."
  @spec unregister(term(), pid()) :: :ok
  def unregister(id, pid) do
    :ets.delete_object(@table, {id, pid})
    :ok
  end

  @doc "Every `{id, pid}` registered on this node."
  @spec entries() :: [{term(), pid()}]
  def entries, do: :ets.tab2list(@table)

  defp watch(id, pid) do
    send(__MODULE__, {:watch, id, pid})
    :ok
  end

  @impl true
  def init(nil) do
    # Read by every lookup, written by each server as it starts.
    :ets.new(@table, [:named_table, :public, read_concurrency: true, write_concurrency: true])
    # The monitors: ref => id.
    {:ok, %{}}
  end

  @impl true
  def handle_info({:watch, id, pid}, watched),
    do: {:noreply, Map.put(watched, Process.monitor(pid), id)}

  def handle_info({:DOWN, ref, :process, pid, _reason}, watched) do
    {id, watched} = Map.pop(watched, ref)
    :ets.delete_object(@table, {id, pid})
    {:noreply, watched}
  end
end
