# Clones of a repository whose pack is over 100 MB, from real git's smart
# HTTP (`git http-backend`) on 127.0.0.1, by the sandbox's git (in the VM
# and in a worker, into a host directory mounted read-write) and by
# Debian's git, side by side: wall time and peak memory.
#
#   MIX_ENV=prod mix run bench/git_clone.exs                (ROUNDS=3)
#   REPO=/path/to/a/repository MIX_ENV=prod mix run bench/git_clone.exs
#
# Without REPO the repository is made by real git (`fast-import`, then
# `git clone --bare --no-local`, which packs it with deltas): 3,000
# commits on 300 text files that change a little each time, and 45 files
# of 2.4 MB that do not compress. The server runs in an OS process of its
# own, so the VM's memory is the client's alone. Peak memory: for real git
# its maximum resident set (`/usr/bin/time`); in the VM the growth of the
# VM's resident set during the clone (sampled every 2 ms); in a worker
# the worker process's maximum resident set, and beside it the VM's
# growth while it passed the pack on. Times: the median of ROUNDS
# runs (min–max); peaks: the largest of the rounds (in the VM the first
# round's is the one that counts: later rounds reuse memory the
# allocator kept, so they grow less).

Code.require_file("support.exs", __DIR__)
Code.require_file("../test/support/memory.ex", __DIR__)

alias ExBashkit.Session

