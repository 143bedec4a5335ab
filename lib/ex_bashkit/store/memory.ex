defmodule ExBashkit.Store.Memory do
  @moduledoc """
  A store in an ETS table, on one node.

  Records live in memory, off every process heap, and go with the node
  that holds them. The table is on the node that asked for the server
  (`:node` below), not where the server runs: a session on a sandbox node
  that dies is restored from the host's memory.

  It fences (see "Fencing" in `ExBashkit.Store`): claims, fenced writes
  and deletes go through one process on the table's node. A deleted
  session's epoch stays as a tombstone, so that a server cut off from the
  others cannot write the session back, for `:tombstone_ttl_ms` (a day by
  default); expired ones are swept by that process, from a delete or a
  claim, at most once an hour (or once per `:tombstone_ttl_ms`, if
  shorter).

  ## Options

    * `:node` — the node whose table holds the records; by default the
      node that started the server.
    * `:tombstone_ttl_ms` — how long a deleted session's epoch is kept
      (default `86_400_000`, a day).
    * `:clock` — `{module, function, args}` answering the time in Unix
      milliseconds, for the tombstones (default
      `{System, :os_time, [:millisecond]}`).

      iex> store = {ExBashkit.Store.Memory, []}
      iex> {:ok, pid} = ExBashkit.Server.start(store: store, persist: :after_exec)
      iex> {:ok, _} = ExBashkit.Server.exec(pid, "echo kept > /f")
      iex> ExBashkit.Server.stop(pid)
      :ok
  """

  @behaviour ExBashkit.Store
  use GenServer

  alias ExBashkit.Store.Options

  @table __MODULE__
  # Each session's epoch (see "Fencing" in ExBashkit.Store): `{id, epoch,
  # expires_at}`, `expires_at` nil while the session lives and, once it
  # is deleted, when its tombstone goes (Unix ms).
  @epochs ExBashkit.Store.Memory.Epochs
  # Expired tombstones are swept at most this often (or once per TTL).
  @sweep_every_ms 3_600_000

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  # The state: when the table's tombstones were last swept (Unix ms, by
  # the clock of the call that swept them).
  @impl GenServer
  def init(nil) do
    :ets.new(@table, [:named_table, :public, read_concurrency: true])
    :ets.new(@epochs, [:named_table, :public])
    {:ok, nil}
  end

  # Claims, fenced writes and deletes, one at a time: each reads an epoch
  # and writes. `now` and `ttl` are the caller's (its store's options).
  @impl GenServer
  def handle_call({:claim, id, {now, ttl}}, _from, swept) do
    epoch = epoch(id, now) + 1
    :ets.insert(@epochs, {id, epoch, nil})
    {:reply, {:ok, epoch}, sweep_if_due(swept, now, ttl)}
  end

  def handle_call({:put, id, record, epoch, {now, _ttl}}, _from, swept) do
    if epoch(id, now) > epoch do
      {:reply, {:error, :stale}, swept}
    else
      :ets.insert(@epochs, {id, epoch, nil})
      :ets.insert(@table, {id, record})
      {:reply, :ok, swept}
    end
  end

  def handle_call({:delete, id, {now, ttl}}, _from, swept) do
    :ets.delete(@table, id)

    # Deleted again: the fence lasts from the last delete.
    with [{^id, epoch, _}] <- :ets.lookup(@epochs, id),
         do: :ets.insert(@epochs, {id, epoch, now + ttl})

    {:reply, :ok, sweep_if_due(swept, now, ttl)}
  end

  # An expired tombstone counts as no epoch at all.
  defp epoch(id, now) do
    case :ets.lookup(@epochs, id) do
      [{_, epoch, nil}] -> epoch
      [{_, epoch, expires_at}] when expires_at >= now -> epoch
      _ -> 0
    end
  end

  defp sweep_if_due(swept, now, ttl) do
    # A clock that went back sweeps too, rather than wait for it.
    if swept == nil or now < swept or now - swept >= min(ttl, @sweep_every_ms) do
      :ets.select_delete(@epochs, [
        {{:_, :_, :"$1"}, [{:andalso, {:"/=", :"$1", nil}, {:<, :"$1", now}}], [true]}
      ])

      now
    else
      swept
    end
  end

  @doc false
  @spec validate!(keyword()) :: keyword()
  def validate!(opts) do
    # Without :node the table is the one of the node that starts the
    # server, named only once the server leaves it (`pin/1`): this node
    # may not be distributed yet, and its name changes when it becomes so.
    node =
      case Keyword.get(opts, :node) do
        nil ->
          []

        node when is_atom(node) ->
          [node: node]

        other ->
          raise ArgumentError,
                "ExBashkit.Store.Memory :node must be a node, got: #{inspect(other)}"
      end

    node ++ Options.validate!(opts, "ExBashkit.Store.Memory", [:node])
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
  def delete(opts, id), do: serialized(opts, {:delete, id, clock(opts)})

  @impl ExBashkit.Store
  def claim(opts, id), do: serialized(opts, {:claim, id, clock(opts)})

  @impl ExBashkit.Store
  def put(opts, id, record, epoch), do: serialized(opts, {:put, id, record, epoch, clock(opts)})

  # The caller's time and tombstone TTL, for the table's process.
  defp clock(opts) do
    {Options.now(opts), Options.ttl(opts)}
  end

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
