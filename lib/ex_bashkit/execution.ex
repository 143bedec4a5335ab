defmodule ExBashkit.Execution do
  @moduledoc false
  # Waits for a script queued by a NIF. The script runs on the NIF's own
  # threads and answers with `{tag, outcome}`; while it runs the caller sits
  # in `receive`, holding no scheduler. The NIF monitors the caller, so a
  # caller that dies cancels its script.

  alias ExBashkit.Result

  @spec await({:ok, reference()} | {:error, String.t()}, reference()) ::
          {:ok, Result.t()} | {:error, String.t()}
  def await({:error, _message} = error, _tag), do: error

  def await({:ok, _handle}, tag) do
    receive do
      {^tag, {:ok, {stdout, stderr, exit_code, truncated}}} ->
        {:ok, %Result{stdout: stdout, stderr: stderr, exit_code: exit_code, truncated: truncated}}

      {^tag, {:error, message}} ->
        {:error, message}
    end
  end

  @doc false
  def script!(script) when is_binary(script), do: script

  def script!(other) do
    raise ArgumentError, "script must be a binary, got: #{inspect(other)}"
  end
end
