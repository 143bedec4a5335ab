defmodule ExBashkit.Store.MemoryTombstonesTest do
  # The memory store's tombstones, on a clock the test moves. Not async:
  # the store's table is one per node, and a sweep by another test's
  # clock would judge these tombstones by another time.
  use ExBashkit.Case, async: false

  alias ExBashkit.Store

  def now(clock), do: Agent.get(clock, & &1)
  defp advance(clock, ms), do: Agent.update(clock, &(&1 + ms))

  defp store(ttl_ms) do
    clock = start_supervised!({Agent, fn -> 2_000_000_000_000 end})
    opts = [tombstone_ttl_ms: ttl_ms, clock: {__MODULE__, :now, [clock]}]
    {Store.validate!({Store.Memory, opts}), clock}
  end

  defp tombstone(id), do: :ets.lookup(ExBashkit.Store.Memory.Epochs, id)

  test "a deleted session's epoch fences it for :tombstone_ttl_ms, then goes" do
    {store, clock} = store(60_000)
    id = {:tomb, make_ref()}
    assert {:ok, 1} = Store.claim(store, id)
    assert :ok = Store.put(store, id, "record", 1)
    assert {:ok, 2} = Store.claim(store, id)
    assert :ok = Store.delete(store, id)

    advance(clock, 60_000)
    assert :stale = Store.put(store, id, "cut off", 1)
    assert Store.fetch(store, id) == :error

    # Past its TTL the tombstone fences nothing, and a claim starts over.
    advance(clock, 1)
    assert {:ok, 1} = Store.claim(store, id)
    assert [{^id, 1, nil}] = tombstone(id)
  end

  test "expired tombstones are swept by deletes and claims, at most once per interval" do
    {store, clock} = store(1_000)
    [old, young, live] = for name <- [:old, :young, :live], do: {name, make_ref()}

    for id <- [old, young, live] do
      {:ok, 1} = Store.claim(store, id)
      :ok = Store.put(store, id, "record", 1)
    end

    :ok = Store.delete(store, old)
    advance(clock, 900)
    :ok = Store.delete(store, young)
    advance(clock, 200)
    # Past the interval since the first delete's sweep: `old` goes.
    :ok = Store.delete(store, {:absent, make_ref()})
    assert tombstone(old) == []
    assert [{_, 1, _}] = tombstone(young)
    assert [{_, 1, nil}] = tombstone(live)

    # Within the interval, no sweep, though `young` has expired.
    advance(clock, 900)
    :ok = Store.delete(store, {:absent, make_ref()})
    assert [{_, 1, _}] = tombstone(young)
    advance(clock, 200)
    {:ok, 1} = Store.claim(store, {:other, make_ref()})
    assert tombstone(young) == []
    assert {:ok, "record"} = Store.fetch(store, live)
  end

  test "options it does not know, or that are wrong, are refused" do
    assert_raise ArgumentError, ~r/unknown options \[:ttl\]/, fn ->
      Store.validate!({Store.Memory, ttl: 5})
    end

    assert_raise ArgumentError, ~r/:tombstone_ttl_ms/, fn ->
      Store.validate!({Store.Memory, tombstone_ttl_ms: -1})
    end
  end
end
