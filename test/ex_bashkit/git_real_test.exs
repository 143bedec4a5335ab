defmodule ExBashkit.GitRealTest do
  # The sandbox's git on repositories real git made, mounted read-write
  # into a session: the same command sequences run through Debian's git
  # on one copy and ours on another, then real git judges both results
  # (status, history, every file of the work tree, `fsck --strict`).
  use ExBashkit.Case, async: true

  @moduletag :git

  import ExBashkit.Test.RealGit

  @shapes %{
    # Loose objects, loose refs, as commits leave them.
    "loose" => &__MODULE__.loose/2,
    # `git clone` over the pack protocol: one pack, packed-refs, origin/*.
    "cloned" => &__MODULE__.cloned/2,
    # `git gc`: packs with deltas, packed-refs, a commit-graph.
    "gc" => &__MODULE__.gced/2,
    # An index in version 4 (prefix-compressed paths).
    "index v4" => &__MODULE__.index_v4/2,
    # `git gc --aggressive` after many edits: long delta chains.
    "aggressive" => &__MODULE__.aggressive/2
  }

  @doc false
  def loose(dir, origin), do: File.cp_r!(origin, dir)

  @doc false
  def cloned(dir, origin) do
    git!(Path.dirname(dir), "git clone -q --no-local #{origin} #{dir}", identity())

    git!(
      dir,
      "echo 'a log' > debug.log && echo keep > keep.log && mkdir -p build && echo o > build/out.o"
    )
  end

  @doc false
  def gced(dir, origin) do
    File.cp_r!(origin, dir)
    git!(dir, "git gc -q && test -f .git/packed-refs")
  end

  @doc false
  def index_v4(dir, origin) do
    cloned(dir, origin)
    git!(dir, "git update-index --index-version 4")
  end

  @doc false
  def aggressive(dir, origin) do
    File.cp_r!(origin, dir)
    git!(dir, "git repack -a -d -q --depth=50 --window=50 && git prune-packed")
  end

  setup_all do
    root = Path.join(System.tmp_dir!(), unique_name("ex_bashkit_git_real"))
    File.mkdir_p!(root)
    on_exit(fn -> File.rm_rf!(root) end)
    origin = history!(Path.join(root, "origin"))

    shapes =
      for {name, make} <- @shapes, into: %{} do
        dir = Path.join(root, "shape_" <> String.replace(name, " ", "_"))
        make.(dir, origin)
        {name, dir}
      end

    %{root: root, shapes: shapes}
  end

  # ---- running a sequence in both gits ---------------------------------------

  defp copy!(template, prefix) do
    dir = tmp_path("ex_bashkit_" <> prefix)
    {_, 0} = System.cmd("cp", ["-a", template, dir])
    on_exit(fn -> File.rm_rf!(dir) end)
    worker_may_write!(dir)
  end

  defp theirs(dir, script) do
    env = host_env() ++ [{"HOME", dir} | Enum.to_list(identity())]
    err = dir <> ".stderr"
    wrapped = "(#{script}) 2>#{err}"
    {out, code} = System.cmd("bash", ["-c", wrapped], cd: dir, env: env)
    {out, File.read!(err), code}
  after
    File.rm(dir <> ".stderr")
  end

  defp ours(dir, script) do
    session =
      Session.new(
        git: true,
        cwd: "/repo",
        env: Map.put(identity(), "HOME", "/home/user"),
        mounts: [{"/repo", dir, :read_write}]
      )

    %Result{stdout: out, stderr: err, exit_code: code} = run(session, script)
    {out, err, code}
  end

  # What real git says of a repository: the state both must end in.
  defp judged(dir) do
    {status, _, _} = theirs(dir, "git status --porcelain=v2 --branch --untracked-files=all")
    {history, _, _} = theirs(dir, "git log --all --format='%H %T %P' && git for-each-ref")

    {files, _, _} =
      theirs(
        dir,
        "find . -path ./.git -prune -o \\( -type f -o -type l \\) -print0 | sort -z | xargs -0 -r sha1sum"
      )

    %{status: status, history: history, files: files}
  end

  defp fsck(dir) do
    env = host_env() ++ [{"HOME", dir}]

    System.cmd("git", ["fsck", "--strict", "--no-progress"],
      cd: dir,
      env: env,
      stderr_to_stdout: true
    )
  end

  @sequences [
    # What agents read.
    "git status",
    "git status --short",
    "git status --porcelain",
    "git status -sb",
    "git log --oneline",
    "git log --format='%H %P %an <%ae> %ad %cn %cd %s'",
    "git log -n 2",
    "git log --stat -n 3",
    "git log -p -n 2",
    "git log --oneline -- a.txt",
    "git log --oneline v1..HEAD",
    "git show --stat",
    "git show HEAD~1",
    "git show v1:a.txt",
    "git show HEAD:src/main.rs",
    "git diff HEAD~1 HEAD",
    "git diff --stat HEAD~3 HEAD",
    "git diff --name-status HEAD~3 HEAD",
    "git diff --name-only v1 HEAD",
    "git branch",
    "git tag",
    "git rev-parse HEAD v1 v2^{} HEAD~2",
    "git rev-parse --abbrev-ref HEAD",
    "git ls-files",
    "git ls-files -s",
    "git cat-file -p HEAD",
    "git cat-file -t v2",
    "git cat-file -p v2",
    "git grep -n hello",
    "git merge-base main feature",
    "git ls-files -o --exclude-standard",
    # What agents change.
    "echo x >> a.txt && git status --short && git diff",
    "echo x >> a.txt && git add a.txt && git commit -q -m change && git log --oneline -n 2",
    "echo new > new.txt && git add -A && git commit -m 'add new'",
    "git rm -q a.txt && git commit -q -m rm && git status --short",
    "git mv a.txt moved.txt && git status --short && git commit -q -m mv",
    "echo y >> src/main.rs && git commit -q -am all && git show --stat",
    "git commit -q --allow-empty -m empty && git log --oneline -n 1",
    "git commit -q --amend -m amended && git log --format='%s %an %ad' -n 2",
    "git checkout -q -b topic && echo t > t.txt && git add t.txt && git commit -q -m t && git checkout -q main && git branch",
    "git switch -q -c other v1 && git status --short && cat a.txt",
    "git reset -q --hard HEAD~2 && git status --short && git log --oneline -n 1",
    "git reset -q --soft HEAD~1 && git status --short",
    "git reset -q HEAD~1 && git status --short",
    "echo x >> a.txt && git restore a.txt && git status --short",
    "echo x >> a.txt && git add a.txt && git restore --staged a.txt && git status --short",
    "git tag -a v3 -m third && git cat-file -p v3 && git tag",
    "git tag light && git tag -d light",
    "git branch -m renamed && git branch",
    "git branch gone && git branch -d gone",
    "echo z > build/z.o && echo l > x.log && git status --short",
    "echo l > x.log && git add -A && git status --short",
    "echo l > x.log && git add x.log",
    "echo u > untracked.txt && git clean -n",
    "mkdir -p junk && echo j > junk/j.txt && git clean -fdq && git status --short",
    "git config user.name Bob && git config user.name && echo b >> a.txt && git commit -qam bob && git log -n 1 --format=%an",
    "git checkout -q v1 && git status | head -1",
    "git checkout -q HEAD~1 -- a.txt && git status --short",
    "chmod -x run.sh && git status --short && git commit -qam 'not executable'",
    "echo 'more' >> numbers.txt && git stash -q 2>/dev/null; git status --short",
    # Status in git's other forms.
    "echo x >> a.txt && git add a.txt && echo y >> a.txt && echo n > src/new.rs && git status --porcelain=v2 --branch",
    "git mv a.txt b.txt && git rm -q --cached run.sh && git status --porcelain=v2",
    "mkdir -p deep/er && echo d > deep/er/d.txt && git status -uall --porcelain && git status -uno",
    "echo x >> a.txt && echo n > src/new.rs && cd src && git status --short && git status --porcelain",
    # History as a whole.
    "git log --graph --oneline",
    "git log --graph -n 3",
    "git log --format='%h %p %ai %s' -n 8",
    "git describe && git describe --tags HEAD~7 && git describe --always --abbrev=10 HEAD~8",
    "git shortlog -sn HEAD && git shortlog HEAD",
    "git blame a.txt",
    "git blame docs/manual.md",
    "git blame -- src/lib/mod.rs",
    "git show v2 --stat",
    "git rev-parse HEAD~6^2 HEAD~6^1 v2^{commit}",
    "git branch -v && git branch -a",
    # Merges, clean and conflicted.
    "git checkout -q -b side HEAD~3 && echo s > side.txt && git add side.txt && git commit -qm side && git checkout -q main && git merge side && git log --graph --oneline -n 4",
    "git checkout -q -b side HEAD~1 && echo theirs > numbers.txt && git commit -qam side && git checkout -q main && echo ours > numbers.txt && git commit -qam ours && git merge side; git status; cat numbers.txt",
    "git checkout -q -b side HEAD~1 && echo theirs > numbers.txt && git commit -qam side && git checkout -q main && echo ours > numbers.txt && git commit -qam ours && git merge side; echo fixed > numbers.txt && git add numbers.txt && git status --short && git commit -q --no-edit && git log --graph --oneline -n 4",
    "git checkout -q -b side HEAD~1 && echo theirs > numbers.txt && git commit -qam side && git checkout -q main && echo ours > numbers.txt && git commit -qam ours && git merge side; git merge --abort && git status --short && cat numbers.txt",
    "git checkout -q -b side HEAD~2 && git rm -q numbers.txt && git commit -qm gone && git checkout -q main && git merge side; git status --short",
    "echo x >> a.txt && git add a.txt && git merge feature",
    # Stashes.
    "echo x >> a.txt && git stash && git stash list && git stash pop && git status --short",
    "echo x >> a.txt && git stash -q && echo y >> src/main.rs && git stash -q && git stash list && git stash drop -q && git stash list && git stash show",
    "echo x >> a.txt && echo n > n.txt && git add n.txt && git stash -q && git status --short && git stash apply -q; git status --short && git stash list",
    "git stash list && git stash pop"
  ]

  # The run takes ~2 min here: ten times that, for a slower machine.
  @tag timeout: 1_200_000
  test "fidelity on repositories real git made: output agrees, nothing is corrupted or lost",
       ctx do
    results =
      for {shape, template} <- ctx.shapes, script <- @sequences do
        a = copy!(template, "theirs")
        b = copy!(template, "ours")
        {t_out, t_err, t_code} = theirs(a, script)
        {o_out, o_err, o_code} = ours(b, script)
        {fsck_out, fsck_code} = fsck(b)
        same_output = t_out == o_out and t_code == o_code
        t_state = judged(a)
        o_state = judged(b)

        %{
          shape: shape,
          script: script,
          agreed: same_output and t_state == o_state,
          corrupt: fsck_code != 0,
          # Ours said it did the work, but the files are not what real
          # git left: the failure that loses a user's work.
          lost: o_code == 0 and t_state.files != o_state.files,
          detail: %{
            theirs: {t_out, t_err, t_code},
            ours: {o_out, o_err, o_code},
            state: {t_state, o_state},
            fsck: fsck_out
          }
        }
      end

    agreed = Enum.count(results, & &1.agreed)
    total = length(results)
    corrupt = Enum.filter(results, & &1.corrupt)
    lost = Enum.filter(results, & &1.lost)

    IO.puts(
      "\ngit on real repositories: #{agreed} of #{total} sequences agree " <>
        "(#{Float.round(agreed * 100 / total, 1)} %); corrupt: #{length(corrupt)}, files differing: #{length(lost)}\n"
    )

    if System.get_env("EX_BASHKIT_SHOW_DIFFERENCES") do
      for r <- results, not r.agreed or r.corrupt do
        {theirs_state, ours_state} = r.detail.state

        states =
          for {key, value} <- theirs_state, value != ours_state[key] do
            "  #{key} theirs: #{inspect(value)}\n  #{key} ours:   #{inspect(ours_state[key])}\n"
          end

        IO.puts(
          "--- #{r.shape} / #{r.script}\n  theirs: #{inspect(r.detail.theirs)}\n" <>
            "  ours:   #{inspect(r.detail.ours)}\n#{states}  fsck: #{inspect(r.detail.fsck)}"
        )
      end
    end

    assert total >= 150

    assert lost == [],
           "files differ after a sequence ours completed: #{inspect(Enum.map(lost, &{&1.shape, &1.script}))}"

    assert corrupt == [],
           "real git's fsck --strict failed after: #{inspect(Enum.map(corrupt, &{&1.shape, &1.script, &1.detail.fsck}))}"

    assert agreed / total >= 0.97
  end

  describe "a damaged or hostile repository" do
    setup ctx do
      dir = copy!(ctx.shapes["gc"], "hostile")
      session = Session.new(git: true, cwd: "/repo", mounts: [{"/repo", dir, :read_write}])
      %{dir: dir, session: session}
    end

    test "a corrupt index is an error, never an empty index: nothing is committed", ctx do
      index = Path.join(ctx.dir, ".git/index")
      bytes = File.read!(index)
      File.write!(index, binary_part(bytes, 0, 100) <> "garbage")
      head = git!(ctx.dir, "git rev-parse HEAD")

      for script <- ["git status", "git add a.txt", "git commit -qam nothing", "git ls-files"] do
        assert %Result{exit_code: 128, stderr: "fatal: index file corrupt" <> _} =
                 run(ctx.session, script)
      end

      assert git!(ctx.dir, "git rev-parse HEAD") == head
      assert File.read!(index) == binary_part(bytes, 0, 100) <> "garbage"
      assert %Result{exit_code: 0, stdout: "ok\n"} = run(ctx.session, "echo ok")
    end

    test "an object made to inflate past the cap, and a damaged pack, are refused with a message",
         ctx do
      # A loose blob of 120 MiB of zeros: ~120 KiB on disk.
      bomb = :zlib.compress(["blob 125829120", 0, :binary.copy(<<0>>, 125_829_120)])

      oid =
        :crypto.hash(:sha, ["blob 125829120", 0, :binary.copy(<<0>>, 125_829_120)])
        |> Base.encode16(case: :lower)

      path = Path.join([ctx.dir, ".git/objects", binary_part(oid, 0, 2), binary_part(oid, 2, 38)])
      File.mkdir_p!(Path.dirname(path))
      File.write!(path, bomb)
      assert %Result{exit_code: code, stderr: stderr} = run(ctx.session, "git cat-file -p #{oid}")
      assert code != 0
      assert stderr =~ "larger than the sandbox's git reads"

      [pack] = Path.wildcard(Path.join(ctx.dir, ".git/objects/pack/*.pack"))
      File.write!(pack, :binary.copy("x", File.stat!(pack).size))
      assert %Result{exit_code: 128, stderr: stderr} = run(ctx.session, "git log --oneline")
      assert stderr =~ ~r/fatal: (bad object|corrupt)/
      assert %Result{exit_code: 0, stdout: "ok\n"} = run(ctx.session, "echo ok")
    end

    test "an index extension the sandbox cannot keep true makes writes refuse, and nothing changes",
         ctx do
      git!(
        ctx.dir,
        "git update-index --untracked-cache && git status --porcelain >/dev/null && grep -c UNTR .git/index >/dev/null"
      )

      index = File.read!(Path.join(ctx.dir, ".git/index"))

      assert %Result{exit_code: 0, stdout: "?? keep.log\n"} =
               run(ctx.session, "git status --short")

      assert %Result{exit_code: 128, stderr: stderr} =
               run(ctx.session, "echo x >> a.txt && git add a.txt")

      assert stderr =~ "untracked cache"
      assert stderr =~ "git update-index --no-untracked-cache"
      assert File.read!(Path.join(ctx.dir, ".git/index")) == index
    end
  end
end
