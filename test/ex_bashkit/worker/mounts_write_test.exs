defmodule ExBashkit.Worker.MountsWriteTest do
  # `:read_write` mounts in isolated sessions: a root VM's worker writes
  # them as the directory's owner (never as root), so real tools on the
  # host find the user's files as the user would have left them; a mount
  # no unprivileged owner can write is refused at new/1, with the reason.
  use ExBashkit.Case, async: true

  import ExBashkit.Test.RealGit

  @moduletag :isolation

  # A user of the host's who is neither root nor the worker's own user.
  @owner 4242

  setup do
    unless ExBashkit.isolation_info().root, do: raise("these tests need a VM running as root")
    dir = host_dir!("owned")
    %{dir: dir}
  end

  defp give!(dir, uid \\ @owner) do
    {_, 0} = System.cmd("chown", ["-R", "#{uid}:#{uid}", dir])
    dir
  end

  defp owners(dir) do
    {out, 0} = System.cmd("find", [dir, "-mindepth", "1", "-printf", "%u:%U %p\n"])
    out |> String.split("\n", trim: true) |> Enum.map(&(&1 |> String.split(" ") |> hd()))
  end

  test "a script writes a :read_write mount as the directory's owner", ctx do
    give!(ctx.dir)
    session = Session.new(isolation: :process, mounts: [{"/data", ctx.dir, :read_write}])

    assert %Result{exit_code: 0, stderr: ""} =
             run(session, "echo one > /data/new.txt && mkdir /data/sub && echo two > /data/sub/f")

    assert File.read!(Path.join(ctx.dir, "sub/f")) == "two\n"

    assert owners(ctx.dir)
           |> Enum.uniq()
           |> Enum.map(&String.split(&1, ":"))
           |> Enum.map(&List.last/1) == ["#{@owner}"]
  end

  test "a mount root owns, or mounts of different owners, are refused at new/1 with what to do",
       ctx do
    other = host_dir!("other")
    {_, 0} = System.cmd("chown", ["0:0", ctx.dir])

    error =
      assert_raise ArgumentError, fn ->
        Session.new(isolation: :process, mounts: [{"/data", ctx.dir, :read_write}])
      end

    assert error.message =~ ":mounts: #{inspect(ctx.dir)} is owned by root"
    assert error.message =~ "chown"

    give!(ctx.dir)
    give!(other, @owner + 1)

    assert_raise ArgumentError, ~r/must share one owner/, fn ->
      Session.new(
        isolation: :process,
        mounts: [{"/a", ctx.dir, :read_write}, {"/b", other, :read_write}]
      )
    end

    # Read-only mounts and sessions in the VM are as before.
    {_, 0} = System.cmd("chown", ["0:0", ctx.dir])

    assert %Result{exit_code: 0} =
             run(
               Session.new(isolation: :process, mounts: [{"/data", ctx.dir, :read_only}]),
               "ls /data"
             )

    assert %Result{exit_code: 0} =
             run(Session.new(mounts: [{"/data", ctx.dir, :read_write}]), "touch /data/x")
  end

  test "git commits on the user's checkout from a worker; real git finds it whole", ctx do
    repo = history!(Path.join(ctx.dir, "repo"))
    tracked = git!(repo, "git ls-files")
    give!(ctx.dir)

    session =
      Session.new(
        isolation: :process,
        git: true,
        cwd: "/work",
        env: identity(),
        mounts: [{"/work", repo, :read_write}]
      )

    assert %Result{exit_code: 0, stdout: "?? keep.log\n"} = run(session, "git status --short")

    assert %Result{exit_code: 0} =
             run(
               session,
               "echo change >> a.txt && git add a.txt && git commit -q -m 'from a worker'"
             )

    {fsck, code} =
      System.cmd("git", ["fsck", "--strict"], cd: repo, env: host_env(), stderr_to_stdout: true)

    assert {code, fsck} == {0, ""}
    assert git!(repo, "git status --porcelain") == "?? keep.log\n"
    assert git!(repo, "git log -1 --format=%s") == "from a worker\n"
    assert git!(repo, "git ls-files") == tracked
  end

  @tag :sqlite
  test "sqlite3 in a worker and real sqlite3 take turns on one database", ctx do
    sqlite3 = System.find_executable("sqlite3") || flunk("sqlite3 is needed")
    theirs = Path.join(ctx.dir, "theirs.db")

    {_, 0} =
      System.cmd(sqlite3, [
        theirs,
        "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t(v) VALUES ('host');"
      ])

    give!(ctx.dir)

    session =
      Session.new(
        isolation: :process,
        sqlite: true,
        cwd: "/data",
        mounts: [{"/data", ctx.dir, :read_write}]
      )

    assert %Result{exit_code: 0, stdout: "1|host\n2|sandbox\n"} =
             run(
               session,
               ~s{sqlite3 theirs.db "INSERT INTO t(v) VALUES ('sandbox'); SELECT * FROM t;"}
             )

    assert %Result{exit_code: 0} =
             run(
               session,
               ~s{sqlite3 ours.db "CREATE TABLE n(x); INSERT INTO n VALUES (1), (2), (3);"}
             )

    for {db, query, rows} <- [
          {"theirs.db", "SELECT v FROM t ORDER BY id", "host\nsandbox\n"},
          {"ours.db", "SELECT sum(x) FROM n", "6\n"}
        ] do
      path = Path.join(ctx.dir, db)
      assert {"ok\n", 0} = System.cmd(sqlite3, [path, "PRAGMA integrity_check"])
      assert {^rows, 0} = System.cmd(sqlite3, [path, query])
    end
  end
end
