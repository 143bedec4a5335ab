defmodule ExBashkit.Callbacks.Supervisor do
  @moduledoc false
  # Where the processes started for a caller's script run: its callback
  # servers and its `:approve` functions. A `PartitionSupervisor` of task
  # supervisors, partitioned by the caller's pid, so that many sessions
  # calling back at once do not queue on one supervisor.

  @doc "The supervisor's child spec, under this module's name."
  @spec child_spec(term()) :: Supervisor.child_spec()
  def child_spec(_arg) do
    PartitionSupervisor.child_spec(child_spec: Task.Supervisor, name: __MODULE__)
  end

  @doc "The task supervisor of `caller`'s partition."
  @spec for_caller(pid()) :: {:via, PartitionSupervisor, {module(), pid()}}
  def for_caller(caller) when is_pid(caller),
    do: {:via, PartitionSupervisor, {__MODULE__, caller}}
end
