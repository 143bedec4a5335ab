defmodule ExBashkit.Children do
  @moduledoc false
  # Children of this library's supervisor that start on first use (the
  # peer pool, the sandbox nodes' owner), so a VM that never needs them
  # runs none.

  @doc """
  The pid of `module`, registered under its own name: started under
  `ExBashkit.Supervisor` (as `{module, []}`) if it is not running, or
  `nil` when this library's application is not running.
  """
  @spec started(module()) :: pid() | nil
  def started(module) do
    with nil <- Process.whereis(module),
         supervisor when is_pid(supervisor) <- Process.whereis(ExBashkit.Supervisor) do
      case Supervisor.start_child(supervisor, {module, []}) do
        {:ok, pid} -> pid
        {:error, {:already_started, pid}} -> pid
        {:error, :already_present} -> restart(supervisor, module)
        {:error, _} -> Process.whereis(module)
      end
    end
  end

  # A child that stopped and was not restarted keeps its spec.
  defp restart(supervisor, module) do
    case Supervisor.restart_child(supervisor, module) do
      {:ok, pid} -> pid
      {:error, {:already_started, pid}} -> pid
      {:error, _} -> Process.whereis(module)
    end
  end
end
