defmodule ExBashkit.MountsTest do
  use ExBashkit.Case, async: true

  setup do
    root = host_dir!("mounts")

    for dir <- ["ro/sub", "rw", "secret"], do: File.mkdir_p!(Path.join(root, dir))
    File.write!(Path.join(root, "ro/a.txt"), "host data\n")
    File.write!(Path.join(root, "ro/sub/b.txt"), "nested\n")
    File.write!(Path.join(root, "secret/key"), "TOP SECRET\n")
    worker_may_write!(Path.join(root, "rw"))

    %{
      root: root,
      ro: Path.join(root, "ro"),
      rw: Path.join(root, "rw"),
      secret: Path.join(root, "secret")
    }
  end

  defp mounted(ctx, extra \\ []) do
    Session.new(
      [mounts: [{"/data", ctx.ro, :read_only}, {"/work", ctx.rw, :read_write}]] ++ extra
    )
  end

  describe "read-only mounts" do
    test "are readable by scripts and by read_file/2", ctx do
      session = mounted(ctx)

      assert %Result{stdout: "host data\n"} = run(session, "cat /data/a.txt")
      assert %Result{stdout: "nested\n"} = run(session, "cat /data/sub/b.txt")
      assert %Result{stdout: "a.txt\nsub\n"} = run(session, "ls /data")
      assert {:ok, "host data\n"} = Session.read_file(session, "/data/a.txt")
      assert {:ok, [{"a.txt", :file}, {"sub", :dir}]} = Session.list_dir(session, "/data")
    end

    test "refuse every kind of write and leave the host untouched", ctx do
      session = mounted(ctx)
      before = File.ls!(ctx.ro) |> Enum.sort()

      for script <- [
            "echo x > /data/new.txt",
            "echo x >> /data/a.txt",
            "rm /data/a.txt",
            "mv /data/a.txt /data/moved.txt",
            "mkdir /data/dir",
            "touch /data/t",
            "rm -r /data/sub"
          ] do
        assert %Result{exit_code: code} = run(session, script)
        assert code != 0, "#{script} succeeded on a read-only mount"
      end

      assert {:error, _} = Session.write_file(session, "/data/api.txt", "x")
      assert {:error, _} = Session.remove(session, "/data/a.txt")
      assert File.ls!(ctx.ro) |> Enum.sort() == before
      assert File.read!(Path.join(ctx.ro, "a.txt")) == "host data\n"
    end
  end

  describe "read-write mounts" do
    test "writes from scripts and write_file/3 reach the host", ctx do
      session = mounted(ctx)

      assert %Result{exit_code: 0} =
               run(session, "echo out > /work/result.txt; mkdir -p /work/d/e")

      assert :ok = Session.write_file(session, "/work/api.txt", "from elixir")

      assert File.read!(Path.join(ctx.rw, "result.txt")) == "out\n"
      assert File.read!(Path.join(ctx.rw, "api.txt")) == "from elixir"
      assert File.dir?(Path.join(ctx.rw, "d/e"))

      File.write!(Path.join(ctx.rw, "from_host.txt"), "host wrote\n")
      assert %Result{stdout: "host wrote\n"} = run(session, "cat /work/from_host.txt")

      assert %Result{exit_code: 0} = run(session, "rm /work/from_host.txt")
      refute File.exists?(Path.join(ctx.rw, "from_host.txt"))
    end

    test "the session's cwd can live inside a mount", ctx do
      session = mounted(ctx, cwd: "/work")
      assert %Result{exit_code: 0} = run(session, "echo here > rel.txt")
      assert File.read!(Path.join(ctx.rw, "rel.txt")) == "here\n"
    end
  end

  describe "escapes" do
    test "`..` cannot leave the mount", ctx do
      session = mounted(ctx)

      for script <- [
            "cat /data/../secret/key",
            "cat /data/../../secret/key",
            "cat /work/../ro/a.txt"
          ] do
        result = run(session, script)
        assert result.exit_code != 0
        refute result.stdout =~ "SECRET"
      end
    end

    test "host symlinks pointing outside, absolute or relative, lead nowhere", ctx do
      File.ln_s!(Path.join(ctx.secret, "key"), Path.join(ctx.ro, "abs_link"))
      File.ln_s!("../secret/key", Path.join(ctx.ro, "rel_link"))
      File.ln_s!(ctx.secret, Path.join(ctx.ro, "dir_link"))
      File.ln_s!("../secret", Path.join(ctx.rw, "rel_dir_link"))
      session = mounted(ctx)

      for path <- [
            "/data/abs_link",
            "/data/rel_link",
            "/data/dir_link/key",
            "/work/rel_dir_link/key"
          ] do
        result = run(session, "cat #{path}")
        assert result.exit_code != 0, "#{path} was readable"
        refute result.stdout =~ "SECRET"
        assert {:error, _} = Session.read_file(session, path)
      end

      # Writing through a symlinked directory must not reach the target either.
      assert run(session, "echo pwned > /work/rel_dir_link/key").exit_code != 0
      assert File.read!(Path.join(ctx.secret, "key")) == "TOP SECRET\n"
    end

    test "scripts cannot plant symlinks that leave a read-write mount", ctx do
      session = mounted(ctx)

      result =
        run(session, """
        ln -s #{ctx.secret}/key /work/abs
        ln -s ../secret/key /work/rel
        cat /work/abs /work/rel
        """)

      refute result.stdout =~ "SECRET"
      refute File.exists?(Path.join(ctx.rw, "abs"))
      refute File.exists?(Path.join(ctx.rw, "rel"))
    end
  end

  describe "mount policy" do
    test "sensitive host paths are refused by default, naming the mount" do
      for host <- ["/etc", "/proc", "/sys", "/dev", "/home", "/"] do
        assert_raise ArgumentError, ~r/mount "\/x" -> "#{host}": .*sensitive/, fn ->
          Session.new(mounts: [{"/x", host, :read_only}])
        end
      end
    end

    test "paths with a secret-directory component are refused", ctx do
      aws = Path.join(ctx.root, ".aws")
      File.mkdir_p!(aws)

      assert_raise ArgumentError, ~r/sensitive/, fn ->
        Session.new(mounts: [{"/x", aws, :read_only}])
      end
    end

    test "an allowlist entry covering a sensitive path lets it in" do
      session =
        Session.new(mounts: [{"/host_etc", "/etc", :read_only}], allowed_mount_paths: ["/etc"])

      assert %Result{exit_code: 0, stdout: stdout} = run(session, "ls /host_etc")
      assert stdout =~ "hostname" or stdout =~ "passwd"
    end

    test "once set, the allowlist is the only gate", ctx do
      assert %Session{} =
               Session.new(
                 mounts: [{"/data", ctx.ro, :read_only}],
                 allowed_mount_paths: [ctx.root]
               )

      assert_raise ArgumentError, ~r/not under any :allowed_mount_paths entry/, fn ->
        Session.new(mounts: [{"/data", ctx.ro, :read_only}], allowed_mount_paths: [ctx.secret])
      end

      # An allowlist without /etc does not re-enable the denylist's exception.
      assert_raise ArgumentError, ~r/not under any :allowed_mount_paths entry/, fn ->
        Session.new(mounts: [{"/x", "/etc", :read_only}], allowed_mount_paths: [ctx.root])
      end
    end

    test "allowlist entries are compared after resolving symlinks", ctx do
      link = Path.join(ctx.root, "link_to_ro")
      File.ln_s!(ctx.ro, link)

      assert %Session{} =
               Session.new(mounts: [{"/d", link, :read_only}], allowed_mount_paths: [ctx.ro])

      assert_raise ArgumentError, ~r/not under/, fn ->
        Session.new(
          mounts: [{"/d", ctx.ro, :read_only}],
          allowed_mount_paths: [Path.join([ctx.rw, "..", "rw"])]
        )
      end
    end

    test "missing and non-directory host paths raise naming the mount", ctx do
      assert_raise ArgumentError, ~r/mount "\/x" -> ".*nope": host path cannot be resolved/, fn ->
        Session.new(mounts: [{"/x", Path.join(ctx.root, "nope"), :read_only}])
      end

      assert_raise ArgumentError, ~r/is not a directory/, fn ->
        Session.new(mounts: [{"/x", Path.join(ctx.ro, "a.txt"), :read_only}])
      end
    end

    test "malformed mounts raise ArgumentError", ctx do
      for {mounts, message} <- [
            {[{"/x", ctx.ro, :rw}], ~r/unknown mode :rw/},
            {[{"x", ctx.ro, :read_only}], ~r/sandbox path must be an absolute path/},
            {[{"/x", "", :read_only}], ~r/host path must be a non-empty string/},
            {[{"/x", ctx.ro}], ~r/:mounts entries must be/},
            {[{"/x", ctx.ro, :read_only}, {"/x/", ctx.rw, :read_write}],
             ~r/mount .* and mount .* overlap \("\/x" and "\/x"\)/},
            {[{"/x", ctx.ro, :read_only}, {"//x/y", ctx.rw, :read_write}],
             ~r/overlap \("\/x" and "\/x\/y"\)/},
            {[{"/x/./y", ctx.ro, :read_only}], ~r/must be normalized/},
            {[{"/", ctx.ro, :read_only}], ~r/must not be the root/},
            {%{"/x" => ctx.ro}, ~r/:mounts must be a list/}
          ] do
        assert_raise ArgumentError, message, fn -> Session.new(mounts: mounts) end
      end

      assert_raise ArgumentError, ~r/:allowed_mount_paths must be a list/, fn ->
        Session.new(allowed_mount_paths: "/tmp")
      end
    end
  end
end
