defmodule ExBashkit.Server.Directory do
  @moduledoc false
  # The live servers of this node, for ExBashkit.Server.list/0: each server
  # writes its own row (one ETS insert when its state changes: a call
  # starts or ends, it hibernates or wakes), so listing 10,000 servers
  # reads a table and sends no message. This process only owns the table.
  use GenServer

  @table __MODULE__

  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @impl true
  def init(nil) do
    :ets.new(@table, [
      :named_table,
      :public,
      :set,
      write_concurrency: true,
      read_concurrency: true
    ])

    {:ok, nil}
  end

  @doc "Publishes the calling server's row: `{pid, id, isolation, state, started, last_call, os_pid}`."
  @spec publish(
          term(),
          atom(),
          :running | :idle | :hibernated,
          integer(),
          integer(),
          pos_integer() | nil
        ) ::
          true
  def publish(id, isolation, state, started, last_call, os_pid),
    do: :ets.insert(@table, {self(), id, isolation, state, started, last_call, os_pid})

  @doc "Takes the calling server's row out."
  @spec withdraw() :: true
  def withdraw, do: :ets.delete(@table, self())

  @doc "This node's live servers, as `ExBashkit.Server.list/1` answers them."
  @spec local() :: [map()]
  def local do
    now = System.monotonic_time(:millisecond)
    offset = System.time_offset(:millisecond)

    for {pid, id, isolation, state, started, last_call, os_pid} <- :ets.tab2list(@table),
        alive?(pid) do
      %{
        id: id,
        pid: pid,
        node: node(),
        isolation: isolation,
        state: state,
        age_ms: now - started,
        last_call: DateTime.from_unix!(last_call + offset, :millisecond),
        os_pid: os_pid,
        memory: os_pid && worker_memory(os_pid)
      }
    end
  end

  # A server killed without terminating leaves its row: dropped here.
  defp alive?(pid) do
    Process.alive?(pid) or (:ets.delete(@table, pid) and false)
  end

  # The worker's resident set, in bytes, from /proc (nil once it is gone).
  defp worker_memory(os_pid) do
    case File.read("/proc/#{os_pid}/statm") do
      {:ok, statm} ->
        [_size, resident | _] = String.split(statm, " ")
        String.to_integer(resident) * 4096

      {:error, _} ->
        nil
    end
  end
end
