defmodule ExBashkit.GitTransferSizeTest do
  # Clones larger than one HTTP response of `curl` may be (10 MB), from
  # real git's smart HTTP on 127.0.0.1: bounded by :max_git_transfer_bytes
  # instead, in the VM and in a worker, with the session's filesystem
  # limits still applying to what is written.
  use ExBashkit.Case, async: true

  import ExBashkit.Test.RealGit

  alias ExBashkit.Test.GitServer

  @moduletag :git
  @moduletag timeout: 300_000
  @mib 1024 * 1024

  setup_all do
    root = host_dir!("git_big")
    work = Path.join(root, "work")

    # Three commits of 8 MiB that do not compress: a pack of about 24 MiB.
    git!(
      root,
      """
      git init -q -b main work && cd work
      for i in 1 2 3; do
        head -c #{8 * @mib} /dev/urandom > big$i.bin && echo "version $i" > README
        git add -A && git commit -qm "commit $i"
      done
      cd .. && git clone -q --bare --no-local work project.git
      """,
      identity()
    )

    {_pid, port} = GitServer.start(root)
    base = "http://127.0.0.1:#{port}"

    {pack_bytes, 0} =
      System.cmd("bash", ["-c", "cat project.git/objects/pack/*.pack | wc -c"], cd: root)

    %{
      root: root,
      work: work,
      base: base,
      url: base <> "/project.git",
      pack_bytes: pack_bytes |> String.trim() |> String.to_integer()
    }
  end

  defp agent(ctx, opts) do
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

  # A session whose working directory is a host directory of its own.
  defp mounted_agent(ctx, isolation, limits) do
    dir = host_dir!("git_big_mount")
    opts = [isolation: isolation, cwd: "/mnt", mounts: [{"/mnt", dir, :read_write}]]
    {agent(ctx, opts ++ [limits: limits]), dir}
  end

  defp big_files(limits), do: [max_file_bytes: 64 * @mib, max_fs_bytes: 256 * @mib] ++ limits

  for isolation <- [:none, :process] do
    test "a clone whose pack is over 10 MB arrives whole (isolation: #{isolation})", ctx do
      assert ctx.pack_bytes > 20 * @mib
      session = agent(ctx, isolation: unquote(isolation), limits: big_files([]))
      assert %Result{exit_code: 0, stderr: ""} = run(session, "git clone -q #{ctx.url}")

      {expected, 0} = System.cmd("git", ["log", "--format=%H %s"], cd: ctx.work, env: host_env())

      assert %Result{stdout: ^expected} =
               run(session, "cd /home/user/project && git log --format='%H %s'")

      {sums, 0} = System.cmd("bash", ["-c", "sha256sum big*.bin"], cd: ctx.work)
      assert %Result{stdout: ^sums} = run(session, "cd /home/user/project && sha256sum big*.bin")

      assert %Result{exit_code: 0, stdout: ""} =
               run(session, "cd /home/user/project && git status --short")
    end
  end

  for isolation <- [:none, :process] do
    test "into a host directory, the pack is written as it arrives and real git reads it " <>
           "(isolation: #{isolation})",
         ctx do
      {session, dir} = mounted_agent(ctx, unquote(isolation), [])

      assert %Result{exit_code: 0, stderr: ""} = run(session, "git clone -q #{ctx.url}")
      repo = Path.join(dir, "project")

      # The pack and its index, named as git names them; nothing else.
      assert [idx, pack] = Path.wildcard(Path.join(repo, ".git/objects/pack/*"))
      assert Path.basename(pack) =~ ~r/^pack-[0-9a-f]{40}\.pack$/
      assert Path.rootname(idx) == Path.rootname(pack)
      assert File.stat!(pack).size == ctx.pack_bytes

      {fsck, 0} =
        System.cmd("git", ["fsck", "--strict", "--no-dangling"],
          cd: repo,
          env: host_env(),
          stderr_to_stdout: true
        )

      assert fsck == ""
      {expected, 0} = System.cmd("git", ["log", "--format=%H %s"], cd: ctx.work, env: host_env())
      {theirs, 0} = System.cmd("git", ["log", "--format=%H %s"], cd: repo, env: host_env())
      assert theirs == expected
    end

    test "a fetch cut short by :max_git_transfer_bytes leaves no part of its pack " <>
           "(isolation: #{isolation})",
         ctx do
      {session, dir} = mounted_agent(ctx, unquote(isolation), max_git_transfer_bytes: 5 * @mib)

      assert %Result{exit_code: 0} =
               run(session, "git init -q p && cd p && git remote add origin #{ctx.url}")

      assert %Result{exit_code: 128, stderr: stderr} =
               run(session, "cd /mnt/p && git fetch origin")

      assert stderr =~ ":max_git_transfer_bytes"
      assert File.ls!(Path.join(dir, "p/.git/objects/pack")) == []
    end
  end

  test "past :max_git_transfer_bytes a clone is refused, naming the limit, and leaves nothing",
       ctx do
    session = agent(ctx, limits: big_files(max_git_transfer_bytes: 5 * @mib))

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone #{ctx.url}")
    assert stderr =~ "Cloning into 'project'...\n"
    assert stderr =~ ":max_git_transfer_bytes"
    assert %Result{stdout: ""} = run(session, "ls")
  end

  test "a pack larger than one file of the session may be is refused, and leaves nothing",
       ctx do
    session = agent(ctx, [])

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone -q #{ctx.url}")

    assert stderr =~
             "fatal: the pack is larger than one file " <>
               "of the session may be (:max_file_bytes"

    assert %Result{stdout: ""} = run(session, "ls")
  end

  test "in a worker too, past :max_git_transfer_bytes a clone is refused, naming the limit",
       ctx do
    session =
      agent(ctx,
        isolation: :process,
        limits: big_files(max_git_transfer_bytes: 5 * @mib)
      )

    assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone -q #{ctx.url}")
    assert stderr =~ ":max_git_transfer_bytes"
    assert %Result{stdout: ""} = run(session, "ls")
  end
end
