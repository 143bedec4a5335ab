# A session, generated from the one list of operations
# (ExBashkit.Sandbox.Contract), as servers are in sandbox.ex.

defimpl ExBashkit.Sandbox, for: ExBashkit.Session do
  alias ExBashkit.Sandbox.Contract
  alias ExBashkit.Session

  # A session restores in place: the same session comes back.
  def restore(session, snapshot, opts) do
    with {:ok, _same} <- Session.restore(session, snapshot, opts), do: :ok
  end

  for {name, arguments} <- Contract.operations(), name != :restore do
    variables = Contract.variables(arguments)

    def unquote(name)(session, unquote_splicing(variables)),
      do: Session.unquote(name)(session, unquote_splicing(variables))
  end
end
