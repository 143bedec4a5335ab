defmodule ExBashkit.Callbacks.Chains do
  @moduledoc false
  # Which sessions each process running a callback serves (innermost
  # last), by its pid: the deadlock check of a nested exec/2 looks up its
  # own process and those that started it as a Task (`$callers`). A public
  # ETS table, so a callback's process writes its own entry and no message
  # is involved; its server removes the entry when the process ends. This
  # process only owns the table: it takes no calls and ignores every
  # message (a callback's function runs arbitrary code, and nothing it
  # sends may bring the table down).

  use GenServer

  @table __MODULE__

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "Records that `pid` runs a callback for the sessions of `chain`."
  @spec put(pid(), [term()]) :: true
  def put(pid, chain), do: :ets.insert(@table, {pid, chain})

  @doc "Forgets `pid`'s entry."
  @spec delete(pid()) :: true
  def delete(pid), do: :ets.delete(@table, pid)

  @doc "The sessions the processes `pids` serve, in their order."
  @spec of([pid()]) :: [term()]
  def of(pids), do: for(pid <- pids, {_, chain} <- :ets.lookup(@table, pid), s <- chain, do: s)

  @impl true
  def init(nil) do
    :ets.new(@table, [
      :named_table,
      :public,
      :set,
      read_concurrency: true,
      write_concurrency: true
    ])

    {:ok, nil}
  end

  @impl true
  def handle_call(_any, _from, state), do: {:reply, {:error, :unsupported}, state}

  @impl true
  def handle_cast(_any, state), do: {:noreply, state}

  @impl true
  def handle_info(_any, state), do: {:noreply, state}
end
