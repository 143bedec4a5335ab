# git and sqlite3 in the sandbox (issue 44) against the real binaries on
# this machine (Debian's git and sqlite3), side by side in one run.
#
#   MIX_ENV=prod mix run bench/git_sqlite.exs        (ROUNDS=5 by default)
#
# git: a tree of 1,000 files of ~100 bytes in 50 directories, committed;
# then `git status` (clean), `git status` after 10 files changed, and
# `git add -A && git commit` of those 10. The sandbox runs in the VM
# (`git: true`); the real git in a tmpfs-free temporary directory, through
# `bash -c` (the process start is part of what an agent pays there).
# sqlite3: 100,000 rows of CSV (id,name,amount) imported with `.import`,
# then `SELECT count(*), sum(amount), avg(amount) ... GROUP BY` over it;
# the sandbox in a worker (`sqlite: true` needs `isolation: :process`).
# Each figure: the median of ROUNDS rounds (min–max), in ms.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.{Result, Session}

defmodule GitSqliteBench do
  @files 1_000
  @rows 100_000

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    IO.puts("## git on a 1,000-file tree (ms; median of #{rounds} rounds, min–max)\n")
    IO.puts("| step | sandbox (`git: true`) | real git |")
    IO.puts("|---|---|---|")
    git = for _ <- 1..rounds, do: git_round()
    for step <- [:clean_status, :dirty_status, :commit], do: row(step, git)

    IO.puts("\n## sqlite3 on 100,000 rows (ms; median of #{rounds} rounds, min–max)\n")
    IO.puts("| step | sandbox (`sqlite: true`, in a worker) | real sqlite3 |")
    IO.puts("|---|---|---|")
    sqlite = for _ <- 1..rounds, do: sqlite_round()
    for step <- [:import, :aggregate], do: row(step, sqlite)
  end

  defp row(step, rounds) do
    ours = Enum.map(rounds, &elem(&1[step], 0))
    theirs = Enum.map(rounds, &elem(&1[step], 1))
    IO.puts("| #{step} | #{spread(ours)} | #{spread(theirs)} |")
  end

  defp spread(values), do: values |> Enum.map(&Float.round(&1 / 1000, 1)) |> BenchSupport.spread()

  defp timed(fun) do
    {us, result} = :timer.tc(fun)
    {us, result}
  end

  # A script that writes the tree: the same in both shells.
  defp tree_script do
    "for d in $(seq 1 50); do mkdir -p dir$d; for f in $(seq 1 20); do " <>
      "printf 'file %s in %s: the quick brown fox jumps over the lazy dog\\n' $f $d > dir$d/f$f.txt; done; done"
  end

  @edit "for d in $(seq 1 10); do echo changed >> dir$d/f1.txt; done"

  defp git_round do
    session =
      Session.new(
        git: true,
        cwd: "/repo",
        limits: [max_commands: 1_000_000, max_loop_iterations: 1_000_000]
      )

    ok!(session, "git init -q && #{tree_script()} && git add -A && git commit -q -m tree")
    %Result{stdout: files} = ok!(session, "git ls-files | wc -l")
    @files = files |> String.trim() |> String.to_integer()

    dir = Path.join(System.tmp_dir!(), "git_bench_#{System.unique_integer([:positive])}")
    File.mkdir_p!(dir)
    env = [{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"HOME", dir}]
    real = fn script -> {_, 0} = System.cmd("bash", ["-c", script], cd: dir, env: env) end

    real.(
      "git init -q && git config user.name b && git config user.email b@x && " <>
        "#{tree_script()} && git add -A && git commit -q -m tree"
    )

    {clean_ours, _} = timed(fn -> ok!(session, "git status --short") end)
    {clean_theirs, _} = timed(fn -> real.("git status --short") end)
    ok!(session, @edit)
    real.(@edit)
    {dirty_ours, _} = timed(fn -> ok!(session, "git status --short") end)
    {dirty_theirs, _} = timed(fn -> real.("git status --short") end)
    {commit_ours, _} = timed(fn -> ok!(session, "git add -A && git commit -q -m edit") end)
    {commit_theirs, _} = timed(fn -> real.("git add -A && git commit -q -m edit") end)
    File.rm_rf!(dir)

    %{
      clean_status: {clean_ours, clean_theirs},
      dirty_status: {dirty_ours, dirty_theirs},
      commit: {commit_ours, commit_theirs}
    }
  end

  defp sqlite_round do
    csv =
      [
        "id,name,amount\n"
        | for(i <- 1..@rows, do: "#{i},name#{rem(i, 100)},#{rem(i * 37, 1000)}\n")
      ]
      |> IO.iodata_to_binary()

    session =
      Session.new(
        sqlite: true,
        isolation: :process,
        cwd: "/data",
        limits: [max_file_bytes: 100_000_000, max_sqlite_bytes: 100_000_000]
      )

    :ok = Session.write_file(session, "/data/rows.csv", csv)
    dir = Path.join(System.tmp_dir!(), "sqlite_bench_#{System.unique_integer([:positive])}")
    File.mkdir_p!(dir)
    File.write!(Path.join(dir, "rows.csv"), csv)
    real = fn args -> {_, 0} = System.cmd("sqlite3", args, cd: dir) end
    import = [".import --csv rows.csv rows"]

    aggregate =
      "SELECT name, count(*), sum(amount), avg(amount) FROM rows GROUP BY name ORDER BY name"

    {import_ours, _} = timed(fn -> ok!(session, "sqlite3 t.db '#{hd(import)}'") end)

    {import_theirs, _} = timed(fn -> real.(["t.db" | import]) end)

    {aggregate_ours, %Result{stdout: ours}} =
      timed(fn -> ok!(session, "sqlite3 t.db '#{aggregate}'") end)

    {aggregate_theirs, {theirs, 0}} =
      timed(fn -> System.cmd("sqlite3", ["t.db", aggregate], cd: dir) end)

    File.rm_rf!(dir)
    Session.close(session)
    # The same answer, or the figures mean nothing.
    true = String.split(ours, "\n") |> length() == String.split(theirs, "\n") |> length()

    %{import: {import_ours, import_theirs}, aggregate: {aggregate_ours, aggregate_theirs}}
  end

  defp ok!(session, script) do
    {:ok, %Result{exit_code: 0} = result} = Session.exec(session, script, timeout_ms: 300_000)
    result
  end
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &GitSqliteBench.run/0)
