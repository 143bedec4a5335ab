defmodule ExBashkit.Worker.Cgroups do
  @moduledoc false
  # Removes the cgroup directories of workers that are gone
  # (native/ex_bashkit/src/hardening/cgroup.rs makes them). A cgroup can
  # only be removed once its last process has exited, which after a SIGKILL
  # takes a moment, so removals are retried for a while. The first removal
  # under a directory also sweeps what a VM that died before left there:
  # directories named by a pid that no longer runs.

  use GenServer

  @retry_ms 100
  @attempts 600

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "Removes `dirs` once the worker in them is gone."
  @spec release([String.t()]) :: :ok
  def release([]), do: :ok
  def release(dirs), do: GenServer.cast(__MODULE__, {:release, dirs})

  @impl true
  def init(nil), do: {:ok, %{swept: MapSet.new()}}

  @impl true
  def handle_cast({:release, dirs}, state) do
    Enum.each(dirs, &remove(&1, @attempts))
    {:noreply, Enum.reduce(dirs, state, &sweep(Path.dirname(&1), &2))}
  end

  @impl true
  def handle_info({:remove, dir, attempts}, state) do
    remove(dir, attempts)
    {:noreply, state}
  end

  defp remove(dir, attempts) do
    case File.rmdir(dir) do
      {:error, :ebusy} when attempts > 1 ->
        Process.send_after(self(), {:remove, dir, attempts - 1}, @retry_ms)

      _removed_or_gone ->
        :ok
    end
  end

  defp sweep(base, state) do
    if MapSet.member?(state.swept, base) do
      state
    else
      for name <- ls(base), stale?(name), do: File.rmdir(Path.join(base, name))
      %{state | swept: MapSet.put(state.swept, base)}
    end
  end

  defp ls(base) do
    case File.ls(base) do
      {:ok, names} -> names
      {:error, _} -> []
    end
  end

  defp stale?(name) do
    case Integer.parse(name) do
      {_pid, ""} -> not File.exists?("/proc/#{name}")
      _ -> false
    end
  end
end
