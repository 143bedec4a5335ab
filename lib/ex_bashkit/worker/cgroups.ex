defmodule ExBashkit.Worker.Cgroups do
  @moduledoc false
  # Removes the cgroup directories of workers that are gone
  # (native/ex_bashkit/crates/jail/src/cgroup.rs makes them). A cgroup can
  # only be removed once its last process has exited, which after a SIGKILL
  # takes a moment, so removals are retried for a while. As it starts, and
  # then every few minutes, it sweeps what no owner could remove: the
  # cgroups of workers that died with an earlier VM, and of spares never
  # used (directories named by a pid that no longer runs).

  use GenServer

  @retry_ms 100
  @attempts 600
  @sweep_every_ms 300_000

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "Removes `dirs` once the worker in them is gone."
  @spec release([String.t()]) :: :ok
  def release([]), do: :ok
  def release(dirs), do: GenServer.cast(__MODULE__, {:release, dirs})

  @impl true
  def init(nil), do: {:ok, nil, {:continue, :sweep}}

  @impl true
  def handle_continue(:sweep, state) do
    for base <- ExBashkit.Native.worker_cgroup_bases(),
        name <- ls(base),
        stale?(name),
        do: File.rmdir(Path.join(base, name))

    Process.send_after(self(), :sweep, @sweep_every_ms)
    {:noreply, state}
  end

  @impl true
  def handle_cast({:release, dirs}, state) do
    Enum.each(dirs, &remove(&1, @attempts))
    {:noreply, state}
  end

  @impl true
  def handle_info({:remove, dir, attempts}, state) do
    remove(dir, attempts)
    {:noreply, state}
  end

  def handle_info(:sweep, state), do: {:noreply, state, {:continue, :sweep}}

  defp remove(dir, attempts) do
    case File.rmdir(dir) do
      {:error, :ebusy} when attempts > 1 ->
        Process.send_after(self(), {:remove, dir, attempts - 1}, @retry_ms)

      _removed_or_gone ->
        :ok
    end
  end

  defp ls(base) do
    case File.ls(base) do
      {:ok, names} -> names
      {:error, _} -> []
    end
  end

  # A pid's directory whose process is gone; a live pid's is left even if
  # it was reused by another process (its worker's owner removes it).
  defp stale?(name) do
    case Integer.parse(name) do
      {_pid, ""} -> not File.exists?("/proc/#{name}")
      _ -> false
    end
  end
end
