defmodule ExBashkit.Store.Options do
  @moduledoc false
  # What both stores that ship check of their options: that each is one
  # they take, and those of their tombstones (a deleted session's epoch,
  # kept so that a cut-off server cannot write it back): how long one is
  # kept, and the clock it goes by.

  @day_ms 86_400_000

  @doc """
  `:tombstone_ttl_ms` and `:clock` of `opts`, checked, with their
  defaults; raises naming any option of `opts` not in `known`.
  """
  @spec validate!(keyword(), String.t(), [atom()]) :: keyword()
  def validate!(opts, store, known) do
    case Keyword.keys(opts) -- [:tombstone_ttl_ms, :clock | known] do
      [] ->
        :ok

      unknown ->
        raise ArgumentError,
              "#{store} got unknown options #{inspect(unknown)}; it takes " <>
                inspect(known ++ [:tombstone_ttl_ms, :clock])
    end

    ttl = Keyword.get(opts, :tombstone_ttl_ms, @day_ms)
    clock = Keyword.get(opts, :clock, {System, :os_time, [:millisecond]})

    unless is_integer(ttl) and ttl > 0 do
      raise ArgumentError,
            "#{store} :tombstone_ttl_ms must be a positive integer (milliseconds), " <>
              "got: #{inspect(ttl)}"
    end

    unless match?({m, f, a} when is_atom(m) and is_atom(f) and is_list(a), clock) do
      raise ArgumentError,
            "#{store} :clock must be {module, function, args} answering Unix milliseconds, " <>
              "got: #{inspect(clock)}"
    end

    [tombstone_ttl_ms: ttl, clock: clock]
  end

  @doc "How long a tombstone is kept, in milliseconds."
  @spec ttl(keyword()) :: pos_integer()
  def ttl(opts), do: Keyword.get(opts, :tombstone_ttl_ms, @day_ms)

  @doc "The time by the store's clock, in Unix milliseconds."
  @spec now(keyword()) :: integer()
  def now(opts) do
    {m, f, a} = Keyword.get(opts, :clock, {System, :os_time, [:millisecond]})
    apply(m, f, a)
  end
end