defmodule GitCloneBench do
  @env [
    {"GIT_CONFIG_GLOBAL", "/dev/null"},
    {"GIT_CONFIG_NOSYSTEM", "1"},
    {"LC_ALL", "C"}
  ]
  @mib 1024 * 1024

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "3"))

    root =
      Path.join(System.tmp_dir!(), "ex_bashkit_git_clone_#{System.unique_integer([:positive])}")

    File.mkdir_p!(root)

    try do
      bare = served_repository(root)
      pack = pack_bytes(bare)
      {server, url} = serve(root, Path.basename(bare))
      Process.put(:server, server)

      IO.puts(
        "pack: #{Float.round(pack / 1_000_000, 1)} MB (#{count(bare)} objects), #{rounds} rounds\n"
      )

      rows =
        for depth <- [nil, 1],
            who <- [:real_git, :none, :process] do
          samples = for i <- 1..rounds, do: clone(who, url, depth, Path.join(root, "c#{i}"))
          {who, depth, samples}
        end

      IO.puts("| clone | by | ms | peak MB | peak / pack | the VM's growth MB |")
      IO.puts("|---|---|---|---|---|---|")

      for {who, depth, samples} <- rows do
        times = Enum.map(samples, &elem(&1, 0))
        peak = samples |> Enum.map(&elem(&1, 1)) |> Enum.max()
        vm = samples |> Enum.map(&elem(&1, 2)) |> Enum.max()

        IO.puts(
          "| #{if depth, do: "--depth #{depth}", else: "full"} | #{label(who)} | " <>
            "#{spread(times)} | #{div(peak, 1024)} | #{Float.round(peak * 1024 / pack, 2)} | " <>
            "#{if who == :real_git, do: "–", else: div(vm, 1024)} |"
        )
      end
    after
      if server = Process.get(:server), do: stop(server)
      File.rm_rf!(root)
    end
  end

  defp label(:real_git), do: "real git"
  defp label(:none), do: "sandbox, in the VM"
  defp label(:process), do: "sandbox, in a worker"

  # ---- the clones --------------------------------------------------------

  defp clone(:real_git, url, depth, dir) do
    File.rm_rf!(dir)
    # One request body, never chunked: the test server reads Content-Length.
    git = ["git", "-c", "http.postBuffer=1073741824", "clone", "-q"]
    args = ["-f", "%M" | git] ++ depth_args(depth) ++ [url, dir]

    {time, {out, 0}} =
      :timer.tc(fn -> System.cmd("/usr/bin/time", args, env: @env, stderr_to_stdout: true) end)

    peak_kb = out |> String.split() |> List.last() |> String.to_integer()
    File.rm_rf!(dir)
    {div(time, 1000), peak_kb, 0}
  end

  defp clone(isolation, url, depth, dir) do
    File.rm_rf!(dir)
    File.mkdir_p!(dir)
    worker_may_write!(dir)

    session =
      Session.new(
        git: true,
        isolation: isolation,
        cwd: "/out",
        allow_net: [url],
        block_private_ips: false,
        mounts: [{"/out", dir, :read_write}],
        limits: [
          timeout_ms: 900_000,
          max_git_transfer_bytes: 1024 * @mib,
          max_file_bytes: 1024 * @mib,
          max_script_memory_bytes: 2048 * @mib
        ]
      )

    script = Enum.join(["git clone -q"] ++ depth_args(depth) ++ [url, "."], " ")

    {time, {result, peak_kb, vm_kb}} =
      :timer.tc(fn ->
        case isolation do
          :none ->
            {result, vm_kb} =
              ExBashkit.Test.Memory.peak_growth_kb(fn ->
                Session.exec(session, script, timeout_ms: 900_000)
              end)

            {result, vm_kb, vm_kb}

          :process ->
            # The worker's own peak, and what passing the pack on cost
            # the VM.
            {{result, worker_kb}, vm_kb} =
              ExBashkit.Test.Memory.peak_growth_kb(fn -> worker_peak(session, script) end)

            {result, worker_kb, vm_kb}
        end
      end)

    {:ok, %{exit_code: 0}} = result
    Session.close(session)
    File.rm_rf!(dir)
    {div(time, 1000), peak_kb, vm_kb}
  end

  defp depth_args(nil), do: []
  defp depth_args(depth), do: ["--depth", "#{depth}"]

  defp worker_peak(session, script) do
    %{os_pid: os_pid} = Session.info(session)
    result = Session.exec(session, script, timeout_ms: 900_000)
    [_, kb] = Regex.run(~r/VmHWM:\s+(\d+)/, File.read!("/proc/#{os_pid}/status"))
    {result, String.to_integer(kb)}
  end

  defp worker_may_write!(dir) do
    with %{worker_user: {uid, gid}} <- ExBashkit.isolation_info() do
      File.chown!(dir, uid)
      File.chgrp!(dir, gid)
    end
  end

  # ---- the repository and its server -------------------------------------

  defp served_repository(root) do
    bare = Path.join(root, "project.git")

    case System.get_env("REPO") do
      nil ->
        work = Path.join(root, "work")
        git!(root, ["init", "-q", "-b", "main", work])
        stream = Path.join(root, "import.stream")
        File.write!(stream, import_stream())

        {_, 0} =
          System.cmd("sh", ["-c", "git fast-import --quiet < #{stream}"], cd: work, env: @env)

        File.rm!(stream)
        git!(root, ["clone", "-q", "--bare", "--no-local", work, bare])
        File.rm_rf!(work)

      repo ->
        git!(root, ["clone", "-q", "--bare", "--no-local", repo, bare])
    end

    bare
  end

  defp import_stream do
    :rand.seed(:exsss, {7, 11, 13})

    commits =
      for n <- 1..3000 do
        file = rem(n * 7, 300)

        lines =
          for i <- 1..(40 + rem(n, 30)), do: "line #{i} of file #{file}, edit #{div(n, 300)}\n"

        text = IO.iodata_to_binary(lines)

        binary =
          if rem(n, 66) == 0,
            do: [{"assets/blob#{div(n, 66)}.bin", :crypto.strong_rand_bytes(2_400_000)}],
            else: []

        files = [{"src/dir#{rem(file, 20)}/file#{file}.txt", text} | binary]

        modifies =
          Enum.map(files, fn {path, data} ->
            [
              "M 100644 inline ",
              path,
              "\ndata ",
              Integer.to_string(byte_size(data)),
              "\n",
              data,
              "\n"
            ]
          end)

        message = "commit #{n}\n"

        [
          "commit refs/heads/main\n",
          "committer Bench <bench@example.com> #{1_600_000_000 + n * 600} +0000\n",
          "data #{byte_size(message)}\n#{message}",
          modifies,
          "\n"
        ]
      end

    IO.iodata_to_binary(commits)
  end

  defp pack_bytes(bare) do
    Path.wildcard(Path.join(bare, "objects/pack/*.pack"))
    |> Enum.map(&File.stat!(&1).size)
    |> Enum.sum()
  end

  defp count(bare) do
    {out, 0} = System.cmd("git", ["count-objects", "-v"], cd: bare, env: @env)
    [_, n] = Regex.run(~r/in-pack: (\d+)/, out)
    n
  end

  # `git http-backend` behind test/support/git_server.ex, in an OS
  # process of its own.
  defp serve(root, name) do
    server = Path.expand("../test/support/git_server.ex", __DIR__)

    code = """
    Code.require_file(#{inspect(server)})
    {_pid, port} = ExBashkit.Test.GitServer.start(#{inspect(root)})
    IO.puts("port \#{port}")
    # Each request is reported to this process: let them pile up unread.
    Process.sleep(:infinity)
    """

    port =
      Port.open({:spawn_executable, System.find_executable("elixir")}, [
        :binary,
        :exit_status,
        args: ["-e", code],
        line: 1024
      ])

    receive do
      {^port, {:data, {:eol, "port " <> number}}} ->
        {port, "http://127.0.0.1:#{number}/#{name}"}
    after
      60_000 -> raise "the git server did not start"
    end
  end

  defp stop(server) do
    {:os_pid, os_pid} = Port.info(server, :os_pid)
    System.cmd("kill", ["#{os_pid}"])
  end

  defp git!(dir, args) do
    {_, 0} = System.cmd("git", args, cd: dir, env: @env, stderr_to_stdout: true)
  end

  # ---- figures ------------------------------------------------------------

  defp median(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))

  defp spread(values), do: "#{median(values)} (#{Enum.min(values)}–#{Enum.max(values)})"
end

GitCloneBench.run()
