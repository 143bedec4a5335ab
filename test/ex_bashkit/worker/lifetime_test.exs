defmodule ExBashkit.WorkerLifetimeTest do
  # No worker process outlives its session: collected, closed, its
  # creator killed, its server hibernated or stopped. Each test follows
  # the OS processes of its own workers, whatever else runs.
  use ExBashkit.Case, async: false

  alias ExBashkit.Server

  defp gone?(os_pids), do: Enum.all?(os_pids, &(not process?(&1)))

  # Sessions that each ran a script, made in a process of their own; their
  # workers' pids.
  defp sessions_that_ran(n, owner_fun) do
    parent = self()

    pid =
      spawn(fn ->
        sessions = for _ <- 1..n, do: Session.new(isolation: :process)
        for s <- sessions, do: {:ok, %{stdout: "ran\n"}} = Session.exec(s, "echo ran")
        send(parent, {:workers, Enum.map(sessions, &Session.info(&1).os_pid)})

        receive do
          :go -> owner_fun.(sessions)
        end
      end)

    assert_receive {:workers, os_pids}, 30_000
    assert Enum.all?(os_pids, &process?/1)
    send(pid, :go)
    {pid, os_pids}
  end

  test "20 sessions that each ran a script leave no worker once collected" do
    {_pid, os_pids} =
      sessions_that_ran(20, fn sessions ->
        # Dropped and collected in a process that lives on.
        _ = length(sessions)
        :erlang.garbage_collect()

        receive do
          :never -> :ok
        end
      end)

    assert wait_until(fn -> gone?(os_pids) end), "workers alive: #{inspect(os_pids)}"
  end

  test "the workers of a process that is killed go with it" do
    {pid, os_pids} =
      sessions_that_ran(5, fn sessions ->
        receive do
          :never -> sessions
        end
      end)

    Process.exit(pid, :kill)
    assert wait_until(fn -> gone?(os_pids) end), "workers alive: #{inspect(os_pids)}"
  end

  test "a session given to another process keeps its worker while that process holds it" do
    parent = self()

    {_pid, [os_pid]} =
      sessions_that_ran(1, fn [session] ->
        keeper =
          spawn(fn ->
            receive do
              :run -> send(parent, {:ran, Session.exec(session, "echo kept")})
            end

            receive do
              :drop -> :ok
            end
          end)

        send(parent, {:keeper, keeper})
      end)

    # Its creator ended, and its heap with it; the keeper still holds it.
    assert_receive {:keeper, keeper}
    send(keeper, :run)
    assert_receive {:ran, {:ok, %{stdout: "kept\n"}}}, 10_000
    assert process?(os_pid)
    send(keeper, :drop)
    assert wait_until(fn -> not process?(os_pid) end)
  end

  test "a session is not collected while a call on it, its last use, waits for its worker" do
    caller = self()
    big = :binary.copy("x", 8_388_608)
    fresh = fn -> Session.new(isolation: :process, files: %{"/big" => big}) end
    {:ok, snapshot} = Session.snapshot(fresh.())

    # Collects the caller's heap over and over while it waits: a session
    # referenced by nothing after the call's arguments would be collected,
    # and its worker killed, mid-call.
    collector =
      spawn_link(fn ->
        Stream.repeatedly(fn -> :erlang.garbage_collect(caller) end) |> Stream.run()
      end)

    try do
      for _ <- 1..10 do
        assert {:ok, <<"x", _::binary>>} = Session.read_file(fresh.(), "/big")
        assert {:ok, %{size: 8_388_608}} = Session.stat(fresh.(), "/big")
        assert :ok = Session.write_file(fresh.(), "/other", big)
        assert {:ok, entries} = Session.list_dir(fresh.(), "/")
        assert {"big", :file} in entries
        assert :idle = Session.cancel(fresh.())
        assert {:ok, _} = Session.snapshot(fresh.())
        assert {:ok, _} = Session.restore(fresh.(), snapshot)
      end
    after
      Process.unlink(collector)
      Process.exit(collector, :kill)
    end
  end

  test "close/1 ends the worker at once; closing again is :ok, and later calls say why" do
    session = Session.new(isolation: :process)
    {:ok, _} = Session.exec(session, "echo hi > /f")
    os_pid = Session.info(session).os_pid

    assert Session.close(session) == :ok
    assert wait_until(fn -> not process?(os_pid) end)
    assert Session.close(session) == :ok

    for call <- [
          fn -> Session.exec(session, "echo hi") end,
          fn -> Session.read_file(session, "/f") end,
          fn -> Session.snapshot(session) end
        ] do
      assert {:error, message} = call.()
      assert message =~ "closed"
    end
  end

  test "close/1 on an in-VM session: a running script is cancelled, later calls refused" do
    session = Session.new(isolation: :none)
    parent = self()

    running =
      Task.async(fn -> Session.exec(session, "echo started; sleep 30", stream_to: parent) end)

    assert_receive {:ex_bashkit, _, {:stdout, "started\n"}}, 5_000
    assert Session.close(session) == :ok
    assert {:error, _} = Task.await(running, 5_000)
    assert {:error, message} = Session.write_file(session, "/f", "x")
    assert message =~ "closed"
  end

  test "isolated servers that ran a script keep no worker once hibernated, nor once stopped" do
    servers =
      for i <- 1..20 do
        {:ok, server} = Server.get_or_start({__MODULE__, i, make_ref()}, isolation: :process)
        {:ok, %{stdout: "ran\n"}} = Server.exec(server, "echo ran")
        server
      end

    os_pids = Enum.map(servers, &worker_of/1)
    assert Enum.all?(os_pids, &process?/1)

    for server <- servers, do: :ok = Server.hibernate(server)
    assert wait_until(fn -> gone?(os_pids) end), "hibernated servers kept workers"

    # Woken, each has a worker again; stopped, none.
    for server <- servers, do: {:ok, _} = Server.exec(server, "true")
    woken = Enum.map(servers, &worker_of/1)
    assert Enum.all?(woken, &process?/1)
    for server <- servers, do: :ok = Server.stop(server)
    assert wait_until(fn -> gone?(woken) end), "stopped servers left workers"
  end

  defp worker_of(server) do
    %{session: %Session{} = session} = :sys.get_state(server)
    Session.info(session).os_pid
  end

  test "ExBashkit.exec/1 honours config :isolation" do
    forward_telemetry([[:ex_bashkit, :exec, :start]])
    put_config(:isolation, :process)
    assert {:ok, %{stdout: "hi\n"}} = ExBashkit.exec("echo hi")

    assert_receive {:telemetry, [:ex_bashkit, :exec, :start], _,
                    %{session: %{resource: %ExBashkit.Worker{}}}}
  end
end
