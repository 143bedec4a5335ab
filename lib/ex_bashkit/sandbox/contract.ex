defmodule ExBashkit.Sandbox.Contract do
  @moduledoc """
  What `ExBashkit.Sandbox` covers, as data: its operations, from which
  the protocol's implementations and `ExBashkit.Server`'s session API are
  generated.
  """

  @typedoc "An operation: its name and its arguments after the sandbox."
  @type operation :: {atom(), [atom()]}

  @operations [
    exec: [:script, :opts],
    cancel: [],
    read_file: [:path],
    write_file: [:path, :content],
    list_dir: [:path],
    mkdir: [:path, :opts],
    remove: [:path, :opts],
    rename: [:from, :to],
    stat: [:path],
    snapshot: [:opts],
    restore: [:snapshot, :opts]
  ]

  @doc """
  Every operation of `ExBashkit.Sandbox`, with its arguments after the
  sandbox.

      iex> ExBashkit.Sandbox.Contract.operations()[:write_file]
      [:path, :content]
  """
  @spec operations() :: [operation()]
  def operations, do: @operations

  @doc false
  # The arguments of an operation as variables, for generated code.
  @spec variables([atom()]) :: [Macro.t()]
  def variables(arguments), do: Enum.map(arguments, &Macro.var(&1, __MODULE__))
end
