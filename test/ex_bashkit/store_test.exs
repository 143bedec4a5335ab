defmodule ExBashkit.StoreTest do
  use ExBashkit.Case, async: true

  doctest ExBashkit.Store.Memory
  doctest ExBashkit.Store.Disk

  alias ExBashkit.{Server, Store}

  @key "a key of sixteen bytes or more"

  defp disk(context) do
    dir = tmp_path("ex_bashkit_store")

    on_exit(fn -> File.rm_rf!(dir) end)
    Map.put(context, :store, Store.validate!({Store.Disk, dir: dir, key: @key}))
  end

  defp flip(bytes, at) do
    <<before::binary-size(at), byte, rest::binary>> = bytes
    <<before::binary, Bitwise.bxor(byte, 1), rest::binary>>
  end

  test "the memory store keeps, replaces and forgets records" do
    store = Store.validate!(Store.Memory)
    assert Store.fetch(store, :m1) == :error
    assert :ok = Store.put(store, :m1, "one")
    assert :ok = Store.put(store, :m1, "two")
    assert {:ok, "two"} = Store.fetch(store, :m1)
    assert :ok = Store.delete(store, :m1)
    assert Store.fetch(store, :m1) == :error
  end

  # Fencing, for each store that ships: claims are atomic and rising, a
  # write of an older claim is refused and changes nothing.
  defp fences(store, id) do
    claims =
      1..20
      |> Enum.map(fn _ -> Task.async(fn -> Store.claim(store, id) end) end)
      |> Task.await_many(30_000)

    assert Enum.sort(for {:ok, epoch} <- claims, do: epoch) == Enum.to_list(1..20)
    assert :ok = Store.put(store, id, "newest", 20)
    assert :stale = Store.put(store, id, "older", 19)
    assert {:ok, "newest"} = Store.fetch(store, id)
    assert {:ok, 21} = Store.claim(store, id)
    assert :stale = Store.put(store, id, "was newest", 20)
    # Deleted, the session keeps its epoch: a cut-off server cannot write it back.
    assert :ok = Store.delete(store, id)
    assert :stale = Store.put(store, id, "resurrected", 20)
    assert Store.fetch(store, id) == :error
  end

  # A clock the test moves: {__MODULE__, :now, [agent]}.
  def now(clock), do: Agent.get(clock, & &1)
  defp advance(clock, ms), do: Agent.update(clock, &(&1 + ms))

  defp disk_with_clock(ttl_ms) do
    dir = tmp_path("ex_bashkit_tombs")
    on_exit(fn -> File.rm_rf!(dir) end)
    clock = start_supervised!({Agent, fn -> 1_000_000_000 end})
    opts = [dir: dir, key: @key, tombstone_ttl_ms: ttl_ms, clock: {__MODULE__, :now, [clock]}]
    {Store.validate!({Store.Disk, opts}), clock}
  end

  defp epoch_file({Store.Disk, opts}, id), do: Store.Disk.path(opts, id) <> ".epoch"

  test "a deleted session's epoch fences it for :tombstone_ttl_ms, then goes" do
    {store, clock} = disk_with_clock(60_000)
    {Store.Disk, opts} = store
    assert {:ok, 1} = Store.claim(store, :tomb)
    assert :ok = Store.put(store, :tomb, "record", 1)
    assert {:ok, 2} = Store.claim(store, :tomb)
    assert :ok = Store.delete(store, :tomb)

    # To the last millisecond of its TTL, the fence holds.
    advance(clock, 60_000)
    assert :stale = Store.put(store, :tomb, "cut off", 1)
    assert Store.Disk.sweep(opts) == 0
    assert File.exists?(epoch_file(store, :tomb))

    # Past it the tombstone is nothing: no fence, swept, and a claim starts over.
    advance(clock, 1)
    assert Store.Disk.sweep(opts) == 1
    refute File.exists?(epoch_file(store, :tomb))
    assert {:ok, 1} = Store.claim(store, :tomb)
  end

  test "tombstones are swept by deletes and claims, at most once per interval, sparing the rest" do
    {store, clock} = disk_with_clock(1_000)
    {Store.Disk, opts} = store

    for id <- [:old, :live, :young] do
      {:ok, 1} = Store.claim(store, id)
      :ok = Store.put(store, id, "record", 1)
    end

    # The first delete sweeps an empty directory's tombstones (none).
    :ok = Store.delete(store, :old)
    advance(clock, 900)
    :ok = Store.delete(store, :young)

    advance(clock, 200)
    # A delete past the interval starts a sweep: :old's tombstone (1,100 ms) goes;
    # :young's (200 ms) and the live session's epoch stay.
    :ok = Store.delete(store, :absent)
    assert wait_until(fn -> not File.exists?(epoch_file(store, :old)) end)
    assert File.exists?(epoch_file(store, :young))
    assert File.exists?(epoch_file(store, :live))
    assert {:ok, "record"} = Store.fetch(store, :live)

    # Within the interval no sweep starts, even with a tombstone expired:
    # the directory's last sweep is still the one above.
    marker = Path.join(opts[:dir], ".swept")
    swept_at = File.read!(marker)
    advance(clock, 900)
    :ok = Store.delete(store, :absent)
    assert File.read!(marker) == swept_at
    assert File.exists?(epoch_file(store, :young))
    # The next one past the interval does.
    advance(clock, 200)
    {:ok, _} = Store.claim(store, :other)
    assert wait_until(fn -> not File.exists?(epoch_file(store, :young)) end)
    assert Store.Disk.sweep(opts) == 0
  end

  test "the disk store refuses options it does not know or that are wrong" do
    dir = tmp_path("ex_bashkit_store_opts")

    assert_raise ArgumentError, ~r/unknown options \[:ttl\]/, fn ->
      Store.validate!({Store.Disk, dir: dir, key: @key, ttl: 5})
    end

    assert_raise ArgumentError, ~r/:tombstone_ttl_ms/, fn ->
      Store.validate!({Store.Disk, dir: dir, key: @key, tombstone_ttl_ms: 0})
    end

    assert_raise ArgumentError, ~r/:clock/, fn ->
      Store.validate!({Store.Disk, dir: dir, key: @key, clock: fn -> 0 end})
    end
  end

  test "the memory store fences" do
    fences(Store.validate!(Store.Memory), {:fenced, make_ref()})
  end

  test "a store without claim/2 and put/4 takes every write" do
    store = Store.validate!(ExBashkit.Test.Capabilities.PlainStore)
    assert {:ok, nil} = Store.claim(store, :x)
    assert :ok = Store.put(store, :x, "a", nil)
  end

  test "of two servers of one session, the older stops at its next write" do
    store = Store.validate!(Store.Memory)
    id = {:two_servers, make_ref()}
    {:ok, older} = Server.start(id: id, store: store, persist: :after_exec)
    {:ok, _} = Server.exec(older, "echo older > /f")
    {:ok, newer} = Server.start(id: id, store: store, persist: :after_exec)
    assert {:ok, %{stdout: "older\n"}} = Server.exec(newer, "cat /f")

    ref = Process.monitor(older)
    assert {:error, message} = Server.exec(older, "echo lost > /f")
    assert message =~ "newer server"
    assert_receive {:DOWN, ^ref, :process, ^older, :normal}

    {:ok, _} = Server.exec(newer, "echo newer >> /f")
    :ok = Server.stop(newer)
    {:ok, again} = Server.start(id: id, store: store)
    assert {:ok, %{stdout: "older\nnewer\n"}} = Server.exec(again, "cat /f")
    Server.stop(again, delete: true)
  end

  describe "the disk store" do
    setup :disk

    test "fences, with a lock file that another writer waits on", %{store: store} do
      fences(store, {:fenced, 1})
      {Store.Disk, opts} = store
      assert File.ls!(opts[:dir]) |> Enum.filter(&String.ends_with?(&1, ".lock")) == []
    end

    test "writes one sealed file per session, atomically", %{store: store} do
      {Store.Disk, opts} = store
      assert :ok = Store.put(store, {:user, 1}, "record")
      assert :ok = Store.put(store, "../../etc/passwd", "other")
      assert {:ok, "record"} = Store.fetch(store, {:user, 1})
      assert {:ok, "other"} = Store.fetch(store, "../../etc/passwd")
      files = File.ls!(opts[:dir])
      assert length(files) == 2 and Enum.all?(files, &String.ends_with?(&1, ".session"))
      assert :ok = Store.delete(store, {:user, 1})
      assert :ok = Store.delete(store, {:user, 1})
      assert Store.fetch(store, {:user, 1}) == :error
    end

    test "a tampered, swapped or foreign file is refused", %{store: store} do
      {Store.Disk, opts} = store
      :ok = Store.put(store, :a, String.duplicate("a", 100))
      :ok = Store.put(store, :b, String.duplicate("b", 100))
      path = Store.Disk.path(opts, :a)

      File.write!(path, flip(File.read!(path), 60))
      assert {:error, message} = Store.fetch(store, :a)
      assert message =~ "integrity check"

      File.cp!(Store.Disk.path(opts, :b), path)
      assert {:error, _} = Store.fetch(store, :a)

      other_key = {Store.Disk, Keyword.put(opts, :key, String.duplicate("x", 16))}
      assert {:error, _} = Store.fetch(other_key, :b)

      File.write!(path, "short")
      assert {:error, _} = Store.fetch(store, :a)
    end

    test "a server refuses a tampered record and stays up", %{store: store} do
      {Store.Disk, opts} = store
      {:ok, pid} = Server.start(id: :t, store: store, persist: :after_exec)
      {:ok, _} = Server.exec(pid, "echo secret > /f")
      Server.stop(pid)

      path = Store.Disk.path(opts, :t)
      File.write!(path, flip(File.read!(path), div(File.stat!(path).size, 2)))
      {:ok, pid} = Server.start(id: :t, store: store)
      assert {:error, message} = Server.read_file(pid, "/f")
      assert message =~ "integrity check"
      assert %{state: :hibernated} = Server.info(pid)
      Server.stop(pid)
    end
  end
end
