defmodule ExBashkit.Execution do
  @moduledoc false
  # Waits for a script queued by a NIF. The script runs on the NIF's own
  # threads and answers with `{tag, outcome}`; while it runs the caller sits
  # in `receive`, holding no scheduler. The NIF monitors the caller, so a
  # caller that dies cancels its script.

  alias ExBashkit.Result

  @doc "The outcome of a script, as a `%Result{}`."
  @spec await({:ok, reference()} | {:error, String.t()}, reference()) ::
          {:ok, Result.t()} | {:error, String.t()}
  def await(queued, tag) do
    case reply(queued, tag) do
      {:ok, {stdout, stderr, exit_code, truncated}} ->
        {:ok, %Result{stdout: stdout, stderr: stderr, exit_code: exit_code, truncated: truncated}}

      {:error, message} ->
        {:error, message}
    end
  end

  @doc "The `{:ok, value}` or `{:error, message}` of any queued job."
  @spec reply({:ok, reference()} | {:error, String.t()} | reference(), reference()) ::
          {:ok, term()} | {:error, String.t()}
  def reply({:error, _message} = error, _tag), do: error
  def reply(_handle, tag), do: receive_spinning(tag, deadline())

  # Most scripts answer within microseconds. Waking a scheduler that went to
  # sleep costs more than that once the VM has any port or socket open (the
  # sleeping scheduler waits in the poll set): 14 µs became 30 µs per exec
  # here. So the caller stays runnable for a short while, yielding to every
  # other process, before it blocks.
  @spin_us 30

  @doc false
  @spec deadline() :: integer()
  def deadline,
    do: System.monotonic_time() + System.convert_time_unit(@spin_us, :microsecond, :native)

  defp receive_spinning(tag, deadline) do
    receive do
      {^tag, outcome} -> outcome
    after
      0 ->
        if System.monotonic_time() < deadline do
          :erlang.yield()
          receive_spinning(tag, deadline)
        else
          receive do
            {^tag, outcome} -> outcome
          end
        end
    end
  end

  @doc false
  def script!(script) when is_binary(script), do: script

  def script!(other) do
    raise ArgumentError, "script must be a binary, got: #{inspect(other)}"
  end
end
