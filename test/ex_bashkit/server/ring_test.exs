defmodule ExBashkit.Server.RingTest do
  # Ownership by rendezvous hashing over the nodes that run servers: real
  # peer nodes joining and leaving.
  use ExBashkit.Case, async: false

  alias ExBashkit.Server.Ring
  alias ExBashkit.Test.Cluster

  @moduletag timeout: 120_000

  test "every id has one owner, spread evenly; a join moves about 1/N, a leave only the leaver's" do
    ids = for i <- 1..30_000, do: "conversation-#{i}"
    three = [:a@h, :b@h, :c@h]
    owners = Map.new(ids, &{&1, Ring.owner(&1, three)})

    counts = owners |> Map.values() |> Enum.frequencies()
    for {_node, count} <- counts, do: assert(count in 9_000..11_000, inspect(counts))

    # A fourth node takes over about a quarter, all from the others.
    four = [:d@h | three]
    moved = Enum.filter(ids, &(Ring.owner(&1, four) != owners[&1]))
    assert length(moved) in 6_500..8_500
    assert Enum.all?(moved, &(Ring.owner(&1, four) == :d@h))

    # A leaving node gives away its own ids and nothing else.
    two = three -- [:b@h]
    for id <- ids, owners[id] != :b@h, do: assert(Ring.owner(id, two) == owners[id])
  end

  test "a lookup is the same on every member, and follows joins and leaves" do
    assert Ring.members() == [node()]
    {peer, b} = Cluster.start_node()
    {_, c} = Cluster.start_node()
    everyone = Enum.sort([node(), b, c])
    assert wait_until(fn -> Ring.members() == everyone end)
    assert wait_until(fn -> :erpc.call(b, Ring, :members, []) == everyone end)

    for i <- 1..200 do
      id = "id-#{i}"
      assert :erpc.call(b, Ring, :owner, [id]) == Ring.owner(id)
      assert :erpc.call(c, Ring, :owner, [id]) == Ring.owner(id)
    end

    :peer.stop(peer)
    assert wait_until(fn -> Ring.members() == Enum.sort([node(), c]) end)
  end
end
