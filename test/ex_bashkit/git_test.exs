defmodule ExBashkit.GitTest do
  # `git: true`: bashkit's virtual git on the session's files, in the VM
  # and in workers; and its fidelity against Debian's git, measured on a
  # corpus of command sequences (each setup × each observation).
  use ExBashkit.Case, async: true

  @moduletag :git

  defp repo(opts \\ []), do: Session.new([git: true, cwd: "/repo"] ++ opts)

  for isolation <- [:none, :process] do
    test "init, add, commit, log, branch, checkout, rev-parse, ls-files (isolation: #{isolation})" do
      session = repo(isolation: unquote(isolation))

      assert %Result{exit_code: 0} =
               run(session, "git init && echo hello > a.txt && git add -A && git commit -m first")

      assert %Result{stdout: "a.txt\n"} = run(session, "git ls-files")
      assert %Result{stdout: log} = run(session, "git log -n 1")
      assert log =~ "Author: sandbox <sandbox@bashkit-sandbox>"
      assert log =~ "    first"

      assert %Result{exit_code: 0} = run(session, "git checkout -b feature")

      assert %Result{stdout: "* feature\n  master\n"} = run(session, "git branch")
      assert %Result{stdout: hash} = run(session, "git rev-parse HEAD")
      assert hash =~ ~r/\A[0-9a-f]{7,40}\n\z/
    end
  end

  test "a remote is refused without :allow_net" do
    assert %Result{exit_code: code, stderr: stderr} =
             run(repo(), "git init -q; git clone https://example.com/x.git")

    assert code != 0
    assert stderr =~ "no remote URLs are allowed"
  end

  test "a snapshot carries the repository" do
    session = repo()
    run(session, "git init && echo 1 > f && git add f && git commit -m one")
    {:ok, snapshot} = Session.snapshot(session)
    {:ok, restored} = Session.restore(repo(), snapshot)
    assert %Result{stdout: log} = run(restored, "git log -n 1")
    assert log =~ "    one"
  end

  for isolation <- [:none, :process] do
    test "diff, reset --hard, checkout between branches work on content (isolation: #{isolation})" do
      session = repo(isolation: unquote(isolation))

      run(
        session,
        "git init -q && printf 'one\\ntwo\\n' > a.txt && git add -A && git commit -q -m first"
      )

      run(session, "printf 'one\\n2\\n' > a.txt")

      assert %Result{stdout: diff} = run(session, "git diff")
      assert diff =~ "@@ -1,2 +1,2 @@\n one\n-two\n+2\n"

      assert %Result{stdout: "HEAD is now at " <> _} = run(session, "git reset --hard")
      assert {:ok, "one\ntwo\n"} = Session.read_file(session, "/repo/a.txt")

      run(
        session,
        "git checkout -q -b topic && echo t > t.txt && git add t.txt && git commit -q -m topic"
      )

      run(session, "git checkout -q master")
      assert {:error, _} = Session.read_file(session, "/repo/t.txt")
      run(session, "git merge -q topic")
      assert {:ok, "t\n"} = Session.read_file(session, "/repo/t.txt")
      assert %Result{stdout: "topic\nfirst\n"} = run(session, "git log --format=%s")
    end
  end

  test "a restored snapshot continues the history, content and all" do
    session = repo()
    run(session, "git init -q && echo 1 > f && git add f && git commit -q -m one && echo 2 > f")
    {:ok, snapshot} = Session.snapshot(session)
    {:ok, restored} = Session.restore(repo(), snapshot)
    assert %Result{stdout: " M f\n"} = run(restored, "git status --short")
    assert %Result{stdout: "[master " <> _} = run(restored, "git commit -am two")
    assert %Result{stdout: "two\none\n"} = run(restored, "git log --format=%s")
  end

  test "commits are authored by git config user.name and user.email" do
    session = repo()

    run(
      session,
      "git init -q && git config user.name Ann && git config user.email ann@example.com && " <>
        "echo x > x && git add x && git commit -q -m x"
    )

    assert %Result{stdout: "Ann <ann@example.com>\n"} =
             run(session, "git log --format='%an <%ae>'")

    assert %Result{stdout: "Ann\n"} = run(session, "git config user.name")
  end

  test "a repository in a subdirectory is found from below it, and its paths are its own" do
    session = repo()
    run(session, "git init -q && mkdir -p src/deep && echo x > src/deep/m.rs && echo r > r.txt")
    run(session, "git add -A && echo y > y.txt")

    assert %Result{stdout: "A  ../../r.txt\nA  m.rs\n?? ../../y.txt\n"} =
             run(session, "cd /repo/src/deep && git status --short")

    assert %Result{stdout: "m.rs\n"} = run(session, "cd /repo/src/deep && git ls-files")

    assert %Result{stdout: "/repo\n"} =
             run(session, "cd /repo/src && git rev-parse --show-toplevel")
  end

  test "outside a repository, an unknown command, an unsupported one" do
    session = repo()

    assert %Result{exit_code: 128, stderr: "fatal: not a git repository" <> _} =
             run(session, "git status")

    run(session, "git init -q")
    assert %Result{exit_code: 1, stderr: stderr} = run(session, "git frobnicate")
    assert stderr =~ "'frobnicate' is not a git command"

    assert %Result{
             exit_code: 128,
             stderr: "fatal: not supported by the sandbox's git: rebase\n" <> _
           } = run(session, "git rebase main")

    assert %Result{
             exit_code: 128,
             stderr: "fatal: not supported by the sandbox's git: bisect\n" <> _
           } = run(session, "git bisect start")

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "touch f && git add -p f")
    assert stderr =~ "no interactive staging"
    assert %Result{exit_code: 0, stdout: ""} = run(session, "git ls-files")
  end

  test "without git: true there is no git" do
    assert %Result{exit_code: 127, stderr: stderr} = run(Session.new(), "git status")
    assert stderr =~ "git: command not found"
  end

  # ---- fidelity -------------------------------------------------------------

  @setups [
    {"one commit", "echo hello > a.txt && git add -A && git commit -q -m first"},
    {"two commits",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo b > b.txt && git add b.txt && git commit -q -m second"},
    {"a modified file",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo more >> a.txt"},
    {"an untracked file",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo new > new.txt"},
    {"a staged file",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo s > s.txt && git add s.txt"},
    {"a branch",
     "echo hello > a.txt && git add -A && git commit -q -m first && git checkout -q -b feature"},
    {"a reset",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo x >> a.txt && git reset -q --hard"},
    {"a deleted file",
     "echo hello > a.txt && echo b > b.txt && git add -A && git commit -q -m first && rm b.txt"},
    {"subdirectories",
     "mkdir -p src/lib && echo hello > a.txt && echo m > src/lib/m.rs && echo y > src/main.rs && git add -A && git commit -q -m src && echo z >> src/main.rs && mkdir docs && echo d > docs/r.md"},
    {"a multi-line edit",
     "printf 'l1\\nl2\\nl3\\nl4\\nl5\\nl6\\nl7\\nl8\\nl9\\nl10\\n' > a.txt && git add -A && git commit -q -m lines && printf 'l1\\nl2\\nl3\\nl4\\nL5\\nl6\\nl7\\nl8\\nl9\\nl10\\nl11\\n' > a.txt"},
    {"a soft reset",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo b > b.txt && git add -A && git commit -q -m second && git reset -q --soft HEAD~1"},
    {"a mixed reset",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo more >> a.txt && git commit -q -am second && git reset -q HEAD~1"},
    {"a fast-forward merge",
     "echo hello > a.txt && git add -A && git commit -q -m first && git checkout -q -b topic && echo t > t.txt && git add t.txt && git commit -q -m topic && git checkout -q master && git merge topic"},
    {"git rm",
     "echo hello > a.txt && echo b > b.txt && git add -A && git commit -q -m first && git rm -q b.txt"},
    {"restore --staged",
     "echo hello > a.txt && git add -A && git commit -q -m first && echo more >> a.txt && git add a.txt && git restore --staged a.txt"},
    {"git mv",
     "echo hello > a.txt && git add -A && git commit -q -m first && git mv a.txt moved.txt"},
    {"no commits yet", "echo hello > a.txt && git add a.txt"}
  ]

  @observations [
    "git status",
    "git status --short",
    "git log --oneline",
    "git log -n 1 --format=%s",
    "git diff",
    "git diff --cached",
    "git ls-files",
    "git branch",
    "git rev-parse --abbrev-ref HEAD",
    "git show --stat",
    "git grep hello",
    "cat a.txt",
    "git diff HEAD",
    "git diff --stat HEAD",
    "git status -sb",
    "git ls-files -s",
    "git log -p -n 1",
    "git grep -n -i HELLO",
    "echo n > n.txt && git add -A && git commit -m next",
    "git checkout -q -b tmp && git branch"
  ]

  # Hashes and dates differ by construction.
  defp normalize(text) do
    text
    |> String.replace(~r/\b[0-9a-f]{7,40}\b/, "<hash>")
    |> String.replace(~r/^Date: .*$/m, "Date: <date>")
  end

  defp real_git(setup, observation) do
    dir = tmp_path("git_fidelity")
    File.mkdir_p!(dir)

    script =
      "git init -q && git config user.name sandbox && git config user.email sandbox@bashkit-sandbox && " <>
        "(#{setup}) >/dev/null 2>&1; (#{observation}) 2>/dev/null"

    env = [{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"HOME", dir}, {"LC_ALL", "C"}]
    {out, _} = System.cmd("bash", ["-c", script], cd: dir, env: env, stderr_to_stdout: false)
    File.rm_rf!(dir)
    out
  end

  # 7-9 s here: ten times that, for a slower machine.
  @tag :fidelity
  @tag timeout: 300_000
  test "fidelity against Debian's git: the agreement does not fall" do
    git = System.find_executable("git") || flunk("git is needed for the fidelity corpus")
    assert git

    results =
      for {name, setup} <- @setups, observation <- @observations do
        session = repo()
        run(session, "git init -q && #{setup}")
        %Result{stdout: ours} = run(session, observation)
        theirs = real_git(setup, observation)
        {name, observation, normalize(ours) == normalize(theirs), ours, theirs}
      end

    agreed = Enum.count(results, &elem(&1, 2))

    differences =
      for {name, observation, false, ours, theirs} <- results do
        "#{name} / #{observation}:\n  ours:   #{inspect(ours)}\n  theirs: #{inspect(theirs)}"
      end

    IO.puts("\ngit fidelity: #{agreed} of #{length(results)} sequences agree\n")
    if System.get_env("EX_BASHKIT_SHOW_DIFFERENCES"), do: IO.puts(Enum.join(differences, "\n"))
    assert length(results) >= 60
    # The floor measured when the corpus was written (see the note on
    # issue 44); a change that loses agreement fails here.
    assert agreed >= 340
  end
end
