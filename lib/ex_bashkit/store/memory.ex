defmodule ExBashkit.Store.Memory do
  @moduledoc """
  A store in an ETS table, on one node.

  Records live in memory, off every process heap, and go with the node
  that holds them. The table is on the node that asked for the server
  (`:node` below), not where the server runs: a session on a sandbox node
  that dies is restored from the host's memory.

  It fences (see "Fencing" in `ExBashkit.Store`): claims and fenced
  writes go through one process on the table's node.

  ## Options

    * `:node` — the node whose table holds the records; by default the
      node that started the server.

      iex> store = {ExBashkit.Store.Memory, []}
      iex> {:ok, pid} = ExBashkit.Server.start(store: store, persist: :after_exec)
      iex> {:ok, _} = ExBashkit.Server.exec(pid, "echo kept > /f")
      iex> ExBashkit.Server.stop(pid)
      :ok
  """

  @behaviour ExBashkit.Store
  use GenServer

  @table __MODULE__
  # Each session's epoch (see "Fencing" in ExBashkit.Store).
  @epochs ExBashkit.Store.Memory.Epochs

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @impl GenServer
  def init(nil) do
    :ets.new(@table, [:named_table, :public, read_concurrency: true])
    :ets.new(@epochs, [:named_table, :public])
    {:ok, nil}
  end

  # Claims and fenced writes, one at a time: each reads an epoch and writes.
  @impl GenServer
  def handle_call({:claim, id}, _from, nil) do
    {:reply, {:ok, :ets.update_counter(@epochs, id, 1, {id, 0})}, nil}
  end

  def handle_call({:put, id, record, epoch}, _from, nil) do
    if epoch(id) > epoch do
      {:reply, {:error, :stale}, nil}
    else
      :ets.insert(@epochs, {id, epoch})
      :ets.insert(@table, {id, record})
      {:reply, :ok, nil}
    end
  end

  defp epoch(id) do
    case :ets.lookup(@epochs, id) do
      [{_, epoch}] -> epoch
      [] -> 0
    end
  end

  @doc false
  @spec validate!(keyword()) :: keyword()
  def validate!(opts) do
    # Without :node the table is the one of the node that starts the
    # server, named only once the server leaves it (`pin/1`): this node
    # may not be distributed yet, and its name changes when it becomes so.
    case Keyword.get(opts, :node) do
      nil ->
        []

      node when is_atom(node) ->
        [node: node]

      other ->
        raise ArgumentError, "ExBashkit.Store.Memory :node must be a node, got: #{inspect(other)}"
    end
  end

  @doc false
  # The options of a server that starts on, or moves to, another node: the
  # table stays on this one, under the name it has now.
  @spec pin(keyword()) :: keyword()
  def pin(opts), do: Keyword.put_new(opts, :node, node())

  @impl ExBashkit.Store
  def put(opts, id, record), do: on(opts, :insert, [{id, record}])

  @impl ExBashkit.Store
  def fetch(opts, id) do
    case on(opts, :lookup, [id]) do
      [{_, record}] -> {:ok, record}
      [] -> :error
    end
  end

  @impl ExBashkit.Store
  def delete(opts, id), do: on(opts, :delete, [id])

  @impl ExBashkit.Store
  def claim(opts, id), do: serialized(opts, {:claim, id})

  @impl ExBashkit.Store
  def put(opts, id, record, epoch), do: serialized(opts, {:put, id, record, epoch})

  defp serialized(opts, request),
    do: GenServer.call({__MODULE__, Keyword.get(opts, :node, node())}, request, 15_000)

  defp on(opts, function, args) do
    result =
      case Keyword.get(opts, :node, node()) do
        node when node == node() -> apply(:ets, function, [@table | args])
        node -> :erpc.call(node, :ets, function, [@table | args], 15_000)
      end

    if result == true, do: :ok, else: result
  end
end
