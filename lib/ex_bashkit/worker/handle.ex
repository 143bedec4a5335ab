defmodule ExBashkit.Worker.Handle do
  @moduledoc false
  # What a worker session's owner hands out for work it holds: a job (a
  # script, a snapshot or a restore, awaited by `ExBashkit.Caller`) or a
  # callback call of a running script (answered with `callback_reply`). In
  # the VM the same places hold a NIF reference instead.

  @enforce_keys [:owner, :id]
  defstruct [:owner, :id]

  @type t :: %__MODULE__{owner: pid(), id: pos_integer()}
end
