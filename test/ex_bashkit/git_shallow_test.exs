defmodule ExBashkit.GitShallowTest do
  # Shallow and single-branch clones and fetches, against real git's smart
  # HTTP on 127.0.0.1: each clone the sandbox makes into a host directory
  # is held against the clone real git makes of the same URL with the same
  # options (refs, `.git/shallow`, the remote's config, history, status),
  # and real git must read ours as its own (`fsck --strict`).
  use ExBashkit.Case, async: true

  import ExBashkit.Test.RealGit

  alias ExBashkit.Test.GitServer

  @moduletag :git

  setup do
    root = host_dir!("git_shallow")
    work = history!(Path.join(root, "work"))

    # A side branch off the first commit, tags at several depths (one on
    # the side branch only), and a tag on main's tip.
    git!(
      work,
      """
      git checkout -q -b side v1 && echo side > side.txt && git add side.txt
      git commit -qm 'side work' && git tag side-tag
      git checkout -q main && git tag tip && git tag -a deep -m 'deep one' HEAD~3
      """,
      identity()
    )

    git!(root, "git clone -q --bare work project.git")
    {_pid, port} = GitServer.start(root)
    base = "http://127.0.0.1:#{port}"
    %{root: root, base: base, url: base <> "/project.git", work: work}
  end

  defp agent(ctx, dir, opts) do
    Session.new(
      [
        git: true,
        cwd: "/home/user/out",
        allow_net: [ctx.base <> "/"],
        block_private_ips: false,
        env: identity(),
        mounts: [{"/home/user/out", dir, :read_write}]
      ] ++ opts
    )
  end

  defp real(dir, args) do
    System.cmd("git", args, cd: dir, env: host_env(), stderr_to_stdout: true)
  end

  # What real git says of a repository, to hold two clones side by side.
  defp seen(dir) do
    {refs, 0} = real(dir, ["for-each-ref", "--format=%(objectname) %(refname)"])
    {config, _} = real(dir, ["config", "--get-regexp", "^(remote|branch)\\."])
    {history, 0} = real(dir, ["log", "--format=%H %P"])
    {status, 0} = real(dir, ["status", "--porcelain=v2", "--branch"])
    {head, _} = real(dir, ["symbolic-ref", "-q", "refs/remotes/origin/HEAD"])

    shallow =
      case File.read(Path.join(dir, ".git/shallow")) do
        {:ok, text} -> text
        {:error, :enoent} -> :none
      end

    %{
      refs: refs,
      config: config,
      history: history,
      status: status,
      origin_head: head,
      shallow: shallow
    }
  end

  defp clones(ctx, options, session_opts \\ []) do
    name = "c#{System.unique_integer([:positive])}"
    ours = Path.join(ctx.root, name <> "-ours")
    theirs = Path.join(ctx.root, name <> "-theirs")
    File.mkdir_p!(ours)
    worker_may_write!(ours)
    session = agent(ctx, ours, session_opts)
    result = run(session, "git clone #{options} #{ctx.url} .")

    {out, code} =
      System.cmd("bash", ["-c", "git clone #{options} #{ctx.url} #{theirs} 2>&1"], env: host_env())

    {session, result, ours, theirs, {out, code}}
  end

  for options <- [
        "--depth 1",
        "--depth 2 -b side",
        "--depth 3 --no-single-branch",
        "--single-branch",
        "--single-branch --no-tags -b feature",
        "--depth 1 --no-tags",
        "-b side",
        "-q --depth 2 -b deep",
        "--no-tags"
      ] do
    test "git clone #{options} makes the repository real git makes", ctx do
      {_session, result, ours, theirs, {_, 0}} = clones(ctx, unquote(options))
      assert result.exit_code == 0, result.stderr
      assert seen(ours) == seen(theirs)

      assert {"", 0} = real(ours, ["fsck", "--strict"])
    end
  end

  test "in a worker (isolation: :process), the host makes the requests of a shallow clone",
       ctx do
    {session, result, ours, theirs, {_, 0}} = clones(ctx, "--depth 2", isolation: :process)
    assert result.exit_code == 0, result.stderr
    assert seen(ours) == seen(theirs)
    assert %Result{exit_code: 0} = run(session, "git fetch -q --unshallow")
    assert {_, 0} = real(theirs, ["fetch", "-q", "--unshallow"])
    assert seen(ours) == seen(theirs)
    assert {"", 0} = real(ours, ["fsck", "--strict"])
  end

  test "a clone of a tag is detached there, with git's advice", ctx do
    {_session, result, ours, theirs, {out, 0}} = clones(ctx, "-b v2")
    assert seen(ours) == seen(theirs)
    assert result.stderr == String.replace(out, theirs, ".")
    assert result.stderr =~ "You are in 'detached HEAD' state."
  end

  test "our git reads a shallow clone as real git does", ctx do
    {session, %{exit_code: 0}, ours, theirs, {_, 0}} = clones(ctx, "--depth 4")

    for command <- [
          "log --oneline",
          "log --format='%h %p %s'",
          "rev-list --count HEAD",
          "rev-list --all",
          "log --oneline --all",
          "describe --tags",
          "status -sb",
          "log --oneline -- a.txt",
          "blame a.txt"
        ] do
      {expected, code} =
        System.cmd("bash", ["-c", "git " <> command], cd: theirs, env: host_env())

      assert %Result{stdout: ^expected, exit_code: ^code} = run(session, "git " <> command),
             command
    end

    assert seen(ours) == seen(theirs)
  end

  test "fetch deepens, unshallows and follows tags as real git does", ctx do
    {session, %{exit_code: 0}, ours, theirs, {_, 0}} = clones(ctx, "--depth 1")

    git!(
      ctx.work,
      """
      echo more >> a.txt && git commit -qam more && git tag -a newer -m newer
      git checkout -q side && echo s2 >> side.txt && git commit -qam s2 && git tag side-2
      git checkout -q main && git push -q --tags ../project.git main side
      """,
      identity()
    )

    for {command, args} <- [
          {"git fetch origin main", ["fetch", "origin", "main"]},
          {"git fetch origin side deep", ["fetch", "origin", "side", "deep"]},
          {"git fetch", ["fetch"]},
          {"git fetch --depth 3", ["fetch", "--depth", "3"]},
          {"git fetch --tags", ["fetch", "--tags"]},
          {"git fetch --unshallow", ["fetch", "--unshallow"]}
        ] do
      {expected, 0} = real(theirs, args)
      result = run(session, command)
      assert result.exit_code == 0, "#{command}: #{result.stderr}"
      assert {command, result.stderr} == {command, expected}
      assert {command, seen(ours)} == {command, seen(theirs)}
      fetch_head = &File.read!(Path.join(&1, ".git/FETCH_HEAD"))
      assert {command, fetch_head.(ours)} == {command, fetch_head.(theirs)}
      {head, 0} = real(theirs, ["rev-parse", "FETCH_HEAD"])
      assert %Result{stdout: ^head} = run(session, "git rev-parse FETCH_HEAD")
    end

    assert seen(ours).shallow == :none
    assert {"", 0} = real(ours, ["fsck", "--strict"])
  end

  test "what this git does not do is refused, as git refuses what it cannot", ctx do
    {session, %{exit_code: 0}, ours, theirs, {_, 0}} = clones(ctx, "--depth 1")

    for {command, args} <- [
          {"git fetch --depth 0", ["fetch", "--depth", "0"]},
          {"git fetch --depth=x", ["fetch", "--depth=x"]},
          {"git fetch --depth 2 --unshallow", ["fetch", "--depth", "2", "--unshallow"]},
          {"git fetch origin nothing", ["fetch", "origin", "nothing"]}
        ] do
      {expected, code} = real(theirs, args)
      assert %Result{stderr: ^expected, exit_code: ^code} = run(session, command), command
    end

    before = seen(ours)

    assert %Result{exit_code: 128, stderr: "fatal: not supported by the sandbox's git: " <> _} =
             run(session, "git fetch origin main:other")

    assert %Result{exit_code: 128, stderr: "fatal: not supported by the sandbox's git: " <> _} =
             run(session, "git fetch #{ctx.url}")

    assert seen(ours) == before

    assert %Result{exit_code: 0} = run(session, "git fetch -q --unshallow")

    assert %Result{
             exit_code: 128,
             stderr: "fatal: --unshallow on a complete repository does not make sense\n"
           } = run(session, "git fetch --unshallow")

    assert %Result{exit_code: 128, stderr: "fatal: depth 0 is not a positive number\n"} =
             run(session, "cd /home/user && git clone --depth 0 #{ctx.url} again")
  end

  describe "protocol versions" do
    test "version 2 is asked for and spoken where the server offers it, on every request",
         ctx do
      {_session, %{exit_code: 0}, ours, theirs, {_, 0}} = clones(ctx, "--depth 2")
      assert seen(ours) == seen(theirs)

      # Ours, then real git's: each asks for version 2 on every request.
      for _client <- [:ours, :real_git] do
        assert_received {:git_http, "GET", "/project.git/info/refs?service=git-upload-pack",
                         headers}

        assert {"git-protocol", "version=2"} = List.keyfind(headers, "git-protocol", 0)

        # ls-refs, then fetch.
        for _request <- 1..2 do
          assert_received {:git_http, "POST", "/project.git/git-upload-pack", headers}
          assert {"git-protocol", "version=2"} = List.keyfind(headers, "git-protocol", 0)
        end
      end
    end

    test "a server that answers only in version 0 is spoken to in version 0", ctx do
      {_pid, port} = GitServer.start(ctx.root, protocol: 0)
      base = "http://127.0.0.1:#{port}"
      ctx = %{ctx | url: base <> "/project.git", base: base}

      for {options, fetch} <- [
            {"", ["fetch", "-q", "--tags"]},
            {"--depth 2 -b side", ["fetch", "-q", "--unshallow"]},
            {"--depth 1 --no-tags", ["fetch", "-q", "--depth", "3"]}
          ] do
        {session, result, ours, theirs, {_, 0}} = clones(ctx, options)
        assert result.exit_code == 0, result.stderr
        assert seen(ours) == seen(theirs)

        assert %Result{exit_code: 0} = run(session, Enum.join(["git" | fetch], " "))
        assert {_, 0} = real(theirs, fetch)
        assert seen(ours) == seen(theirs)
        assert {"", 0} = real(ours, ["fsck", "--strict"])
      end

      # Version 2 was asked for; the answer was version 0, so the fetch
      # is made in version 0.
      assert_received {:git_http, "GET", "/project.git/info/refs?service=git-upload-pack",
                       headers}

      assert {"git-protocol", "version=2"} = List.keyfind(headers, "git-protocol", 0)
      assert_received {:git_http, "POST", "/project.git/git-upload-pack", headers}
      refute List.keyfind(headers, "git-protocol", 0)
    end

    test "an empty repository's clone names the branch the server's unborn HEAD names (version 2) or the default (version 0), as real git's",
         ctx do
      git!(ctx.root, "git init -q --bare -b trunk empty.git")
      {_pid, port} = GitServer.start(ctx.root, protocol: 0)

      for base <- [ctx.base, "http://127.0.0.1:#{port}"] do
        {session, result, ours, theirs, {out, 0}} =
          clones(%{ctx | url: base <> "/empty.git", base: base}, "")

        assert result.exit_code == 0
        assert result.stderr == String.replace(out, theirs, ".")
        {branch, 0} = real(theirs, ["branch", "--show-current"])
        assert %Result{stdout: ^branch} = run(session, "git branch --show-current")

        for args <- [["config", "--get-regexp", "^(remote|branch)\\."], ["for-each-ref"]] do
          assert real(ours, args) == real(theirs, args)
        end

        assert {out, 128} =
                 System.cmd("git", ["clone", "-b", "nowhere", base <> "/empty.git", "again"],
                   cd: ctx.root,
                   env: host_env(),
                   stderr_to_stdout: true
                 )

        assert %Result{exit_code: 128, stderr: ^out} =
                 run(session, "cd /home/user && git clone -b nowhere #{base}/empty.git again")

        assert %Result{exit_code: 1} = run(session, "test -e /home/user/again")
      end
    end
  end
end
