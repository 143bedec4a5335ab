defmodule ExBashkit.SandboxNodeTest do
  use ExBashkit.Case, async: false

  alias ExBashkit.{SandboxNode, Server}
  alias ExBashkit.Test.{Hog, Memory}

  @moduletag timeout: 180_000
  @mib 1024 * 1024

  setup do
    previous = Application.get_env(:ex_bashkit, :sandbox_nodes)
    Application.put_env(:ex_bashkit, :sandbox_nodes, max_memory_bytes: 256 * @mib, nice: 7)
    # Sandbox nodes other tests booted have the default limits: start over,
    # so the next node boots under these.
    Supervisor.terminate_child(ExBashkit.Supervisor, SandboxNode)

    on_exit(fn ->
      if previous,
        do: Application.put_env(:ex_bashkit, :sandbox_nodes, previous),
        else: Application.delete_env(:ex_bashkit, :sandbox_nodes)
    end)
  end

  defp status(os_pid, field) do
    [_, value] = Regex.run(~r/#{field}:\s+(\d+)/, File.read!("/proc/#{os_pid}/status"))
    String.to_integer(value)
  end

  test "a session that exhausts its sandbox node's memory kills that node alone, " <>
         "and comes back from its snapshot" do
    id = "hostile-#{System.unique_integer([:positive])}"
    session = [builtins: %{"hog" => Hog}]
    {:ok, pid} = Server.get_or_start(id, isolation: :node, session: session)
    sandbox = node(pid)
    assert sandbox in SandboxNode.nodes()
    assert sandbox != node()

    {:ok, _} = Server.exec(pid, "cd /tmp && echo before > kept && export N=1")
    os_pid = :erpc.call(sandbox, System, :pid, [])
    limits = File.read!("/proc/#{os_pid}/limits")
    [_, soft] = Regex.run(~r/Max address space\s+(\d+)/, limits)
    assert String.to_integer(soft) <= status(os_pid, "VmSize") * 1024 + 256 * @mib
    nice = File.read!("/proc/#{os_pid}/stat") |> String.split(" ") |> Enum.at(18)
    assert nice == "7"

    {result, host_growth_kb} = Memory.peak_growth_kb(fn -> Server.exec(pid, "hog 1024") end)
    assert {:error, message} = result
    assert message =~ "is down"
    # The gigabyte was the sandbox node's, not ours.
    assert host_growth_kb < 100 * 1024
    refute sandbox in Node.list([:hidden, :visible])

    assert wait_until(fn -> Server.whereis(id) == nil end)
    {:ok, pid} = Server.get_or_start(id, isolation: :node, session: session)
    assert node(pid) != sandbox
    assert {:ok, %{stdout: "before 1 /tmp\n"}} = Server.exec(pid, "echo $(cat kept) $N $(pwd)")
    Server.stop(pid, delete: true)
  end

  test "CPython runs on a sandbox node under its memory limit, and a memory bomb there is a MemoryError" do
    id = "cpython-#{System.unique_integer([:positive])}"
    session = [python: :cpython, limits: [max_python_memory_bytes: 128 * @mib]]
    {:ok, pid} = Server.get_or_start(id, isolation: :node, session: session)
    sandbox = node(pid)
    assert sandbox != node()

    assert {:ok, %{stdout: "3.14\n"}} =
             Server.exec(pid, ~S|python3 -c "import sys; print('%d.%d' % sys.version_info[:2])"|)

    bomb = ~S|python3 -c "
chunks = []
while True: chunks.append(bytearray(1 << 20))"; echo "exit $?"|

    # Several at once: each is held to its own cap, inside the node's.
    others =
      for i <- 1..3 do
        {:ok, other} = Server.get_or_start("#{id}-#{i}", isolation: :node, session: session)
        other
      end

    replies =
      others
      |> Enum.map(&Task.async(fn -> Server.exec(&1, bomb) end))
      |> Task.await_many(60_000)

    for reply <- replies do
      assert {:ok, result} = reply
      assert result.stderr =~ "MemoryError"
      assert result.stdout == "exit 1\n"
    end

    Enum.each(others, &Server.stop(&1, delete: true))
    assert sandbox in SandboxNode.nodes()
    assert {:ok, %{stdout: "alive\n"}} = Server.exec(pid, ~S|python3 -c "print('alive')"|)
    Server.stop(pid, delete: true)
  end
end
