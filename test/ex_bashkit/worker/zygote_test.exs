defmodule ExBashkit.ZygoteTest do
  # The zygote that forks workers (native/ex_bashkit/crates/worker/src/zygote.rs) and the
  # launcher the VM starts for each (ex_bashkit_worker_stub), for real. It
  # kills the zygote and changes the application's config, so it runs alone.
  use ExBashkit.Case, async: false

  alias ExBashkit.{Session, Worker}

  @launcher Path.expand("../../../priv/native/ex_bashkit_worker_stub", __DIR__)

  defp parent_of(os_pid) do
    [_, rest] = String.split(File.read!("/proc/#{os_pid}/stat"), ") ", parts: 2)
    rest |> String.split(" ") |> Enum.at(1) |> String.to_integer()
  end

  # The zygote of the installed worker executable: its OS pid and name.
  defp zygote do
    Session.new(isolation: :process)
    %{port: port, name: name} = zygote_state()
    {:os_pid, os_pid} = Port.info(port, :os_pid)
    {os_pid, name}
  end

  defp zygote_state do
    {:ok, executable} = ExBashkit.Worker.executable()
    :sys.get_state(ExBashkit.Worker.Zygote).zygotes[executable]
  end

  test "a worker is forked by the zygote, which the VM's port launcher started" do
    {zygote, _name} = zygote()
    session = Session.new(isolation: :process)
    os_pid = Session.info(session).os_pid

    assert parent_of(os_pid) == zygote
    assert {:ok, %Result{stdout: "forked\n"}} = Session.exec(session, "echo forked")
  end

  test "a worker killed from outside ends its session as a worker started by exec does" do
    session = Session.new(isolation: :process)
    os_pid = Session.info(session).os_pid
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])

    assert wait_until(fn -> Session.info(session).os_pid == nil end)
    assert {:error, message} = Session.exec(session, "true")
    assert message =~ "exited (status 137)"
  end

  test "a session dropped or closed leaves neither its worker nor its launcher" do
    session = Session.new(isolation: :process)
    %{pid: owner} = session.resource
    {:os_pid, launcher} = Port.info(:sys.get_state(owner).port, :os_pid)
    os_pid = Session.info(session).os_pid
    Session.close(session)

    assert wait_until(fn -> not process?(os_pid) and not process?(launcher) end)
  end

  test "killing the zygote ends its workers; the next session comes from a new one" do
    {zygote, _name} = zygote()
    session = Session.new(isolation: :process)
    os_pid = Session.info(session).os_pid
    {_, 0} = System.cmd("kill", ["-9", "#{zygote}"])

    assert wait_until(fn -> not process?(os_pid) end)
    assert {:error, _} = Session.exec(session, "true")
    assert wait_until(fn -> zygote_state() == nil end)

    fresh = Session.new(isolation: :process)
    assert {:ok, %Result{stdout: "again\n"}} = Session.exec(fresh, "echo again")
    {new_zygote, _} = zygote()
    refute new_zygote == zygote
    assert parent_of(Session.info(fresh).os_pid) == new_zygote
    # Used after its worker's /proc was read: a session the test no longer
    # refers to may be collected, and its worker ended, before the read.
    assert {:ok, _} = Session.exec(fresh, "true")
  end

  test "when the zygotes' keeper dies, its zygotes' workers and the spares end; owners stay" do
    {zygote, _name} = zygote()
    forked = Session.new(isolation: :process)
    forked_pid = Session.info(forked).os_pid
    assert parent_of(forked_pid) == zygote

    # Options no spare was prepared with, so this worker is started now, by exec.
    Application.put_env(:ex_bashkit, :worker_zygote, false)

    execed =
      try do
        Session.new(isolation: :process, env: %{"STARTED" => "by exec"})
      after
        Application.delete_env(:ex_bashkit, :worker_zygote)
      end

    refute parent_of(Session.info(execed).os_pid) == zygote

    [owners, keeper, spares, cgroups] =
      for name <- [Worker.Supervisor, Worker.Zygote, Worker.Spares, Worker.Cgroups],
          do: Process.whereis(name)

    Process.exit(keeper, :kill)

    # The keeper and what comes after it restart (rest_for_one) ...
    assert wait_until(fn ->
             Enum.all?(
               [{Worker.Zygote, keeper}, {Worker.Spares, spares}, {Worker.Cgroups, cgroups}],
               fn {name, old} -> Process.whereis(name) not in [nil, old] end
             )
           end)

    # ... the owners, before it, do not.
    assert Process.whereis(Worker.Supervisor) == owners
    assert wait_until(fn -> not process?(zygote) and not process?(forked_pid) end)
    assert {:error, _} = Session.exec(forked, "true")
    assert {:ok, %Result{stdout: "by exec\n"}} = Session.exec(execed, "echo $STARTED")

    fresh = Session.new(isolation: :process)
    assert {:ok, %Result{stdout: "again\n"}} = Session.exec(fresh, "echo again")
  end

  test "the zygote forks only for the VM's own ports" do
    {_zygote, name} = zygote()

    # The BEAM itself is the zygote's grandparent, not its sibling.
    {:ok, socket} = :socket.open(:local, :seqpacket, :default)
    :ok = :socket.connect(socket, %{family: :local, path: <<0>> <> name})
    # The zygote may have closed it already: the send may fail too. The
    # connection then ends with no pid sent: an end of file (an empty
    # read: a zygote's answer is never empty) or an error, depending on
    # whether the zygote closed it before or after the send.
    :socket.send(socket, "--harden=off\0")
    ended = :socket.recv(socket, 0, 5_000)
    assert ended in [{:ok, ""}, {:error, :closed}, {:error, :econnreset}, {:error, :epipe}]
    :socket.close(socket)

    # A launcher whose parent is a shell is refused too, and becomes the
    # worker it names itself (here, echo).
    {output, 0} =
      System.cmd("sh", ["-c", "#{@launcher} --zygote=#{name} --worker=/bin/echo refused; true"])

    assert output == "refused\n"
  end

  test "a launcher that finds no zygote becomes the worker itself" do
    {output, 0} =
      System.cmd(@launcher, ["--zygote=nothing_#{System.pid()}", "--worker=/bin/echo", "by exec"])

    assert output == "by exec\n"
  end

  test "a zygote per worker executable: changing it leaves the live workers alone" do
    {zygote, _name} = zygote()
    session = Session.new(isolation: :process)
    {:ok, installed} = ExBashkit.Worker.executable()
    copy = Path.join(host_dir!("zygote"), "ex_bashkit_worker")
    File.cp!(installed, copy)
    Application.put_env(:ex_bashkit, :worker_executable, copy)
    on_exit(fn -> Application.delete_env(:ex_bashkit, :worker_executable) end)

    other = Session.new(isolation: :process)
    refute parent_of(Session.info(other).os_pid) == zygote
    assert parent_of(Session.info(session).os_pid) == zygote
    # Both used after their workers' /proc was read, as above.
    assert {:ok, %Result{stdout: "still\n"}} = Session.exec(session, "echo still")
    assert {:ok, %Result{stdout: "other\n"}} = Session.exec(other, "echo other")
  end

  test "with worker_zygote: false, workers are started by exec" do
    {zygote, _name} = zygote()
    Application.put_env(:ex_bashkit, :worker_zygote, false)
    on_exit(fn -> Application.delete_env(:ex_bashkit, :worker_zygote) end)

    session = Session.new(isolation: :process)
    os_pid = Session.info(session).os_pid

    refute parent_of(os_pid) == zygote
    assert parent_of(os_pid) == parent_of(zygote)
    assert {:ok, %Result{stdout: "exec\n"}} = Session.exec(session, "echo exec")
  end
end
