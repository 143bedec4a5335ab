defmodule ExBashkit.GitRemoteTest do
  # clone, fetch, pull, push and ls-remote against real git's smart HTTP
  # (`git http-backend` on 127.0.0.1), through the session's HTTP client:
  # its allowlist, its injected credentials, and in a worker the host.
  use ExBashkit.Case, async: true

  import ExBashkit.Test.RealGit

  alias ExBashkit.Test.GitServer

  @moduletag :git

  setup do
    root = host_dir!("git_server")
    work = history!(Path.join(root, "work"))
    git!(root, "git clone -q --bare work project.git")
    {_pid, port} = GitServer.start(root)
    base = "http://127.0.0.1:#{port}"

    %{
      root: root,
      server: Path.join(root, "project.git"),
      base: base,
      url: base <> "/project.git",
      work: work
    }
  end

  defp agent(ctx, opts \\ []) do
    [
      git: true,
      cwd: "/home/user",
      allow_net: [ctx.base <> "/"],
      block_private_ips: false,
      env: identity()
    ]
    |> Keyword.merge(opts)
    |> Session.new()
  end

  defp server_git(ctx, args) do
    {out, 0} = System.cmd("git", args, cd: ctx.server, env: host_env())
    out
  end

  for isolation <- [:none, :process] do
    test "an agent's loop: clone, branch, edit, commit, push; real git sees the pushed history (isolation: #{isolation})",
         ctx do
      session = agent(ctx, isolation: unquote(isolation))

      assert %Result{exit_code: 0, stderr: "Cloning into 'project'...\n"} =
               run(session, "git clone #{ctx.url}")

      assert %Result{stdout: log} =
               run(session, "cd /home/user/project && git log --oneline -n 2")

      assert log == server_git(ctx, ["log", "--oneline", "-n", "2", "main"])

      assert %Result{exit_code: 0, stdout: "## main...origin/main\n"} =
               run(session, "cd /home/user/project && git status -sb")

      assert %Result{exit_code: 0, stderr: pushed} =
               run(
                 session,
                 "cd /home/user/project && git checkout -q -b agent && echo change >> a.txt && " <>
                   "git commit -qam 'agent change' && git push -u origin agent"
               )

      assert pushed =~ "To #{ctx.url}\n * [new branch]      agent -> agent\n"
      assert pushed =~ "branch 'agent' set up to track 'origin/agent'."

      assert %Result{stdout: ours} = run(session, "cd /home/user/project && git rev-parse HEAD")
      assert server_git(ctx, ["rev-parse", "refs/heads/agent"]) == ours

      assert server_git(ctx, ["log", "-1", "--format=%s%n%an", "agent"]) ==
               "agent change\nAnn Author\n"

      assert server_git(ctx, ["show", "agent:a.txt"]) =~ ~r/main line\nchange\n\z/

      {fsck, code} =
        System.cmd("git", ["fsck", "--strict"],
          cd: ctx.server,
          env: host_env(),
          stderr_to_stdout: true
        )

      assert {code, fsck} == {0, ""}

      # A second push is an update, shown as git shows it.
      assert %Result{exit_code: 0, stderr: again} =
               run(
                 session,
                 "cd /home/user/project && echo more >> a.txt && git commit -qam more && git push"
               )

      assert again =~ ~r/\n   [0-9a-f]{7}\.\.[0-9a-f]{7}  agent -> agent\n/

      assert %Result{stderr: "Everything up-to-date\n"} =
               run(session, "cd /home/user/project && git push")
    end
  end

  test "fetch and pull bring what real git pushed; status counts what is behind", ctx do
    session = agent(ctx)
    run(session, "git clone -q #{ctx.url}")

    git!(
      ctx.work,
      "echo upstream >> a.txt && git commit -qam upstream && git push -q #{ctx.server} main",
      identity()
    )

    assert %Result{exit_code: 0, stderr: fetched} =
             run(session, "cd /home/user/project && git fetch")

    assert fetched =~ "From #{ctx.base}/project\n"
    assert fetched =~ ~r/   [0-9a-f]{7}\.\.[0-9a-f]{7}  main       -> origin\/main\n/

    assert %Result{stdout: "## main...origin/main [behind 1]\n"} =
             run(session, "cd /home/user/project && git status -sb")

    assert %Result{exit_code: 0, stdout: pulled} =
             run(session, "cd /home/user/project && git pull")

    assert pulled =~ ~r/\AUpdating [0-9a-f]{7}\.\.[0-9a-f]{7}\nFast-forward\n a.txt \| 1 \+\n/
    assert {:ok, text} = Session.read_file(session, "/home/user/project/a.txt")
    assert text =~ ~r/upstream\n\z/

    assert %Result{stdout: "## main...origin/main\n"} =
             run(session, "cd /home/user/project && git status -sb")
  end

  test "a push behind the remote is rejected and changes nothing there", ctx do
    session = agent(ctx)
    run(session, "git clone -q #{ctx.url}")

    git!(
      ctx.work,
      "echo theirs >> a.txt && git commit -qam theirs && git push -q #{ctx.server} main",
      identity()
    )

    before = server_git(ctx, ["rev-parse", "main"])

    assert %Result{exit_code: 1, stderr: stderr} =
             run(
               session,
               "cd /home/user/project && echo ours >> a.txt && git commit -qam ours && git push"
             )

    assert stderr =~ " ! [rejected]        main -> main (fetch first)\n"
    assert stderr =~ "error: failed to push some refs to '#{ctx.url}'\n"
    assert server_git(ctx, ["rev-parse", "main"]) == before
  end

  test "ls-remote lists what real git's ls-remote lists, annotated tags peeled", ctx do
    session = agent(ctx)
    assert %Result{exit_code: 0} = run(session, "git clone -q #{ctx.url}")

    # Options, then the repository, then patterns, as git takes them.
    for {options, patterns} <- [
          {[], []},
          {["--heads"], []},
          {["--tags"], []},
          {["--refs"], []},
          {["-t", "--refs"], []},
          {["--heads", "--tags"], []},
          {["--exit-code"], ["nothing-is-called-this"]},
          {[], ["v2"]},
          {[], ["v*", "main"]}
        ] do
      args = options ++ [ctx.url | patterns]
      {theirs, status} = System.cmd("git", ["ls-remote" | args], env: host_env())
      line = Enum.join(["git ls-remote" | args], " ")
      assert %Result{exit_code: ^status, stdout: ^theirs} = run(session, line), line
    end

    # The remote by its name, and without one (origin, named on stderr).
    {theirs, 0} = System.cmd("git", ["ls-remote", ctx.url], env: host_env())
    assert theirs =~ "\trefs/tags/v2^{}\n"

    assert %Result{stdout: ^theirs, stderr: ""} =
             run(session, "cd /home/user/project && git ls-remote origin")

    expected_stderr = "From #{ctx.url}\n"

    assert %Result{stdout: ^theirs, stderr: ^expected_stderr} =
             run(session, "cd /home/user/project && git ls-remote")
  end

  test "ls-remote of a repository on a path lists what real git lists of it", ctx do
    # The repository real git made, mounted, and the bare one the server
    # serves: options, then the path, then patterns, as git takes them.
    session =
      agent(ctx,
        mounts: [{"/work", ctx.work, :read_only}, {"/served", ctx.server, :read_only}]
      )

    on_host = %{"/work" => ctx.work, "/served" => ctx.server}

    for {cwd, path, options, patterns} <- [
          {"/work", ".", [], []},
          {"/work", ".", ["--heads"], []},
          {"/work", ".", ["--tags"], []},
          {"/work", "/work", ["--refs"], []},
          {"/work", "./", [], ["main"]},
          {"/served", ".", [], []},
          {"/work", "/served", ["-t"], ["v*"]}
        ] do
      {theirs, 0} =
        System.cmd("git", ["ls-remote" | options] ++ [Map.get(on_host, path, path) | patterns],
          cd: on_host[cwd],
          env: host_env()
        )

      line = Enum.join(["cd #{cwd} && git ls-remote" | options] ++ [path | patterns], " ")
      assert %Result{exit_code: 0, stdout: ^theirs} = run(session, line), line
    end

    assert %Result{exit_code: 128, stderr: stderr} =
             run(session, "cd /work && git ls-remote ./nowhere")

    assert stderr =~ "fatal: './nowhere' does not appear to be a git repository\n"
  end

  test "credentials are added on the host's side of every request; the sandbox never holds them",
       ctx do
    secret = "Bearer git-#{System.unique_integer([:positive])}"
    session = agent(ctx, allow_net: [{ctx.base <> "/", headers: %{"authorization" => secret}}])

    assert %Result{exit_code: 0} = run(session, "git clone -q #{ctx.url} && env")
    assert_received {:git_http, "GET", "/project.git/info/refs?service=git-upload-pack", headers}
    assert {"authorization", ^secret} = List.keyfind(headers, "authorization", 0)
    assert_received {:git_http, "POST", "/project.git/git-upload-pack", headers}
    assert {"authorization", ^secret} = List.keyfind(headers, "authorization", 0)
    assert %Result{stdout: env} = run(session, "env; cat project/.git/config")
    refute env =~ secret
  end

  test "a URL :allow_net does not name is refused before any request", ctx do
    session =
      Session.new(
        git: true,
        cwd: "/home/user",
        allow_net: [ctx.base <> "/other/"],
        block_private_ips: false
      )

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone #{ctx.url}")
    assert stderr =~ "matches no pattern of the session's :allow_net"
    refute_received {:git_http, _, _, _}

    assert %Result{exit_code: 128, stderr: stderr} =
             run(Session.new(git: true), "git clone #{ctx.url}")

    assert stderr =~ "no remote URLs are allowed"
    refute_received {:git_http, _, _, _}
  end

  test "a clone into a host directory is one real git reads: fsck, status, log", ctx do
    dir = host_dir!("git_clone_mount")
    session = agent(ctx, mounts: [{"/home/user/out", dir, :read_write}])
    assert %Result{exit_code: 0} = run(session, "cd out && git clone -q #{ctx.url} .")
    clone = dir

    {fsck, code} =
      System.cmd("git", ["fsck", "--strict"], cd: clone, env: host_env(), stderr_to_stdout: true)

    assert {code, fsck} == {0, ""}

    {status, 0} =
      System.cmd("git", ["status", "--porcelain=v2", "--branch"], cd: clone, env: host_env())

    assert status =~ "# branch.head main\n# branch.upstream origin/main\n# branch.ab +0 -0\n"
    refute status =~ ~r/^[12u?] /m

    assert server_git(ctx, ["log", "--format=%H", "main"]) ==
             elem(System.cmd("git", ["log", "--format=%H"], cd: clone, env: host_env()), 0)
  end

  test "a snapshot keeps a cloned repository byte for byte, and the restored session goes on",
       ctx do
    session = agent(ctx)
    assert %Result{exit_code: 0} = run(session, "git clone -q #{ctx.url}")

    assert %Result{stdout: listing} =
             run(session, "cd /home/user/project && find .git -type f | sort")

    files = String.split(listing, "\n", trim: true)
    assert Enum.any?(files, &String.ends_with?(&1, ".pack"))
    assert ".git/index" in files and ".git/packed-refs" in files

    {:ok, snapshot} = Session.snapshot(session)
    {:ok, restored} = Session.restore(agent(ctx), snapshot)

    for file <- files do
      path = "/home/user/project/" <> file
      assert Session.read_file(restored, path) == Session.read_file(session, path), file
    end

    assert %Result{exit_code: 0, stdout: "## main...origin/main\n"} =
             run(restored, "cd /home/user/project && git status -sb")

    assert %Result{exit_code: 0} =
             run(restored, "echo restored >> a.txt && git commit -qam restored && git push -q")

    assert server_git(ctx, ["log", "-1", "--format=%s", "main"]) == "restored\n"
  end
end
