defmodule ExBashkit.Test.Counted do
  @moduledoc false
  # A backend of a user's own: a session behind a struct, counting calls,
  # to show that the tools reach a sandbox through the protocol alone.
  # (Here, not in a test: protocols are consolidated when the project
  # compiles, and an implementation defined later is not seen.)
  defstruct [:session, :calls]

  @doc "A counted sandbox over a new session."
  def new, do: %__MODULE__{session: ExBashkit.Session.new(), calls: :counters.new(1, [])}

  @doc "How many calls it served."
  def calls(%__MODULE__{calls: calls}), do: :counters.get(calls, 1)
end

defimpl ExBashkit.Sandbox, for: ExBashkit.Test.Counted do
  for {name, arguments} <- ExBashkit.Sandbox.Contract.operations() do
    variables = ExBashkit.Sandbox.Contract.variables(arguments)

    def unquote(name)(counted, unquote_splicing(variables)) do
      :counters.add(counted.calls, 1, 1)
      ExBashkit.Sandbox.unquote(name)(counted.session, unquote_splicing(variables))
    end
  end
end
