defmodule ExBashkit.WorkerSparesTest do
  # Spare workers (ExBashkit.Worker.Spares) are hardened ahead for the
  # default session's needs. A session with those needs takes one as it
  # is; any other gets a worker of its own, hardened for what it needs.
  # It changes the application's config, so it runs alone.
  use ExBashkit.Case, async: false

  alias ExBashkit.Session

  setup do
    on_exit(fn -> Application.delete_env(:ex_bashkit, :worker_spares) end)
    # The spares are started on the first isolated session.
    Session.exec(Session.new(isolation: :process), "true")
    assert wait_until(fn -> length(spares()) == 2 and length(spares(:plain)) == 2 end)
    %{spares: spares(), plain: spares(:plain)}
  end

  # The OS pids of the Ports (launchers) of the spares of `kind`.
  defp spares(kind \\ :prepared),
    do: Enum.map(Map.fetch!(:sys.get_state(ExBashkit.Worker.Spares), kind), &elem(&1, 1))

  # The OS pid of a session's Port: a spare's, if it took one.
  defp port_pid(session), do: :sys.get_state(session.resource.pid).port_pid

  # A launcher with this pid (pids are reused).
  defp launcher?(os_pid),
    do:
      process?(os_pid) and
        match?({:ok, "ex_bashkit_work" <> _}, File.read("/proc/#{os_pid}/comm"))

  # What the kernel holds a worker to: its user and its resource limits.
  defp held_to(session) do
    os_pid = Session.info(session).os_pid
    status = File.read!("/proc/#{os_pid}/status")
    [uid] = Regex.run(~r/^Uid:.*$/m, status)
    {uid, File.read!("/proc/#{os_pid}/limits"), Session.info(session).layers}
  end

  test "a default session takes a spare, hardened as a worker of its own would be",
       %{spares: spares, plain: plain} do
    session = Session.new(isolation: :process, env: [A: "1"], files: %{"/f" => "x"})
    assert port_pid(session) in spares
    refute port_pid(session) in plain
    assert {:ok, %Result{stdout: "1 x"}} = Session.exec(session, "echo -n $A $(cat /f)")

    # With no spare left, a worker hardens as it starts.
    Application.put_env(:ex_bashkit, :worker_spares, 0)
    _drained = for _ <- spares(), do: Session.new(isolation: :process)
    assert spares() == []
    own = Session.new(isolation: :process)
    refute port_pid(own) in spares
    assert held_to(session) == held_to(own)
  end

  test "a session that needs more takes a plain spare, hardened for it; the prepared one it took first is closed",
       %{spares: spares, plain: plain} do
    dir = host_dir!("spares")
    File.write!(Path.join(dir, "data"), "mounted")

    session =
      Session.new(
        isolation: :process,
        mounts: [{"/data", dir, :read_only}],
        limits: [max_file_bytes: 3 * 1024 * 1024]
      )

    assert port_pid(session) in plain
    assert {:ok, %Result{stdout: "mounted"}} = Session.exec(session, "cat /data/data")
    {_uid, limits, _layers} = held_to(session)
    assert limits =~ ~r/^Max file size\s+3145728\s+3145728/m

    # The prepared spare it took first went, and others took the places
    # of both.
    [taken] = spares -- spares()
    assert wait_until(fn -> not launcher?(taken) end)
    assert wait_until(fn -> length(spares()) == 2 and length(spares(:plain)) == 2 end)
  end
end
