defmodule ExBashkit.FileOpsTest do
  # stat and list_dir with details, chmod and rename's overwrite (iii's
  # fs::stat, fs::chmod, fs::mv), the same in the VM, in a worker and
  # through a server.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Sandbox, Server}

  defp backends do
    {:ok, server} = Server.start(isolation: :process)
    on_exit(fn -> Server.stop(server) end)
    [Session.new(), Session.new(isolation: :process), server]
  end

  test "details: mode and mtime, as the shell sees them" do
    for sandbox <- backends() do
      {:ok, _} = Sandbox.exec(sandbox, "mkdir -p /d/sub && echo hi > /d/f && chmod 600 /d/f", [])
      before = System.os_time(:second)

      assert {:ok, %{type: :file, size: 3, mode: 0o600, mtime: mtime}} =
               Sandbox.stat(sandbox, "/d/f", details: true)

      assert abs(mtime - before) < 3_600

      assert {:ok, [%{name: "f", type: :file, mode: 0o600}, %{name: "sub", type: :dir}]} =
               Sandbox.list_dir(sandbox, "/d", details: true)

      assert {:ok, %{type: :file, size: 3} = plain} = Sandbox.stat(sandbox, "/d/f", [])
      assert map_size(plain) == 2
      assert {:ok, [{"f", :file}, {"sub", :dir}]} = Sandbox.list_dir(sandbox, "/d", [])
    end
  end

  test "chmod, and recursive: true, without following symbolic links" do
    for sandbox <- backends() do
      {:ok, _} =
        Sandbox.exec(
          sandbox,
          "mkdir -p /t/a/b /out && touch /t/a/b/c /out/x && ln -s /out /t/link",
          []
        )

      assert :ok = Sandbox.chmod(sandbox, "/t/a/b/c", 0o700, [])
      assert {:ok, %{mode: 0o700}} = Sandbox.stat(sandbox, "/t/a/b/c", details: true)

      assert :ok = Sandbox.chmod(sandbox, "/t", 0o750, recursive: true)

      for path <- ["/t", "/t/a", "/t/a/b", "/t/a/b/c"] do
        assert {:ok, %{mode: 0o750}} = Sandbox.stat(sandbox, path, details: true), path
      end

      assert {:ok, %{mode: mode}} = Sandbox.stat(sandbox, "/out/x", details: true)
      assert mode != 0o750

      assert {:ok, %Result{stdout: "-rwxr-x---\n"}} =
               Sandbox.exec(sandbox, "ls -l /t/a/b/c | cut -c1-10", [])

      assert {:error, _} = Sandbox.chmod(sandbox, "/nope", 0o644, [])
    end
  end

  test "rename refuses an existing target unless overwrite: true" do
    for sandbox <- backends() do
      :ok = Sandbox.write_file(sandbox, "/a", "new")
      :ok = Sandbox.write_file(sandbox, "/b", "old")

      assert {:error, message} = Sandbox.rename(sandbox, "/a", "/b", [])
      assert message =~ "already exists"
      assert {:ok, "old"} = Sandbox.read_file(sandbox, "/b")

      assert :ok = Sandbox.rename(sandbox, "/a", "/b", overwrite: true)
      assert {:ok, "new"} = Sandbox.read_file(sandbox, "/b")
      assert {:error, _} = Sandbox.read_file(sandbox, "/a")
    end
  end

  test "bad arguments raise, naming the option" do
    session = Session.new()

    assert_raise ArgumentError, ~r/mode must be an integer/, fn ->
      Session.chmod(session, "/", 0o17777)
    end

    assert_raise ArgumentError, ~r/mode must be an integer/, fn ->
      Session.chmod(session, "/", "755")
    end

    assert_raise ArgumentError, ~r/:recursive/, fn ->
      Session.chmod(session, "/", 0o755, recursive: 1)
    end

    assert_raise ArgumentError, ~r/:overwrite/, fn ->
      Session.rename(session, "/a", "/b", overwrite: :yes)
    end

    assert_raise ArgumentError, ~r/:details/, fn -> Session.stat(session, "/", details: 1) end
  end
end
