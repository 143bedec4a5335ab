defmodule ExBashkit.Builtin do
  @moduledoc """
  A custom builtin given by name rather than as a closure.

  `:builtins` takes, for each command name, one of:

    * a 1-arity function, `fn call -> … end` or `&MyApp.Tools.lookup/1`;
    * a module implementing this behaviour — `call(nil, call)` is invoked;
    * `{module, arg}` — `module.call(arg, call)`;
    * `{module, function, args}` — `apply(module, function, [call | args])`.

  All four receive the same call map and answer the same way (see
  `guides/callbacks.md`). The last three, and captures of named functions
  (`&Module.fun/1`), are plain data: they survive a restart, a trip to
  another node, and a snapshot written to disk. That is why
  `ExBashkit.Server` asks for them wherever a session must be rebuilt
  elsewhere (see `guides/sandbox_per_conversation.md`).

      defmodule MyApp.KvGet do
        @behaviour ExBashkit.Builtin

        @impl true
        def call(table, %{args: [key]}) do
          case :ets.lookup(table, key) do
            [{^key, value}] -> {:ok, [value, "\\n"]}
            [] -> {:error, "no such key\\n"}
          end
        end
      end

      ExBashkit.Session.new(builtins: %{"kv_get" => {MyApp.KvGet, :my_table}})
  """

  @typedoc "What `:builtins` accepts for one command."
  @type t ::
          (map() -> term())
          | module()
          | {module(), term()}
          | {module(), atom(), [term()]}

  @doc "Computes the command's output for one call (see `guides/callbacks.md`)."
  @callback call(arg :: term(), call :: map()) :: term()

  @doc false
  # Checks one `:builtins` entry; raises naming the command.
  @spec validate!(String.t(), term()) :: t()
  def validate!(_name, fun) when is_function(fun, 1), do: fun

  def validate!(name, {module, function, args} = mfa)
      when is_atom(module) and is_atom(function) and is_list(args) do
    if Code.ensure_loaded?(module) and function_exported?(module, function, length(args) + 1) do
      mfa
    else
      raise ArgumentError,
            ":builtins entry #{inspect(name)}: #{inspect(module)}.#{function}/" <>
              "#{length(args) + 1} is not defined"
    end
  end

  def validate!(name, {module, _arg} = builtin) when is_atom(module),
    do: module!(name, module, builtin)

  def validate!(name, module) when is_atom(module) and module not in [nil, true, false],
    do: module!(name, module, {module, nil})

  def validate!(name, other) do
    raise ArgumentError,
          ":builtins entry #{inspect(name)} must be a 1-arity function, a module " <>
            "implementing ExBashkit.Builtin, {module, arg} or {module, function, args}, " <>
            "got: #{inspect(other)}"
  end

  defp module!(name, module, builtin) do
    if Code.ensure_loaded?(module) and function_exported?(module, :call, 2) do
      builtin
    else
      raise ArgumentError,
            ":builtins entry #{inspect(name)}: #{inspect(module)} does not implement " <>
              "ExBashkit.Builtin (no call/2)"
    end
  end

  @doc false
  @spec invoke(t(), map()) :: term()
  def invoke(fun, call) when is_function(fun, 1), do: fun.(call)
  def invoke({module, function, args}, call), do: apply(module, function, [call | args])
  def invoke({module, arg}, call), do: module.call(arg, call)
end
