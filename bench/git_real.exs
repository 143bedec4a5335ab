# The sandbox's git on a real clone (issue 58) against Debian's git on the
# same machine, side by side in one run.
#
#   MIX_ENV=prod mix run bench/git_real.exs          (ROUNDS=5 by default)
#
# The repository: 5,000 files in 100 directories and 2,000 commits (each
# changing a few files), made by real git (`fast-import`), then cloned
# with `git clone --no-local`: one pack with deltas, packed-refs, a real
# index. Each round copies that clone twice (`cp -a`); the sandbox works
# on one, mounted read-write into a session (`git: true`, in the VM), real
# git on the other through `bash -c` (the process start is part of what an
# agent pays there). Both run one `git status` first, untimed (a copy's
# new inode numbers make real git re-check every file once). Then, timed:
# `git status` (clean), `git log -n 100`, `git diff` after 10 files are
# edited, and `git commit -am` of those edits.
# Each figure: the median of ROUNDS rounds (min–max), in ms.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.{Result, Session}

defmodule GitRealBench do
  @files 5_000
  @commits 2_000
  @env [{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"GIT_CONFIG_NOSYSTEM", "1"}, {"LC_ALL", "C"}]
  @identity %{
    "GIT_AUTHOR_NAME" => "Bench",
    "GIT_AUTHOR_EMAIL" => "bench@example.com",
    "GIT_COMMITTER_NAME" => "Bench",
    "GIT_COMMITTER_EMAIL" => "bench@example.com"
  }
  @steps [
    status: "git status",
    log: "git log -n 100",
    diff: "git diff",
    commit: "git commit -q -am edits"
  ]
  @edit "for d in $(seq 1 10); do echo changed >> dir$d/f1.txt; done"

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    root = Path.join(System.tmp_dir!(), "git_real_bench_#{System.unique_integer([:positive])}")
    File.mkdir_p!(root)

    try do
      clone = repository!(root)

      IO.puts(
        "## git on a clone of #{@files} files and #{@commits} commits " <>
          "(ms; median of #{rounds} rounds, min–max)\n"
      )

      IO.puts("| step | sandbox (`git: true`, a read-write mount) | real git | ratio |")
      IO.puts("|---|---|---|---|")
      results = for i <- 1..rounds, do: round!(root, clone, i)

      for {step, _} <- @steps do
        ours = Enum.map(results, &elem(&1[step], 0))
        theirs = Enum.map(results, &elem(&1[step], 1))
        ratio = median(ours) / median(theirs)

        IO.puts(
          "| `#{@steps[step]}` | #{spread(ours)} | #{spread(theirs)} | #{Float.round(ratio, 2)}× |"
        )
      end
    after
      File.rm_rf!(root)
    end
  end

  defp median(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))

  defp spread(values), do: values |> Enum.map(&Float.round(&1 / 1000, 1)) |> BenchSupport.spread()

  defp sh!(dir, script, env \\ []) do
    case System.cmd("bash", ["-c", script], cd: dir, env: @env ++ env, stderr_to_stdout: true) do
      {out, 0} -> out
      {out, code} -> raise "#{script} failed (#{code}): #{out}"
    end
  end

  # fast-import: the tree in one commit, then 1,999 commits of 3 files each.
  defp repository!(root) do
    origin = Path.join(root, "origin")
    File.mkdir_p!(origin)
    sh!(origin, "git init -q -b main .")
    stream = Path.join(root, "stream")

    File.open!(stream, [:write], fn io ->
      for n <- 1..@commits do
        files =
          if n == 1,
            do: for(d <- 1..100, f <- 1..div(@files, 100), do: {d, f}),
            else: for(k <- 0..2, do: {rem(n * 7 + k, 100) + 1, rem(n * 13 + k, 50) + 1})

        message = "commit #{n}\n"
        IO.write(io, "commit refs/heads/main\n")
        IO.write(io, "committer Bench <bench@example.com> #{1_600_000_000 + n * 60} +0000\n")
        IO.write(io, "data #{byte_size(message)}\n#{message}")

        for {d, f} <- files do
          body =
            "file #{f} in dir #{d}, version #{n}\nthe quick brown fox jumps over the lazy dog\n"

          IO.write(io, "M 644 inline dir#{d}/f#{f}.txt\ndata #{byte_size(body)}\n#{body}")
        end

        IO.write(io, "\n")
      end
    end)

    sh!(origin, "git fast-import --quiet < #{stream} && git checkout -q main")
    File.rm!(stream)
    clone = Path.join(root, "clone")
    sh!(root, "git clone -q --no-local origin clone")
    clone
  end

  defp round!(root, clone, i) do
    ours_dir = Path.join(root, "ours#{i}")
    theirs_dir = Path.join(root, "theirs#{i}")
    sh!(root, "cp -a #{clone} #{ours_dir} && cp -a #{clone} #{theirs_dir}")

    session =
      Session.new(
        git: true,
        cwd: "/repo",
        env: @identity,
        mounts: [{"/repo", ours_dir, :read_write}],
        limits: [max_commands: 1_000_000, max_loop_iterations: 1_000_000]
      )

    ok!(session, "git status")
    sh!(theirs_dir, "git status", Enum.to_list(@identity))

    timings =
      for {step, command} <- @steps, into: %{} do
        if step == :diff do
          ok!(session, @edit)
          sh!(theirs_dir, @edit)
        end

        {ours, _} = :timer.tc(fn -> ok!(session, command) end)
        {theirs, _} = :timer.tc(fn -> sh!(theirs_dir, command, Enum.to_list(@identity)) end)
        {step, {ours, theirs}}
      end

    File.rm_rf!(ours_dir)
    File.rm_rf!(theirs_dir)
    timings
  end

  defp ok!(session, script) do
    case Session.exec(session, script) do
      {:ok, %Result{exit_code: 0} = result} -> result
      other -> raise "#{script}: #{inspect(other, limit: 5, printable_limit: 500)}"
    end
  end
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &GitRealBench.run/0)
