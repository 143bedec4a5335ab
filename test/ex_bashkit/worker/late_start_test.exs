defmodule ExBashkit.WorkerLateStartTest do
  # A job's `{:started, id}` may cross its caller's exit, or its caller's
  # abandon, on the way to the owner: the owner took the job for queued
  # when it was running. A started job still gets no more than its grace:
  # a scripted worker (a shell script that answers `:new`, then sends
  # `{:started, 1}` only when the test says so, and never ends the job)
  # is killed a grace after that late `:started`.
  use ExBashkit.Case, async: false

  alias ExBashkit.Worker.Protocol

  setup do
    dir = tmp_path("late_start")
    File.mkdir_p!(dir)
    on_exit(fn -> File.rm_rf!(dir) end)

    # Any os_pid: the owner kills the Port's process, the script's.
    File.write!(
      Path.join(dir, "new.frame"),
      Protocol.frame({:new, {:ok, {[], [], 4_000_000}}})
    )

    File.write!(Path.join(dir, "started.frame"), Protocol.frame({:started, 1}))

    script = Path.join(dir, "worker.sh")

    File.write!(script, """
    #!/bin/sh
    dir=$(dirname "$0")
    echo $$ > "$dir/pid"
    cat "$dir/new.frame"
    while [ ! -e "$dir/go" ]; do sleep 0.01; done
    cat "$dir/started.frame"
    exec sleep 60
    """)

    File.chmod!(script, 0o755)
    put_config(:worker_executable, script)
    put_config(:worker_zygote, false)
    put_config(:worker_spares, 0)

    forward_telemetry([[:ex_bashkit, :worker, :kill]])

    session = Session.new(isolation: :process)
    # Held until the test ends: a session nothing holds any more is
    # dropped, and its owner kills the worker and stops (a test that
    # kills its caller would otherwise lose the last holder).
    on_exit(fn -> Session.close(session) end)
    os_pid = dir |> Path.join("pid") |> File.read!() |> String.trim()
    assert process?(os_pid)
    %{session: session, dir: dir, os_pid: os_pid, owner: session.resource.pid}
  end

  test "a job abandoned as queued whose start comes later is killed when it does not stop",
       %{session: session, dir: dir, os_pid: os_pid, owner: owner} do
    # The owner had no `:started`: the job looked queued.
    assert {:error, "timed out after 100 ms" <> _} =
             Session.exec(session, "sleep 60", timeout_ms: 100)

    assert %{1 => false} = :sys.get_state(owner).abandoned
    File.touch!(Path.join(dir, "go"))

    assert_receive {:telemetry, [:ex_bashkit, :worker, :kill], _,
                    %{reason: :timeout, os_pid: 4_000_000}},
                   10_000

    assert wait_until(fn -> not process?(os_pid) end)
  end

  test "a job whose caller exited before its start was known is killed when it does not stop",
       %{session: session, dir: dir, os_pid: os_pid, owner: owner} do
    caller = spawn(fn -> Session.exec(session, "sleep 60") end)
    assert wait_until(fn -> Map.has_key?(:sys.get_state(owner).jobs, 1) end)
    Process.exit(caller, :kill)
    # The test's own reference may be gone by now (it does not use the
    # session again): what holds the session is the setup's on_exit.
    :erlang.garbage_collect()
    assert wait_until(fn -> match?(%{1 => %{caller: nil}}, :sys.get_state(owner).jobs) end)
    File.touch!(Path.join(dir, "go"))

    assert_receive {:telemetry, [:ex_bashkit, :worker, :kill], _,
                    %{reason: :orphaned, os_pid: 4_000_000}},
                   10_000

    assert wait_until(fn -> not process?(os_pid) end)
  end

  test "a second :started for a job abandoned as queued breaks the protocol",
       %{session: session, dir: dir, owner: owner} do
    assert {:error, "timed out after 100 ms" <> _} =
             Session.exec(session, "sleep 60", timeout_ms: 100)

    assert %{1 => false} = :sys.get_state(owner).abandoned
    twice = List.duplicate(Protocol.frame({:started, 1}), 2)
    File.write!(Path.join(dir, "started.frame"), twice)
    File.touch!(Path.join(dir, "go"))

    assert_receive {:telemetry, [:ex_bashkit, :worker, :kill], _,
                    %{reason: :protocol, os_pid: 4_000_000}},
                   10_000
  end
end
