# The reads an agent runs to orient itself in a repository, by the
# sandbox's git and by Debian's git on the same clone, side by side.
#
#   MIX_ENV=prod mix run bench/git_reads.exs              (ROUNDS=5)
#   REPO=/path/to/a/clone MIX_ENV=prod mix run bench/git_reads.exs
#
# Without REPO, the repository is made by real git (`fast-import`, then
# `git clone --no-local`): 20,000 commits on 2,000 files in 40
# directories, a merge of a side branch every 100 commits, 200 annotated
# tags. The sandbox reads it through a read-only mount (`git: true`, in
# the VM); real git runs through `bash -c` (the process start is part of
# what an agent pays there). Each figure: the median of ROUNDS runs
# (min–max), in ms; "same" says whether both printed the same.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.Session

defmodule GitReadsBench do
  @env [
    {"GIT_CONFIG_GLOBAL", "/dev/null"},
    {"GIT_CONFIG_NOSYSTEM", "1"},
    {"LC_ALL", "C"},
    {"TZ", "UTC"},
    {"GIT_OPTIONAL_LOCKS", "0"}
  ]

  @reads [
    "git status",
    "git status --short --branch",
    "git log --oneline -20",
    "git log -5",
    "git log --format='%h %an %ar %s' -10",
    "git log --oneline -5 -- dir7",
    "git log --oneline -3 -- dir3/f11.txt",
    "git log --oneline --first-parent -10",
    "git log --oneline --since='2023-06-01' | wc -l",
    "git log --author=Ada --oneline -5",
    "git log --grep=merge -i --oneline -5",
    "git log --oneline v1.100..v1.150 | wc -l",
    "git log --stat -3",
    "git log -p -2",
    "git show --stat HEAD",
    "git show HEAD~10",
    "git show HEAD:dir1/f1.txt",
    "git diff HEAD~5 HEAD --stat",
    "git diff HEAD~20 HEAD --shortstat",
    "git diff HEAD~1 --name-only",
    "git branch -a",
    "git branch -vv",
    "git tag | wc -l",
    "git tag --sort=-creatordate | head -5",
    "git describe --tags",
    "git describe --tags --abbrev=0",
    "git rev-parse HEAD",
    "git rev-parse --short HEAD",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-list --count HEAD",
    "git merge-base HEAD side",
    "git ls-files | wc -l",
    "git ls-tree -r --name-only HEAD | wc -l",
    "git cat-file -p HEAD",
    "git for-each-ref --count=5 --sort=-creatordate --format='%(refname:short)'",
    "git show-ref --tags | wc -l",
    "git shortlog -s -n HEAD",
    "git grep -n needle -- dir2",
    "git blame dir5/f3.txt | head -5",
    "git remote -v"
  ]

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    {repo, cleanup} = repository()

    try do
      session = Session.new(git: true, cwd: "/repo", mounts: [{"/repo", repo, :read_only}])

      # Once each, untimed: caches and the index's stat data warmed.
      Enum.each(@reads, &real(repo, &1))

      rows =
        for read <- @reads do
          IO.write(:stderr, "#{read} ")
          ours = for _ <- 1..rounds, do: timed(fn -> ours(session, read) end)
          IO.write(:stderr, "#{fmt(elem(stats(ours), 0))} ms\n")
          theirs = for _ <- 1..rounds, do: timed(fn -> real(repo, read) end)
          {[{_, our_out} | _], [{_, real_out} | _]} = {ours, theirs}
          {read, stats(ours), stats(theirs), our_out == real_out}
        end

      print(rows, rounds, repo)
    after
      cleanup.()
    end
  end

  defp ours(session, read) do
    case Session.exec(session, read, timeout_ms: 600_000) do
      {:ok, result} -> result.stdout
      {:error, message} -> "error: #{message}"
    end
  end

  defp real(repo, read) do
    {out, _} = System.cmd("bash", ["-c", read <> " 2>/dev/null"], cd: repo, env: @env)
    out
  end

  defp timed(fun) do
    {us, out} = :timer.tc(fun)
    {us / 1000, out}
  end

  defp stats(samples) do
    times = samples |> Enum.map(&elem(&1, 0)) |> Enum.sort()
    {Enum.at(times, div(length(times), 2)), List.first(times), List.last(times)}
  end

  defp print(rows, rounds, repo) do
    IO.puts("git reads on #{repo}: the sandbox's git vs real git, #{rounds} rounds, ms\n")
    IO.puts("| read | sandbox | real git | ratio | same |")
    IO.puts("|---|---:|---:|---:|:-:|")

    for {read, {ours, omin, omax}, {real, rmin, rmax}, same} <- rows do
      IO.puts(
        "| `#{read}` | #{fmt(ours)} (#{fmt(omin)}–#{fmt(omax)}) | " <>
          "#{fmt(real)} (#{fmt(rmin)}–#{fmt(rmax)}) | #{fmt(ours / real)}× | #{if same, do: "yes", else: "NO"} |"
      )
    end

    total = fn pick -> rows |> Enum.map(&(pick.(&1) |> elem(0))) |> Enum.sum() end
    ours = total.(&elem(&1, 1))
    real = total.(&elem(&1, 2))
    same = Enum.count(rows, &elem(&1, 3))
    within = Enum.count(rows, fn {_, {o, _, _}, {r, _, _}, _} -> o <= 2 * r or o < 50 end)

    IO.puts(
      "\n#{length(rows)} reads: #{same} print the same; all #{fmt(ours)} ms vs #{fmt(real)} ms; " <>
        "#{within} within 2× real git or under 50 ms"
    )
  end

  defp fmt(x) when is_float(x) and x < 10, do: :erlang.float_to_binary(x, decimals: 1)
  defp fmt(x), do: x |> round() |> Integer.to_string()

  # ---- the repository ----------------------------------------------------------

  defp repository do
    case System.get_env("REPO") do
      nil ->
        root = Path.join(System.tmp_dir!(), "git_reads_#{System.unique_integer([:positive])}")
        File.mkdir_p!(root)
        {make(root), fn -> File.rm_rf!(root) end}

      repo when is_binary(repo) ->
        if not File.dir?(repo), do: File.rename!(make(Path.dirname(repo)), repo)
        {Path.expand(repo), fn -> :ok end}
    end
  end

  defp make(root) do
    origin = Path.join(root, "origin")
    File.mkdir_p!(origin)
    git!(origin, "git init -q -b main .")
    stream = Path.join(root, "stream")
    File.write!(stream, fast_import())
    git!(origin, "git fast-import --quiet < #{stream}")
    clone = Path.join(root, "clone")
    git!(root, "git clone -q --no-local #{origin} #{clone}")
    clone
  end

  # 20,000 commits; every 100th merges `side`, which gains a commit of its
  # own each time; every 100th gets an annotated tag `v1.N`.
  defp fast_import do
    authors = ["Ada Lovelace <ada@example.com>", "Grace Hopper <grace@example.com>"]
    start = 1_650_000_000

    commits =
      for n <- 1..20_000 do
        who = Enum.at(authors, rem(n, 2))
        time = start + n * 3_000
        file = "dir#{rem(n * 7, 40)}/f#{rem(n * 13, 50)}.txt"
        body = "line #{n}\n" <> if(rem(n, 97) == 0, do: "needle #{n}\n", else: "")
        subject = if rem(n, 100) == 0, do: "merge side into main #{n}", else: "change #{n}"

        side =
          if rem(n, 100) == 50 do
            "commit refs/heads/side\nauthor #{who} #{time - 1} +0000\ncommitter #{who} #{time - 1} +0000\n" <>
              data("side work #{n}\n") <>
              if(n > 50, do: "", else: "from refs/heads/main\n") <>
              "M 100644 inline side/s#{n}.txt\n" <> data("side #{n}\n") <> "\n"
          else
            ""
          end

        merge = if rem(n, 100) == 0, do: "merge refs/heads/side\n", else: ""

        tag =
          if rem(n, 100) == 0 do
            "tag v1.#{div(n, 100)}\nfrom refs/heads/main\ntagger #{who} #{time + 1} +0000\n" <>
              data("release 1.#{div(n, 100)}\n") <> "\n"
          else
            ""
          end

        side <>
          "commit refs/heads/main\nauthor #{who} #{time} +0000\ncommitter #{who} #{time} +0000\n" <>
          data("#{subject}\n") <>
          merge <>
          "M 100644 inline #{file}\n" <> data(body) <> "\n" <> tag
      end

    # Every file exists from the first commit on.
    first =
      "commit refs/heads/main\nauthor #{hd(authors)} #{start} +0000\ncommitter #{hd(authors)} #{start} +0000\n" <>
        data("initial\n") <>
        Enum.map_join(0..39, fn d ->
          Enum.map_join(0..49, fn f ->
            "M 100644 inline dir#{d}/f#{f}.txt\n" <> data("start\n")
          end)
        end) <> "\n"

    first <> Enum.join(commits)
  end

  defp data(text), do: "data #{byte_size(text)}\n#{text}"

  defp git!(dir, script) do
    {out, code} = System.cmd("bash", ["-c", script], cd: dir, env: @env, stderr_to_stdout: true)

    if code != 0, do: raise("#{script} failed: #{out}")
    out
  end
end

GitReadsBench.run()
