defmodule ExBashkit.StoreTest do
  use ExBashkit.Case, async: true

  doctest ExBashkit.Store.Memory
  doctest ExBashkit.Store.Disk

  alias ExBashkit.{Server, Store}
  alias ExBashkit.Test.Cluster

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

  describe "the disk store" do
    setup :disk

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

    @tag timeout: 120_000
    test "a session survives a VM restart: a second VM opens the same store", %{store: store} do
      {peer, first} = Cluster.start_node()

      {:ok, pid} =
        :erpc.call(first, Server, :get_or_start, [
          "survivor",
          [store: store, persist: :after_exec]
        ])

      {:ok, _} =
        Server.exec(pid, """
        mkdir -p /proj && cd /proj && echo notes > notes.txt
        export STAGE=two; report() { echo "$STAGE in $(pwd): $(cat notes.txt)"; }
        """)

      :peer.stop(peer)

      {_peer, second} = Cluster.start_node()
      # Looked up by id alone: the options come back with the record.
      {:ok, pid} = :erpc.call(second, Server, :get_or_start, ["survivor", [store: store]])
      assert node(pid) == second
      assert {:ok, %{stdout: "two in /proj: notes\n"}} = Server.exec(pid, "report")
    end
  end
end
