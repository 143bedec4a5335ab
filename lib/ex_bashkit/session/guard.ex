defmodule ExBashkit.Session.Guard do
  @moduledoc false
  # The one guard every interpreter call of a session goes through.

  @doc """
  Runs `call`, an interpreter call on `resource`. The NIFs answer badarg
  for anything but a live session resource (every other argument has been
  checked by then): this says which argument it was.
  """
  @spec call(term(), (() -> result)) :: result when result: term()
  def call(resource, call) do
    call.()
  rescue
    ArgumentError ->
      reraise ArgumentError,
              "expected an ExBashkit.Session (from ExBashkit.Session.new/1), got a struct " <>
                "holding #{inspect(resource)}, which is not a session",
              __STACKTRACE__
  end
end
