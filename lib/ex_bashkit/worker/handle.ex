defmodule ExBashkit.Worker.Handle do
  @moduledoc false
  # What a worker session's owner hands out for work it holds: a job (a
  # script, a snapshot or a restore, awaited by `ExBashkit.Caller`) or a
  # callback call of a running script (answered with `callback_reply`). In
  # the VM the same places hold a NIF reference instead.
  #
  # A job's handle also carries its session's guard, set on the caller's
  # side (`ExBashkit.Worker`), never the owner's: the caller holding the
  # handle while it waits holds the session, so the worker is not ended
  # under the job by a garbage collection.

  @enforce_keys [:owner, :id]
  defstruct [:owner, :id, :guard]

  @type t :: %__MODULE__{owner: pid(), id: pos_integer(), guard: reference() | nil}
end
