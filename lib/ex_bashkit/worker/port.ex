defmodule ExBashkit.Worker.Port do
  @moduledoc false
  # Opening and closing the Port of a worker process, for everything that
  # starts one: the zygote, the spares' keeper and a session's owner.

  @doc "Starts a worker from `executable` with `args`, owned by the calling process."
  @spec open(String.t(), [String.t()]) :: port()
  def open(executable, args) do
    Port.open({:spawn_executable, executable}, [
      :binary,
      {:args, args},
      # A byte stream: the owner frames it itself, so that it can refuse a
      # frame by its announced size before reading it
      # (ExBashkit.Worker.Protocol); `{:packet, 4}` reads any size whole.
      :stream,
      :exit_status,
      :use_stdio,
      # mimalloc commits its arenas lazily: an idle worker keeps ~2.5 MB
      # private instead of ~10 MB.
      env: [{~c"MIMALLOC_ARENA_EAGER_COMMIT", ~c"0"}]
    ])
  end

  @doc """
  Closes a worker's Port, which a worker that just died (SIGKILLed, or
  exited on its own) may have closed already.
  """
  @spec close(port()) :: :ok
  def close(port) do
    Port.close(port)
    :ok
  rescue
    ArgumentError -> :ok
  end
end
