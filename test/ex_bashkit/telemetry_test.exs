defmodule ExBashkit.TelemetryTest do
  # Telemetry (issue 17): every documented event, with a handler attached
  # through the test stand-in for :telemetry (test/support/telemetry.ex).
  # Not async: handlers see every test's events, so each test filters by
  # what it ran and this module runs alone.
  use ExBashkit.Case, async: false

  alias ExBashkit.{Error, Server}
  alias ExBashkit.Test.{Cluster, MapFs}

  @events [
    [:ex_bashkit, :exec, :start],
    [:ex_bashkit, :exec, :stop],
    [:ex_bashkit, :exec, :exception],
    [:ex_bashkit, :callback, :start],
    [:ex_bashkit, :callback, :stop],
    [:ex_bashkit, :callback, :exception],
    [:ex_bashkit, :snapshot, :start],
    [:ex_bashkit, :snapshot, :stop],
    [:ex_bashkit, :restore, :start],
    [:ex_bashkit, :restore, :stop],
    [:ex_bashkit, :peer, :run, :start],
    [:ex_bashkit, :peer, :run, :stop],
    [:ex_bashkit, :server, :hibernate],
    [:ex_bashkit, :server, :wake],
    [:ex_bashkit, :server, :move],
    [:ex_bashkit, :worker, :kill],
    [:ex_bashkit, :command, :denied]
  ]

  setup do
    forward_telemetry(@events)
    assert ExBashkit.Telemetry.enabled?()
    :ok
  end

  test "command denied: an event per command the :command_policy refused" do
    session = Session.new(command_policy: {:deny, ["rm", "ls"]}, files: %{"/k" => "k"})
    run(session, "rm /k; ls; echo done")

    assert_receive {:telemetry, [:ex_bashkit, :command, :denied], %{count: 1},
                    %{name: "rm", reason: "denied by the command policy", aborted: false}}

    assert_receive {:telemetry, [:ex_bashkit, :command, :denied], %{count: 1},
                    %{name: "ls", aborted: false}}

    aborting = Session.new(command_policy: {:deny, ["rm"]}, command_policy_abort: true)
    assert {:error, _} = Session.exec(aborting, "rm /k")

    assert_receive {:telemetry, [:ex_bashkit, :command, :denied], %{count: 1},
                    %{name: "rm", reason: "denied by the command policy", aborted: true}}
  end

  test "worker kill: an event with the reason and the worker's pid" do
    session = hog_session(isolation: :process)

    os_pid = Session.info(session).os_pid
    assert {:error, _} = Session.exec(session, hog_command(), timeout_ms: 300)

    assert_receive {:telemetry, [:ex_bashkit, :worker, :kill], %{count: 1},
                    %{reason: :timeout, os_pid: ^os_pid}}
  end

  test "exec: a span with the outcome, for sessions and one-off scripts" do
    session = Session.new()
    {:ok, _} = Session.exec(session, "printf abc; printf de >&2; exit 3")

    assert_receive {:telemetry, [:ex_bashkit, :exec, :start],
                    %{monotonic_time: _, system_time: _}, %{session: ^session, script_bytes: 33}}

    assert_receive {:telemetry, [:ex_bashkit, :exec, :stop], %{duration: duration} = m,
                    %{session: ^session} = meta}

    assert duration > 0
    assert m.stdout_bytes == 3 and m.stderr_bytes == 2
    assert %{exit_code: 3, truncated: false, reason: nil, limit: nil} = meta
    # What the script cost: printf, printf, exit (and the list of them).
    assert %{commands: commands, wall_us: wall, cpu_us: cpu, peak_memory_bytes: peak} = m
    assert commands >= 3
    assert Enum.all?([wall, cpu, peak], &(is_integer(&1) and &1 >= 0))

    {:ok, _} = ExBashkit.exec("echo once")

    assert_receive {:telemetry, [:ex_bashkit, :exec, :stop], %{stdout_bytes: 5},
                    %{session: nil, exit_code: 0}}

    limited = Session.new(limits: [max_loop_iterations: 1])

    {:error, %Error{}} =
      Session.exec(limited, "for i in 1 2 3; do echo $i; done", errors: :struct)

    assert_receive {:telemetry, [:ex_bashkit, :exec, :stop], _,
                    %{
                      session: ^limited,
                      exit_code: nil,
                      reason: :limit,
                      limit: :max_loop_iterations
                    }}

    {:ok, %{stdout: ["x\n"]}} = Session.exec(session, "echo x", into: [])

    assert_receive {:telemetry, [:ex_bashkit, :exec, :stop], %{stdout_bytes: 2},
                    %{session: ^session}}
  end

  test "callbacks: builtins and virtual_fs, with their status; a raise is an exception event" do
    session =
      Session.new(
        builtins: %{
          "ok" => fn _ -> {:ok, "fine\n"} end,
          "boom" => fn _ -> raise "kaput" end
        },
        virtual_fs: %{"/kv" => {MapFs, MapFs.start(%{"/a" => "from the map\n"})}}
      )

    {:ok, %{stdout: "fine\nfrom the map\n"}} = Session.exec(session, "ok; cat /kv/a; boom")

    assert_receive {:telemetry, [:ex_bashkit, :callback, :start], _,
                    %{type: :builtin, name: "ok"}}

    assert_receive {:telemetry, [:ex_bashkit, :callback, :stop], %{duration: _},
                    %{type: :builtin, name: "ok", status: :ok}}

    assert_receive {:telemetry, [:ex_bashkit, :callback, :stop], _,
                    %{type: :virtual_fs, name: "/kv", operation: operation}}

    assert is_atom(operation)

    assert_receive {:telemetry, [:ex_bashkit, :callback, :exception], %{duration: _},
                    %{type: :builtin, name: "boom", kind: :error, reason: %RuntimeError{}}}
  end

  test "snapshot and restore" do
    session = Session.new()
    {:ok, bytes} = Session.snapshot(session)
    size = byte_size(bytes)

    assert_receive {:telemetry, [:ex_bashkit, :snapshot, :stop], %{bytes: ^size},
                    %{session: ^session, status: :ok}}

    fresh = Session.new()
    {:ok, _} = Session.restore(fresh, bytes)

    assert_receive {:telemetry, [:ex_bashkit, :restore, :start], %{bytes: ^size},
                    %{session: ^fresh}}

    assert_receive {:telemetry, [:ex_bashkit, :restore, :stop], _,
                    %{session: ^fresh, status: :ok}}

    {:error, _} = Session.restore(fresh, "garbage")

    assert_receive {:telemetry, [:ex_bashkit, :restore, :stop], _,
                    %{session: ^fresh, status: :error}}
  end

  test "peer runs" do
    {:ok, _} = ExBashkit.Peer.run(~S|IO.write("hey"); 1|)

    assert_receive {:telemetry, [:ex_bashkit, :peer, :run, :stop], %{output_bytes: 3},
                    %{code_bytes: 18, status: :ok}},
                   10_000

    {:error, _, _} = ExBashkit.Peer.run("raise 1")
    assert_receive {:telemetry, [:ex_bashkit, :peer, :run, :stop], _, %{status: :error}}, 10_000
  end

  @tag timeout: 120_000
  test "servers: hibernate, wake, move" do
    id = {:telemetry_test, make_ref()}
    # start/1's servers move by hand (those of get_or_start/2 are placed by the ring).
    {:ok, server} = Server.start(id: id)
    {:ok, _} = Server.exec(server, "echo hi > /f")
    :ok = Server.hibernate(server)

    assert_receive {:telemetry, [:ex_bashkit, :server, :hibernate],
                    %{duration: _, snapshot_bytes: bytes}, %{id: ^id, store: nil}}

    assert bytes > 0
    {:ok, _} = Server.exec(server, "cat /f")

    assert_receive {:telemetry, [:ex_bashkit, :server, :wake], %{duration: _},
                    %{id: ^id, from: :memory}}

    {_peer, node} = Cluster.start_node()
    {:ok, moved} = Server.move(server, node)
    assert node(moved) == node
    host = node()

    assert_receive {:telemetry, [:ex_bashkit, :server, :move], %{snapshot_bytes: _},
                    %{id: ^id, from: ^host, to: ^node}}

    Server.stop(moved)
  end
end
