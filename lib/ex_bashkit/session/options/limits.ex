defmodule ExBashkit.Session.Options.Limits do
  @moduledoc false
  # The `:limits` option. Its keys come from native/ex_bashkit/limits.table,
  # the one list Rust derives its side from too (build.rs): the key, the
  # bashkit error that names it, its default and what it bounds.

  import ExBashkit.Options, only: [collection?: 1, entries!: 2]

  @table Path.expand("../../../../native/ex_bashkit/limits.table", __DIR__)
  @external_resource @table

  @rows (for line <- File.read!(@table) |> String.split("\n"),
             line = String.trim(line),
             line != "" and not String.starts_with?(line, "#") do
           [key, _variant, default, doc] = line |> String.split("|") |> Enum.map(&String.trim/1)
           {String.to_atom(key), default, doc}
         end)

  @keys Enum.map(@rows, &elem(&1, 0))

  # Counts travel to Rust as u64; anything larger means "unlimited" anyway.
  @max_u64 0xFFFF_FFFF_FFFF_FFFF

  @doc false
  @spec keys() :: [atom()]
  def keys, do: @keys

  @doc false
  # The keys as a Markdown list, for ExBashkit.Session's moduledoc.
  @spec docs() :: String.t()
  def docs do
    Enum.map_join(@rows, "\n", fn {key, default, doc} ->
      "* `#{inspect(key)}` — #{doc} (default #{default})."
    end)
  end

  @doc false
  def limits!(limits) when collection?(limits) do
    given =
      entries!(":limits", limits)
      |> Enum.map(fn
        {key, value} when key in @keys ->
          {key, limit_value!(key, value)}

        {key, _} ->
          raise ArgumentError,
                "unknown limit #{inspect(key)} in :limits, expected one of: #{inspect(@keys)}"

        other ->
          raise ArgumentError, ":limits entries must be {key, value}, got: #{inspect(other)}"
      end)
      |> Map.new()

    @keys
    |> Map.new(&{&1, nil})
    |> Map.merge(given)
    |> Map.put(:timeout_ms, timeout!(given[:timeout_ms]))
  end

  def limits!(other) do
    raise ArgumentError, ":limits must be a keyword list or map, got: #{inspect(other)}"
  end

  defp limit_value!(key, value) when key in [:timeout_ms, :parser_timeout_ms] do
    if is_integer(value) and value >= 1 do
      min(value, @max_u64)
    else
      raise ArgumentError,
            ":limits key #{inspect(key)} must be a positive integer (milliseconds), " <>
              "got: #{inspect(value)}"
    end
  end

  defp limit_value!(_key, value) when is_integer(value) and value >= 0, do: min(value, @max_u64)

  defp limit_value!(key, value) do
    raise ArgumentError,
          ":limits key #{inspect(key)} must be a non-negative integer, got: #{inspect(value)}"
  end

  # The defaults that are plain numbers (the table's third column).
  @number_defaults for {key, default, _doc} <- @rows,
                       digits = String.replace(default, ",", ""),
                       match?({_, ""}, Integer.parse(digits)),
                       into: %{},
                       do: {key, String.to_integer(digits)}

  @doc false
  # A limit of validated `limits` (a session's), its default when not
  # given: what the host holds a worker's frames and calls to.
  @spec value(map(), atom()) :: non_neg_integer()
  def value(limits, :max_snapshot_bytes) do
    limits[:max_snapshot_bytes] ||
      value(limits, :max_fs_bytes) + value(limits, :max_memory_bytes) + 16 * 1024 * 1024
  end

  def value(limits, key), do: limits[key] || Map.fetch!(@number_defaults, key)

  # bashkit's own default, which the operator's ceiling may lower.
  @default_timeout_ms 30_000

  @doc false
  @spec default_timeout_ms() :: pos_integer()
  def default_timeout_ms, do: @default_timeout_ms

  @doc false
  # The wall-clock limit validated options run under.
  @spec timeout_ms(map()) :: pos_integer()
  def timeout_ms(%{limits: %{timeout_ms: ms}}) when is_integer(ms), do: ms
  def timeout_ms(_native), do: @default_timeout_ms

  # The session's :timeout_ms under `config :ex_bashkit, :max_timeout_ms`:
  # asking for more raises; the default is lowered to the ceiling.
  @doc false
  def timeout!(requested) do
    case {requested, timeout_ceiling!()} do
      {nil, nil} ->
        nil

      {nil, ceiling} ->
        if ceiling < @default_timeout_ms, do: ceiling, else: nil

      {ms, ceiling} when ceiling == nil or ms <= ceiling ->
        ms

      {ms, ceiling} ->
        raise ArgumentError,
              ":limits key :timeout_ms of #{ms} exceeds the configured :max_timeout_ms " <>
                "ceiling of #{ceiling} (config :ex_bashkit, :max_timeout_ms)"
    end
  end

  defp timeout_ceiling! do
    case Application.get_env(:ex_bashkit, :max_timeout_ms) do
      nil ->
        nil

      ms when is_integer(ms) and ms > 0 ->
        ms

      other ->
        raise ArgumentError,
              "config :ex_bashkit, :max_timeout_ms must be a positive integer or nil, " <>
                "got: #{inspect(other)}"
    end
  end
end
