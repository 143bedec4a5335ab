defmodule ExBashkit.Peer.Job do
  @moduledoc false
  # The options of ExBashkit.Peer.run/2: their schema (types, defaults and
  # the docs Peer's moduledoc shows) and the checks of `:setup`.

  @schema [
    timeout: [
      type: :pos_integer,
      default: 60_000,
      doc:
        "milliseconds before the run is abandoned, counted from the call: waiting for " <>
          "a VM to boot counts too. The result is then `{:error, :timeout, %{output: partial}}`."
    ],
    max_output: [
      type: {:or, [:non_neg_integer, {:in, [:infinity]}]},
      default: 50_000,
      doc:
        "bytes of output kept, or `:infinity`. Output is capped in the peer as it is " <>
          "produced, cut between two characters, and a truncated output ends with a notice."
    ],
    setup: [
      type: {:custom, &__MODULE__.setup!/1},
      default: [],
      doc:
        "code evaluated before the user's code, with its output discarded: a string, " <>
          "quoted AST, or a list of either, in order. Its bindings, aliases and imports " <>
          "are visible to the code."
    ],
    env: [
      type: :env,
      default: [],
      doc:
        "environment variables for the peer (a map or keyword list). The peer does " <>
          "**not** inherit the host's environment (only `PATH`, `HOME`, `LANG`, `LC_ALL`, " <>
          "`LC_CTYPE` and `TMPDIR`), so secrets such as API keys do not leak into " <>
          "evaluated code."
    ],
    max_heap_size: [
      type: {:or, [:pos_integer, {:in, [nil]}]},
      default: nil,
      doc:
        "a limit in words for every process in the peer; a process that exceeds it is " <>
          "killed and the run fails."
    ]
  ]

  @doc false
  @spec schema() :: ExBashkit.Options.schema()
  def schema, do: @schema

  # Strings are parsed here, so a syntax error in setup is the caller's
  # ArgumentError rather than a failed run.
  # A list is several entries; anything else is one.
  @doc false
  def setup!(setup) when is_list(setup) do
    if List.improper?(setup) do
      raise ArgumentError, ":setup must be a proper list, got: #{inspect(setup)}"
    end

    Enum.map(setup, &setup_item!/1)
  end

  def setup!(setup), do: [setup_item!(setup)]

  defp setup_item!(code) when is_binary(code) do
    unless String.valid?(code) do
      raise ArgumentError, ":setup code must be valid UTF-8, got: #{inspect(code)}"
    end

    case Code.string_to_quoted(code) do
      {:ok, quoted} -> quoted
      {:error, _} -> raise ArgumentError, ":setup is not valid Elixir: #{inspect(code)}"
    end
  end

  defp setup_item!(quoted) do
    if Macro.validate(quoted) == :ok do
      quoted
    else
      raise ArgumentError,
            ":setup entries must be strings or quoted expressions, got: #{inspect(quoted)}"
    end
  end
end
