defmodule ExBashkit.Options do
  @moduledoc false
  # The one validator of keyword options in this library. A schema lists
  # each option once, with its type, its default and its documentation:
  #
  #     [timeout: [type: :pos_integer, default: 60_000, doc: "Milliseconds before …"]]
  #
  # `validate!/3` checks options against it and returns a map holding every
  # key of the schema; `docs/1` renders the schema for a moduledoc, so the
  # documented defaults are the defaults. Every problem raises
  # ArgumentError naming the option.

  @typedoc """
  `:boolean`, `:pos_integer`, `:non_neg_integer`, `:env` (a map or keyword
  list of environment variables, normalized to `[{name, value}]`), `:any`,
  `{:in, values}`, `{:or, types}`, or `{:custom, fun}` where `fun` gets the
  value and returns it normalized or raises ArgumentError itself.
  """
  @type type ::
          :boolean
          | :pos_integer
          | :non_neg_integer
          | :env
          | :any
          | {:in, [term()]}
          | {:or, [type()]}
          | {:custom, (term() -> term())}

  @type schema :: [{atom(), [type: type(), default: term(), doc: String.t()]}]

  @doc """
  Checks `opts` against `schema`; `context` names the function in errors.
  Returns a map with every key of the schema, defaults filled in.
  """
  @spec validate!(term(), schema(), String.t()) :: %{atom() => term()}
  def validate!(opts, schema, context) do
    unless is_list(opts) and Keyword.keyword?(opts) do
      raise ArgumentError, "#{context} expects a keyword list of options, got: #{inspect(opts)}"
    end

    case Enum.reject(Keyword.keys(opts), &Keyword.has_key?(schema, &1)) do
      [] ->
        :ok

      [first | _] = unknown ->
        raise ArgumentError,
              "unknown option #{inspect(first)} for #{context} " <>
                "(unknown keys #{inspect(Enum.uniq(unknown))}); " <>
                "expected one of: #{inspect(Keyword.keys(schema))}"
    end

    # Defaults go through the same normalization as given values.
    Map.new(schema, fn {key, spec} ->
      {key, cast!(key, spec[:type], Keyword.get(opts, key, spec[:default]))}
    end)
  end

  @doc "The schema as a Markdown list, for a moduledoc."
  @spec docs(schema()) :: String.t()
  def docs(schema) do
    Enum.map_join(schema, "\n", fn {key, spec} ->
      default =
        case Keyword.fetch(spec, :default) do
          {:ok, empty} when empty in [nil, [], %{}] -> ""
          {:ok, value} -> " Default: `#{literal(value)}`."
          :error -> ""
        end

      # A doc's first line is wrapped; the lines after it (a nested list)
      # are kept as they are, under the item.
      [first | rest] = String.split(spec[:doc], "\n")
      text = "`#{inspect(key)}` — #{first}#{if rest == [], do: default}"
      lines = wrap(text, 74) ++ rest ++ if(rest == [] or default == "", do: [], else: [default])
      "  * " <> Enum.join(lines, "\n    ")
    end)
  end

  # Words, a `code span` counting as one, greedily filled into lines.
  defp wrap(text, width) do
    text
    |> String.split(" ")
    |> Enum.chunk_while(
      [],
      fn word, acc ->
        acc = [word | acc]

        if odd_backticks?(acc),
          do: {:cont, acc},
          else: {:cont, acc |> Enum.reverse() |> Enum.join(" "), []}
      end,
      fn
        [] -> {:cont, []}
        acc -> {:cont, acc |> Enum.reverse() |> Enum.join(" "), []}
      end
    )
    |> Enum.reduce([], fn
      word, [] ->
        [word]

      word, [line | done] when byte_size(line) + byte_size(word) < width ->
        [line <> " " <> word | done]

      word, done ->
        [word | done]
    end)
    |> Enum.reverse()
  end

  # Integers as they are written in code: 60_000.
  defp literal(value) when is_integer(value) and value >= 10_000 do
    value
    |> Integer.to_string()
    |> String.reverse()
    |> String.graphemes()
    |> Enum.chunk_every(3)
    |> Enum.map_join("_", &Enum.join/1)
    |> String.reverse()
  end

  defp literal(value), do: inspect(value, limit: :infinity)

  defp odd_backticks?(words),
    do: words |> Enum.map(&length(String.split(&1, "`"))) |> Enum.sum() |> rem(2) == 1

  defp cast!(key, type, value) do
    case cast(type, value) do
      {:ok, value} ->
        value

      :error ->
        raise ArgumentError, "#{inspect(key)} must be #{describe(type)}, got: #{inspect(value)}"
    end
  end

  defp cast(:boolean, value) when is_boolean(value), do: {:ok, value}
  defp cast(:pos_integer, value) when is_integer(value) and value > 0, do: {:ok, value}
  defp cast(:non_neg_integer, value) when is_integer(value) and value >= 0, do: {:ok, value}
  defp cast(:any, value), do: {:ok, value}
  defp cast(:env, value), do: {:ok, env!(value)}
  defp cast({:custom, fun}, value), do: {:ok, fun.(value)}

  defp cast({:in, values}, value) do
    if value in values, do: {:ok, value}, else: :error
  end

  defp cast({:or, types}, value) do
    Enum.find_value(types, :error, fn type ->
      case cast(type, value) do
        {:ok, _} = ok -> ok
        :error -> nil
      end
    end)
  end

  defp cast(_type, _value), do: :error

  defp describe(:boolean), do: "a boolean"
  defp describe(:pos_integer), do: "a positive integer"
  defp describe(:non_neg_integer), do: "a non-negative integer"
  defp describe({:in, values}), do: Enum.map_join(values, " or ", &inspect/1)
  defp describe({:or, types}), do: Enum.map_join(types, " or ", &describe/1)

  @doc "A map or a list, not a struct: what an option given as entries may be."
  defguard collection?(value) when (is_map(value) and not is_struct(value)) or is_list(value)

  @doc """
  The `{key, value}` entries as a map; raises `ArgumentError` with `what`
  and the key when two entries have the same key (after normalizing, two
  would silently shadow each other).
  """
  @spec unique!([{term(), term()}], String.t()) :: map()
  def unique!(entries, what) do
    Enum.reduce(entries, %{}, fn {key, value}, acc ->
      if Map.has_key?(acc, key) do
        raise ArgumentError, "#{what} #{inspect(key)}"
      else
        Map.put(acc, key, value)
      end
    end)
  end

  @doc "The entries of a collection given as `option`; an improper list raises."
  @spec entries!(String.t(), map() | list()) :: list()
  def entries!(option, value) when collection?(value) do
    if is_list(value) and List.improper?(value) do
      raise ArgumentError, "#{option} must be a proper list, got: #{inspect(value)}"
    end

    Enum.to_list(value)
  end

  @doc """
  Environment variables given as a map or keyword list, as `[{name, value}]`
  strings: names non-empty without `=`, names and values UTF-8 without NUL,
  atoms and numbers stringified.
  """
  @spec env!(term()) :: [{String.t(), String.t()}]
  def env!(env) when collection?(env) do
    entries!(":env", env)
    |> Enum.map(fn
      {key, value} -> {env_key!(key), env_value!(key, value)}
      other -> raise ArgumentError, ":env entries must be {name, value}, got: #{inspect(other)}"
    end)
  end

  def env!(other) do
    raise ArgumentError, ":env must be a map or keyword list, got: #{inspect(other)}"
  end

  defp env_key!(key) do
    name = scalar(key)

    if text?(name) and name != "" and not String.contains?(name, "=") do
      name
    else
      raise ArgumentError,
            ":env names must be non-empty strings or atoms without \"=\" or NUL, " <>
              "got: #{inspect(key)}"
    end
  end

  defp env_value!(key, value) do
    text = scalar(value)

    if text?(text) do
      text
    else
      raise ArgumentError,
            ":env value for #{inspect(key)} must be a string, atom or number " <>
              "(UTF-8, no NUL), got: #{inspect(value)}"
    end
  end

  @doc "UTF-8 with no NUL: what the interpreter can take as a name, value or path."
  @spec text?(term()) :: boolean()
  def text?(value),
    do: is_binary(value) and String.valid?(value) and not String.contains?(value, <<0>>)

  @doc "A string, a non-boolean atom or a number as a string; `nil` for anything else."
  @spec scalar(term()) :: String.t() | nil
  def scalar(value) when is_binary(value), do: value
  def scalar(value) when is_atom(value) and value not in [nil, true, false], do: to_string(value)
  def scalar(value) when is_number(value), do: to_string(value)
  def scalar(_), do: nil
end
