defmodule ExBashkit.Test.Remote do
  @moduledoc false
  # Runs in another VM (a peer node) to show snapshots are plain bytes.

  @doc "Restores `bytes` into a fresh session there and runs `script`."
  @spec restore_and_run(binary(), String.t()) :: {:ok, binary()} | {:error, String.t()}
  def restore_and_run(bytes, script) do
    session = ExBashkit.Session.new()

    with {:ok, session} <- ExBashkit.Session.restore(session, bytes),
         {:ok, result} <- ExBashkit.Session.exec(session, script) do
      {:ok, result.stdout}
    end
  end

  @doc "The OS pid of the VM this runs in."
  @spec os_pid() :: String.t()
  def os_pid, do: System.pid()
end
