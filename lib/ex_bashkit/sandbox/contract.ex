defmodule ExBashkit.Sandbox.Contract do
  @moduledoc false
  # What `ExBashkit.Sandbox` covers, as data: its operations, from which
  # the protocol's implementations and `ExBashkit.Server`'s session API are
  # generated.

  @typedoc "An operation: its name and its arguments after the sandbox."
  @type operation :: {atom(), [atom()]}

  @operations [
    exec: [:script, :opts],
    cancel: [],
    read_file: [:path],
    write_file: [:path, :content],
    list_dir: [:path, :opts],
    mkdir: [:path, :opts],
    remove: [:path, :opts],
    rename: [:from, :to, :opts],
    stat: [:path, :opts],
    chmod: [:path, :mode, :opts],
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

  @argument_types %{
    script: quote(do: String.t()),
    path: quote(do: Path.t()),
    content: quote(do: iodata()),
    from: quote(do: Path.t()),
    to: quote(do: Path.t()),
    snapshot: quote(do: binary()),
    mode: quote(do: non_neg_integer()),
    opts: quote(do: keyword())
  }

  @answer_types %{
    exec: quote(do: {:ok, ExBashkit.Result.t()} | {:error, String.t() | ExBashkit.Error.t()}),
    cancel: quote(do: :ok | :idle | {:error, String.t()}),
    read_file: quote(do: {:ok, binary()} | {:error, String.t()}),
    list_dir:
      quote(
        do:
          {:ok, [{String.t(), ExBashkit.Session.fs_type()} | ExBashkit.Session.entry()]}
          | {:error, String.t()}
      ),
    stat:
      quote(
        do:
          {:ok,
           %{type: ExBashkit.Session.fs_type(), size: non_neg_integer()}
           | ExBashkit.Session.entry()}
          | {:error, String.t()}
      ),
    snapshot: quote(do: {:ok, binary()} | {:error, String.t()})
  }

  @doc false
  # The type of an argument, quoted, for generated specs.
  @spec argument_type(atom()) :: Macro.t()
  def argument_type(argument), do: Map.fetch!(@argument_types, argument)

  @doc false
  # The type of an operation's answer, quoted, for generated specs: the
  # operations not listed answer `:ok` or `{:error, message}`.
  @spec answer_type(atom()) :: Macro.t()
  def answer_type(operation),
    do: Map.get(@answer_types, operation, quote(do: :ok | {:error, String.t()}))
end
