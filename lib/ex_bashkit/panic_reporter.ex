defmodule ExBashkit.PanicReporter do
  @moduledoc false
  # Logs panics inside the interpreter. The NIF's panic hook keeps them off
  # the VM's stderr (where script bytes could inject terminal escapes or
  # flood it) and sends them here already escaped, cut short and
  # rate-limited: `{:ex_bashkit_panic, text, suppressed_since_last}`.

  use GenServer
  require Logger

  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @impl true
  def init(nil) do
    :ok = ExBashkit.Native.set_panic_reporter(self())
    {:ok, nil}
  end

  @impl true
  def handle_info({:ex_bashkit_panic, text, suppressed}, state) do
    more = if suppressed > 0, do: " (#{suppressed} more suppressed before this one)", else: ""

    Logger.warning(
      "ex_bashkit: a command panicked inside the interpreter and was stopped; " <>
        "the session lives on#{more}: #{text}"
    )

    {:noreply, state}
  end
end
