defmodule ExBashkit.GitMetadataTest do
  # Nothing the sandbox writes on the user's disk makes the host run code.
  # A checkout real git made is mounted read-write; scripts try every route
  # into its git metadata (hooks, config, new `.git` entries), our own git
  # is asked for keys that run programs, and hostile repositories served by
  # real `git http-backend` are cloned and pulled. Then real git on the
  # host takes its turn (status, checkout, commit, an alias) and a canary
  # file outside the checkout shows whether anything ran.
  use ExBashkit.Case, async: true

  @moduletag :git

  import ExBashkit.Test.RealGit

  alias ExBashkit.Test.GitServer

  # ---- a checkout, the canary and the judge -----------------------------------

  defp checkout!(prefix) do
    base = host_dir!(prefix)
    repo = history!(Path.join(base, "repo"))
    # A remote, so that the judge's `git fetch` runs what a remote's
    # config could name.
    git!(repo, "git remote add origin \"$PWD\"")
    hand_over!(base)
    %{base: base, repo: repo, canary: Path.join(base, "CANARY")}
  end

  # The whole tree to the user a worker writes as, so a refusal below is
  # the guard's and never the kernel's.
  defp hand_over!(dir) do
    with %{worker_user: {uid, gid}} <- ExBashkit.isolation_info() do
      {_, 0} = System.cmd("chown", ["-R", "#{uid}:#{gid}", dir])
    end

    dir
  end

  defp session!(ctx, isolation, opts \\ []) do
    [
      git: true,
      python: true,
      isolation: isolation,
      cwd: "/work",
      env: identity(),
      mounts: [{"/work", ctx.repo, Keyword.get(opts, :mode, :read_write)}]
    ]
    |> Keyword.merge(Keyword.delete(opts, :mode))
    |> Session.new()
  end

  # What real git reads from the repository: its config and its hooks.
  defp metadata(repo) do
    hooks = Path.join(repo, ".git/hooks")
    listed = if File.dir?(hooks), do: File.ls!(hooks) |> Enum.sort(), else: []
    {File.read!(Path.join(repo, ".git/config")), listed}
  end

  # Real git's turn on the host, as the user's tooling would take it.
  defp judge!(ctx) do
    git!(
      ctx.repo,
      "git status >/dev/null; git checkout -q -b judge_$$; " <>
        "git commit -q --allow-empty -m judge; git st >/dev/null 2>&1 || true; " <>
        "git fetch -q origin 2>/dev/null || true; git log -1 --format=%s >/dev/null; " <>
        "git checkout -q - ",
      identity()
    )

    refute File.exists?(ctx.canary), "real git on the host ran what the sandbox planted"
    # Real git ran as root here, where the checkout's owner and the worker's
    # user are one: what it made (its commit's `objects/xx/`, say) goes
    # back to that user, or the agent's next commit may meet a directory
    # it cannot write, by its hash's first byte.
    hand_over!(ctx.base)
  end

  # Whether the script failed, and what it said: a refused write fails the
  # command (exit status and message) or, where bashkit's builtin passes
  # the error up, the script (`{:error, message}`).
  defp attempt(session, script) do
    case Session.exec(session, script) do
      {:ok, %Result{exit_code: code, stderr: stderr}} -> {code != 0, stderr}
      {:error, message} -> {true, message}
    end
  end

  defp hook(canary), do: ~s|printf '#!/bin/sh\\ntouch #{canary}\\n'|

  # Each route a prompt-injected agent might take into the metadata.
  defp routes(canary) do
    evil = ~s|"touch #{canary}; false"|

    [
      {"a redirection into hooks/",
       "#{hook(canary)} > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"},
      {"an append to config", ~s|printf '[core]\\n\\tfsmonitor = #{evil}\\n' >> .git/config|},
      {"sed -i on config",
       ~s|sed -i 's\|^\\[core\\]$\|[core]\\n\\tfsmonitor = #{evil}\|' .git/config|},
      {"mv from memory into hooks/",
       "#{hook(canary)} > /tmp/h && chmod +x /tmp/h && mv /tmp/h .git/hooks/pre-commit"},
      {"mv within the mount into hooks/",
       "#{hook(canary)} > h && chmod +x h && mv h .git/hooks/pre-commit"},
      {"cp over config",
       ~s|cp .git/config /tmp/c && printf '[alias]\\n\\tst = "!touch #{canary}"\\n' >> /tmp/c && cp /tmp/c .git/config|},
      {"a symlink to .git", "ln -s .git g && #{hook(canary)} > g/hooks/post-checkout"},
      {"a symlink to hooks/ with ..",
       "mkdir -p d && ln -s ../.git/hooks d/h && #{hook(canary)} > d/h/post-commit"},
      {"config replaced wholesale",
       ~s|printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = #{evil}\\n' > .git/config|},
      {"tee -a", ~s|printf '[core]\\n\\tpager = "touch #{canary}"\\n' \| tee -a .git/config|},
      {"a new .git directory",
       "mkdir -p nested/.git/hooks && #{hook(canary)} > nested/.git/hooks/post-checkout"},
      {"a .git file pointing elsewhere", "mkdir -p sub && echo 'gitdir: ../.git' > sub/.git"},
      {".git moved away", "mv .git .git.old"},
      {"tar into .git",
       "mkdir -p /tmp/t/.git/hooks && #{hook(canary)} > /tmp/t/.git/hooks/post-checkout && " <>
         "cd /tmp/t && tar -cf /tmp/t.tar .git && cd /work && tar -xf /tmp/t.tar"},
      {"a bare repository made by hand",
       "mkdir -p b/objects b/refs && printf '[core]\\n\\tfsmonitor = #{evil}\\n' > b/config && " <>
         "echo 'ref: refs/heads/main' > b/HEAD"},
      {"python's open",
       ~s|python3 -c "open('.git/config', 'a').write('[core]\\\\n\\\\thooksPath = h\\\\n')"|},
      {"git config core.fsmonitor", "git config core.fsmonitor 'touch #{canary}; false'"},
      {"git config core.hooksPath",
       "mkdir -p hk && #{hook(canary)} > hk/post-checkout && chmod +x hk/post-checkout && " <>
         "git config core.hooksPath hk"},
      {"git config alias with !", "git config alias.st '!touch #{canary}'"},
      {"git config --file", "git config --file .git/config core.pager 'touch #{canary}'"},
      {"git config credential.helper", "git config credential.helper '!touch #{canary}'"},
      {"git config remote.origin.uploadpack",
       "git config remote.origin.uploadpack 'touch #{canary}; git-upload-pack'"},
      {"a branch named to walk into hooks/", "git branch ../../hooks/post-checkout"},
      {"git mv over config",
       ~s|printf '[core]\\n\\tfsmonitor = #{evil}\\n' > c && git add c && git mv c .git/config|},
      {"git mv into hooks/",
       "#{hook(canary)} > p && chmod +x p && git add p && git mv p .git/hooks/post-checkout"},
      {"git clone into .git", "git clone -q https://example.com/r.git .git/modules/r"},
      {"git init inside .git", "git init -q .git/hooks/r"}
    ]
  end

  for isolation <- [:none, :process] do
    test "no route into a checkout's git metadata runs code on the host (isolation: #{isolation})" do
      ctx = checkout!("git_metadata_routes")
      session = session!(ctx, unquote(isolation))
      before = metadata(ctx.repo)

      for {name, script} <- routes(ctx.canary) do
        {failed?, stderr} = attempt(session, "cd /work && " <> script)
        assert failed?, "#{name}: #{stderr}"

        assert stderr =~ ~r/refus|not supported by the sandbox's git|not a valid|invalid path/,
               "#{name}: #{stderr}"

        assert metadata(ctx.repo) == before, name
        refute File.exists?(Path.join(ctx.repo, "nested/.git")), name
        refute File.exists?(Path.join(ctx.repo, "sub/.git")), name
        refute File.exists?(Path.join(ctx.repo, "b/HEAD")), name
      end

      for path <- [".git/hooks/post-commit", ".git/config", "sub/.git", ".GIT/config"] do
        assert {:error, message} = Session.write_file(session, "/work/" <> path, "x")
        assert message =~ "refused", path
      end

      assert {:error, _} = Session.rename(session, "/work/.git", "/work/moved")
      assert {:error, _} = Session.remove(session, "/work/.git/config")
      assert metadata(ctx.repo) == before
      judge!(ctx)

      # The agent's own work still goes through, and real git sees it.
      assert %Result{exit_code: 0} =
               run(session, """
               cd /work && rm -rf d g h hk nested sub b c p &&
               echo more >> a.txt && git add a.txt && git commit -qm 'agent work' && git status --porcelain
               """)

      assert git!(ctx.repo, "git log -1 --format=%s") == "agent work\n"

      judge!(ctx)
    end
  end

  test "a link swapped in while a write is under way never redirects it into .git" do
    ctx = checkout!("git_metadata_race")

    session =
      session!(ctx, :none,
        limits: [max_commands: 100_000, max_loop_iterations: 100_000, timeout_ms: 60_000]
      )

    # A background job flips `d` between a directory and a link to
    # `.git/hooks` while the foreground writes into it: checked at one
    # moment, written at the next.
    run(session, """
    mkdir -p d
    for i in $(seq 1 1500); do rm -rf d; ln -s .git/hooks d; rm -f d; mkdir d; done &
    for i in $(seq 1 1500); do echo x > d/post-checkout 2>/dev/null; done
    wait
    """)

    refute File.exists?(Path.join(ctx.repo, ".git/hooks/post-checkout"))
    judge!(ctx)
  end

  test "node's fs is refused like every other writer" do
    ctx = checkout!("git_metadata_node")
    session = session!(ctx, :process, javascript: true)
    before = metadata(ctx.repo)

    for code <- [
          "require('fs').appendFileSync('.git/config', '[core]\\n\\tpager = x\\n')",
          "require('fs').writeFileSync('.git/hooks/post-checkout', '#!/bin/sh\\n')",
          "require('fs').mkdirSync('n/.git', {recursive: true})"
        ] do
      result = run(session, "cd /work && node -e #{inspect(code)}")
      assert result.exit_code != 0 and result.stderr =~ "refused", inspect(result)
    end

    assert metadata(ctx.repo) == before
    judge!(ctx)
  end

  test "an owner who opts out lets the sandbox write hooks, and bad opt-outs are refused" do
    ctx = checkout!("git_metadata_writable")
    session = session!(ctx, :none, mode: {:read_write, git_metadata: :writable})

    planted =
      "#{hook(ctx.canary)} > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"

    assert %Result{exit_code: 0} = run(session, planted)

    # What the owner allowed does run on the host: the judge of the tests
    # above would see it.
    git!(ctx.repo, "git checkout -q -b opted_out")
    assert File.exists?(ctx.canary)

    for mode <- [{:read_write, git_metadata: :yes}, {:read_write, []}, {:read_only, []}] do
      assert_raise ArgumentError, ~r/mount .*(git_metadata|unknown mode)/, fn ->
        Session.new(mounts: [{"/work", ctx.repo, mode}])
      end
    end
  end

  test "symlinks that stay inside the mount are made; those leading out are refused" do
    ctx = checkout!("git_metadata_links")
    session = session!(ctx, :none)

    assert %Result{exit_code: 0} =
             run(session, "mkdir -p src/deep && ln -s ../../a.txt src/deep/up && cat src/deep/up")

    assert File.read_link!(Path.join(ctx.repo, "src/deep/up")) == "../../a.txt"

    assert %Result{exit_code: code, stderr: stderr} = run(session, "ln -s ../../etc/passwd out")
    assert code != 0 and stderr =~ "outside the mount"
    refute File.exists?(Path.join(ctx.repo, "out"))
  end

  # ---- hostile repositories over smart HTTP --------------------------------------

  defp object!(bare, type, body) do
    file = Path.join(bare, "object.tmp")
    File.write!(file, body)
    {oid, 0} = System.cmd("git", ["hash-object", "-w", "--literally", "-t", type, file], cd: bare)
    File.rm!(file)
    String.trim(oid)
  end

  # A tree exactly as given: git's own commands would refuse these names.
  defp tree!(bare, entries) do
    body =
      for {mode, name, oid} <- entries, into: "" do
        "#{mode} #{name}\0" <> Base.decode16!(oid, case: :lower)
      end

    object!(bare, "tree", body)
  end

  defp commit!(bare, tree, parent \\ nil) do
    parents = if parent, do: ["-p", parent], else: []

    {oid, 0} =
      System.cmd("git", ["commit-tree", tree, "-m", "hostile"] ++ parents,
        cd: bare,
        env: host_env() ++ Enum.to_list(identity())
      )

    oid = String.trim(oid)
    {_, 0} = System.cmd("git", ["update-ref", "refs/heads/main", oid], cd: bare)
    oid
  end

  # A `.git` directory as a tree entry: a config that runs the canary at
  # `git status` and a hook that runs it at `git checkout`.
  defp git_dir_tree!(bare, canary) do
    config = object!(bare, "blob", "[core]\n\tfsmonitor = \"touch #{canary}; false\"\n")
    hook = object!(bare, "blob", "#!/bin/sh\ntouch #{canary}\n")
    hooks = tree!(bare, [{"100755", "post-checkout", hook}])
    tree!(bare, [{"100644", "config", config}, {"40000", "hooks", hooks}])
  end

  defp hostile_server!(ctx) do
    bare = Path.join(ctx.base, "evil.git")
    git!(ctx.base, "git init -q --bare -b main evil.git")
    {_pid, port} = GitServer.start(ctx.base)
    base = "http://127.0.0.1:#{port}"
    Map.merge(ctx, %{bare: bare, http: base, url: base <> "/evil.git"})
  end

  defp cloner!(ctx, isolation) do
    Session.new(
      git: true,
      isolation: isolation,
      cwd: "/work",
      env: identity(),
      allow_net: [ctx.http <> "/"],
      block_private_ips: false,
      mounts: [{"/work", ctx.base, :read_write}]
    )
  end

  @evil_gitmodules """
  [submodule "../../modules/evil"]
  \tpath = evil
  \turl = https://example.com/evil.git
  """

  defp hostile_trees(bare, canary) do
    readme = object!(bare, "blob", "hello\n")
    dot_git = git_dir_tree!(bare, canary)
    file = {"100644", "README", readme}

    [
      {".git", [file, {"40000", ".git", dot_git}]},
      {".GIT", [file, {"40000", ".GIT", dot_git}]},
      {"git~1", [file, {"40000", "git~1", dot_git}]},
      {".git. (NTFS)", [file, {"40000", ".git.", dot_git}]},
      {".g\u200cit (HFS)", [file, {"40000", ".g\u200cit", dot_git}]},
      {"..", [file, {"40000", "..", dot_git}]},
      {".", [file, {"40000", ".", dot_git}]},
      {"a name with /", [file, {"100644", ".git/config", readme}]},
      {"duplicate names", [file, {"40000", "README", dot_git}]},
      {".gitmodules as a symlink", [file, {"120000", ".gitmodules", readme}]},
      {"a nested .git", [file, {"40000", "vendor", tree!(bare, [{"40000", ".git", dot_git}])}]},
      {"a submodule named to walk out of .git/modules",
       [file, {"100644", ".gitmodules", object!(bare, "blob", @evil_gitmodules)}]}
    ]
  end

  for isolation <- [:none, :process] do
    test "hostile repositories are refused whole at clone and at pull (isolation: #{isolation})" do
      ctx = checkout!("git_metadata_hostile") |> hostile_server!()
      session = cloner!(ctx, unquote(isolation))

      for {name, entries} <- hostile_trees(ctx.bare, ctx.canary) do
        commit!(ctx.bare, tree!(ctx.bare, entries))

        assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone #{ctx.url} c")
        assert stderr =~ "fsck error in packed object", "#{name}: #{stderr}"
        refute File.exists?(Path.join(ctx.base, "c")), name
        refute File.exists?(ctx.canary), name
      end

      # A good history first, then a hostile commit on top: the pull is
      # refused and the clone stays as it was.
      readme = object!(ctx.bare, "blob", "hello\n")
      good = commit!(ctx.bare, tree!(ctx.bare, [{"100644", "README", readme}]))
      assert %Result{exit_code: 0} = run(session, "git clone -q #{ctx.url} good")
      clone = Path.join(ctx.base, "good")
      before = {metadata(clone), File.ls!(clone) |> Enum.sort()}

      dot_git = git_dir_tree!(ctx.bare, ctx.canary)
      tree = tree!(ctx.bare, [{"100644", "README", readme}, {"40000", ".git", dot_git}])
      commit!(ctx.bare, tree, good)

      for step <- ["git pull -q", "git fetch -q origin && git merge -q origin/main"] do
        assert %Result{exit_code: code, stderr: stderr} =
                 run(session, "cd /work/good && " <> step)

        assert code != 0 and stderr =~ "fsck error in packed object", "#{step}: #{stderr}"
        assert {metadata(clone), File.ls!(clone) |> Enum.sort()} == before
      end

      judge!(%{ctx | repo: clone})
    end
  end

  test "the sandbox's git stages no path git would refuse, and makes no repository inside a git directory" do
    session = Session.new(git: true, cwd: "/repo", env: identity())

    assert %Result{exit_code: 128, stderr: stderr} =
             run(session, "git init -q && mkdir .GIT && echo x > .GIT/config && git add -A")

    assert stderr =~ "invalid path '.GIT/config'"
    assert %Result{stdout: ""} = run(session, "git ls-files")

    assert %Result{exit_code: 128, stderr: stderr} =
             run(session, "mkdir -p .git/x && git init -q .git/x")

    assert stderr =~ "inside a git directory"
  end

  test "a symlink replaced by a directory across commits never leads a write into .git" do
    ctx = checkout!("git_metadata_swap") |> hostile_server!()
    session = cloner!(ctx, :none)
    link = object!(ctx.bare, "blob", ".git/hooks")
    first = commit!(ctx.bare, tree!(ctx.bare, [{"120000", "a", link}]))
    assert %Result{exit_code: 0} = run(session, "git clone -q #{ctx.url} swap")

    hook = object!(ctx.bare, "blob", "#!/bin/sh\ntouch #{ctx.canary}\n")
    dir = tree!(ctx.bare, [{"100755", "post-checkout", hook}])
    commit!(ctx.bare, tree!(ctx.bare, [{"40000", "a", dir}]), first)

    run(session, "cd /work/swap && git pull -q")
    clone = Path.join(ctx.base, "swap")
    refute File.exists?(Path.join(clone, ".git/hooks/post-checkout"))
    judge!(%{ctx | repo: clone})
  end

  test "a real repository with relative symlinks inside it clones into a mount; real git finds it clean" do
    base = tmp_path("ex_bashkit_git_metadata_symlinks")
    on_exit(fn -> File.rm_rf!(base) end)
    repo = history!(Path.join(base, "repo"))

    git!(
      repo,
      "mkdir -p docs/deep && ln -s ../a.txt docs/a && ln -s ../../src docs/deep/src && " <>
        "git add -A && git commit -qm links",
      identity()
    )

    git!(base, "git clone -q --bare repo links.git")
    worker_may_write!(base)
    {_pid, port} = GitServer.start(base)
    http = "http://127.0.0.1:#{port}"
    session = cloner!(%{base: base, http: http}, :none)

    assert %Result{exit_code: 0} = run(session, "git clone -q #{http}/links.git out")
    out = Path.join(base, "out")
    assert File.read_link!(Path.join(out, "docs/a")) == "../a.txt"
    assert File.read_link!(Path.join(out, "docs/deep/src")) == "../../src"
    assert git!(out, "git status --porcelain") == ""
  end

  test "a hundred attacks in a row against one isolated session leave the host untouched" do
    ctx = checkout!("git_metadata_sustained")
    session = session!(ctx, :process)
    before = metadata(ctx.repo)
    routes = routes(ctx.canary)

    for round <- 1..100 do
      {name, script} = Enum.at(routes, rem(round, length(routes)))
      {failed?, stderr} = attempt(session, "cd /work && " <> script)
      assert failed?, "round #{round}, #{name}: #{stderr}"
      assert metadata(ctx.repo) == before, "round #{round}, #{name}"
      refute File.exists?(ctx.canary)
    end

    assert %Result{stdout: "still here\n"} = run(session, "echo still here")
    # Nothing half-written is left behind either.
    assert Path.wildcard(Path.join(ctx.repo, "**/.bashkit-tmp*"), match_dot: true) == []
    judge!(ctx)
  end
end
