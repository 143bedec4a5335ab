defmodule ExBashkit.Session.FirstPollTest do
  # A script's first poll runs on its caller's (dirty) scheduler; one that
  # has to wait goes on on an interpreter thread. What a caller sees must be
  # the same either way: output, order, deadlines, cancel/1, memory caps.
  #
  # Not async: a script that never awaits stops at its deadline only where
  # it is polled first (on the interpreter threads it runs until its limits
  # stop it, and its caller is answered at the deadline), and at most
  # `cores - 1` first polls run at once, so other tests must not hold them.
  use ExBashkit.Case, async: false

  alias ExBashkit.{Error, Interpreter}

  # No command or loop limit stops this loop before its deadline, and it
  # never awaits: only the deadline's watchdog can stop it.
  @spin "while true; do x=1; done"
  @unlimited [
    max_commands: 1_000_000_000,
    max_loop_iterations: 1_000_000_000,
    max_total_loop_iterations: 1_000_000_000
  ]

  # The backend's own answer: `{:ran, outcome}` when the call ran the
  # script itself, `{:ok, job}` when it was queued.
  defp queued_or_ran(session, script) do
    tag = make_ref()

    case Interpreter.exec(session.resource, script, self(), tag, nil, nil) do
      {:ran, outcome} ->
        {:ran, outcome}

      {:ok, _job} ->
        assert_receive {^tag, outcome}, 10_000
        {:queued, outcome}
    end
  end

  test "a script that does not wait is answered by the call itself" do
    session = Session.new()
    assert {:ran, {:ok, {"hi\n", "", 0, false, [], _stats}}} = queued_or_ran(session, "echo hi")
    assert {:ok, %Result{stdout: "hi\n"}} = Session.exec(session, "echo hi")
  end

  test "a pipeline whose stages wake each other is answered by the call itself" do
    # `cat` writes into the pipe `grep` waits on: the wake-up comes inside
    # the poll, which goes on then and there.
    lines = Enum.map_join(1..300, fn i -> "line #{i} user#{rem(i, 7)}\n" end)
    session = Session.new(files: %{"/data/log.txt" => lines})
    script = "cat /data/log.txt | grep -n user6 | tail -1"

    assert {:ran, {:ok, {"300:line 300 user6\n", "", 0, false, [], _stats}}} =
             queued_or_ran(session, script)
  end

  test "a script that waits goes on elsewhere, its output whole and in order" do
    session = Session.new()
    script = "echo a; sleep 0.05; echo b; export AFTER=1"
    assert {:queued, {:ok, {"a\nb\n", "", 0, false, [], _stats}}} = queued_or_ran(session, script)
    assert {:ok, %Result{stdout: "1\n"}} = Session.exec(session, "echo $AFTER")
  end

  test "state carries across calls run either way, in order" do
    session = Session.new()

    for i <- 1..50 do
      script = if rem(i, 5) == 0, do: "sleep 0.001; n=$((n+1))", else: "n=$((n+1))"
      assert {:ok, %Result{exit_code: 0}} = Session.exec(session, script)
    end

    assert {:ok, %Result{stdout: "50\n"}} = Session.exec(session, "echo $n")
  end

  test "many callers on one session and on their own: every call answered, none lost" do
    shared = Session.new()

    1..8
    |> Enum.map(fn _ ->
      Task.async(fn ->
        own = Session.new()

        for i <- 1..100 do
          {:ok, %Result{exit_code: 0}} = Session.exec(shared, "c=$((c+1))")
          {:ok, %Result{stdout: out}} = Session.exec(own, "echo #{i}")
          assert out == "#{i}\n"
        end
      end)
    end)
    |> Task.await_many(60_000)

    assert {:ok, %Result{stdout: "800\n"}} = Session.exec(shared, "echo $c")
  end

  test "a script that never awaits stops at its deadline, and the session goes on" do
    session = Session.new(limits: @unlimited)

    {us, outcome} =
      :timer.tc(fn -> Session.exec(session, @spin, timeout_ms: 200, errors: :struct) end)

    assert {:error, %Error{reason: :timeout, limit: :timeout_ms}} = outcome
    # Stopped at the deadline (checked every 5 ms); 10x the expected figure.
    assert us < 2_000_000, "took #{div(us, 1000)} ms"
    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    # It ran past the budget of a caller's scheduler: the session's later
    # scripts go to the interpreter threads.
    assert {:queued, {:ok, _}} = queued_or_ran(session, "true")
  end

  test "cancel/1 stops a script that never awaits" do
    session = Session.new(limits: @unlimited)
    task = Task.async(fn -> Session.exec(session, @spin, errors: :struct) end)
    # Until cancel/1 finds it running (it returns :idle before).
    assert wait_until(fn -> Session.cancel(session) == :ok end)
    assert {:error, %Error{reason: :cancelled}} = Task.await(task, 10_000)
    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
  end

  test "a caller killed inside a first poll: its script stops at its deadline, the session goes on" do
    session = Session.new(limits: @unlimited)
    caller = spawn(fn -> Session.exec(session, @spin, timeout_ms: 300) end)
    monitor = Process.monitor(caller)
    Process.sleep(50)
    Process.exit(caller, :kill)
    # A process inside a NIF dies when the NIF returns: at the deadline.
    assert_receive {:DOWN, ^monitor, :process, ^caller, :killed}, 10_000
    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
  end

  test "a big script's session runs its later scripts on the interpreter threads" do
    session = Session.new()
    big = "x=1\n" <> String.duplicate("# padding\n", 2_000)
    assert {:ok, %Result{exit_code: 0}} = Session.exec(session, big)
    assert {:queued, {:ok, _}} = queued_or_ran(session, "true")
  end

  test "the same never-awaiting script a hundred times: each stopped, nothing left" do
    session = Session.new(limits: @unlimited)
    # The first run moves the session to the interpreter threads; fresh
    # sessions keep taking the caller's path.
    threads = ExBashkit.stats().threads

    for _ <- 1..100 do
      fresh = Session.new(limits: @unlimited)

      assert {:error, %Error{reason: :timeout}} =
               Session.exec(fresh, @spin, timeout_ms: 10, errors: :struct)
    end

    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    # No thread was started for them.
    assert ExBashkit.stats().threads <= threads + 1
  end

  describe "a script that calls back" do
    # A builtin that tells the test it was called, then waits to be told
    # to answer (or forever).
    defp held_builtin(test) do
      fn _request ->
        send(test, {:called, self()})

        receive do
          :answer -> {:ok, "answered\n"}
        end
      end
    end

    test "is handed back with its call, and polled on by its caller once answered" do
      session = Session.new(builtins: %{"f" => fn _ -> {:ok, ""} end})
      tag = make_ref()

      assert {:call, handle, [{:ex_bashkit_call, pending, {:builtin, "f"}, %{args: ["1"]}}]} =
               Interpreter.exec(session.resource, "f 1; echo after", self(), tag, self(), nil)

      assert Interpreter.callback_reply(pending, {:output, "from f\n", "", 0})
      assert_receive {:ex_bashkit_resumable, ^pending}, 10_000

      assert {:ran, {:ok, {"from f\nafter\n", "", 0, false, [], _stats}}} =
               Interpreter.resume(handle)

      refute_received {^tag, _}
    end

    test "many calls, in loops and in background jobs, each answered in order" do
      session = Session.new(builtins: %{"f" => fn %{args: [n]} -> {:ok, "#{n}\n"} end})

      assert {:ok, %Result{stdout: out}} =
               Session.exec(session, "for i in $(seq 300); do f $i; done")

      assert out == Enum.map_join(1..300, &"#{&1}\n")

      assert {:ok, %Result{stdout: out}} = Session.exec(session, "f a & f b & wait; echo done")
      assert out |> String.split() |> Enum.sort() == ["a", "b", "done"]
      # A wait after a call, and a call after the wait.
      assert {:ok, %Result{stdout: "1\n2\n"}} = Session.exec(session, "f 1; sleep 0.02; f 2")
    end

    test "cancel/1 stops it while its call is served, without waiting for the call" do
      session = Session.new(builtins: %{"f" => held_builtin(self())})
      task = Task.async(fn -> Session.exec(session, "f; echo never", errors: :struct) end)
      assert_receive {:called, runner}, 10_000
      assert Session.cancel(session) == :ok
      assert {:error, %Error{reason: :cancelled}} = Task.await(task, 10_000)
      # The call was abandoned with its script: the runner is gone.
      refute Process.alive?(runner)
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end

    test "its deadline passes while its call is served: a timeout, and the session goes on" do
      session = Session.new(builtins: %{"f" => held_builtin(self())})

      assert {:error, %Error{reason: :timeout, limit: :timeout_ms}} =
               Session.exec(session, "f; echo never", timeout_ms: 100, errors: :struct)

      assert_received {:called, _runner}
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end

    test "a caller killed while its call is served: the session goes on for others" do
      session = Session.new(builtins: %{"f" => held_builtin(self())})
      test = self()

      for _ <- 1..100 do
        caller = spawn(fn -> send(test, Session.exec(session, "f; echo never")) end)
        assert_receive {:called, runner}, 10_000
        monitor = Process.monitor(runner)
        Process.exit(caller, :kill)
        # Its callbacks' server stops the call's runner.
        assert_receive {:DOWN, ^monitor, :process, ^runner, _}, 10_000
        assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
      end

      refute_received {:ok, _}
    end

    test "close/1 stops it while its call is served" do
      session = Session.new(builtins: %{"f" => held_builtin(self())})
      task = Task.async(fn -> Session.exec(session, "f; echo never", errors: :struct) end)
      assert_receive {:called, _runner}, 10_000
      :ok = Session.close(session)
      assert {:error, %Error{}} = Task.await(task, 10_000)
    end
  end

  test "callers' schedulers take first polls only while one dirty scheduler stays free" do
    dirty = :erlang.system_info(:dirty_cpu_schedulers_online)
    slots = ExBashkit.stats().caller_slots
    assert slots <= dirty - 1
    if dirty >= 2, do: assert(slots >= 1)

    # A VM with a single dirty CPU scheduler runs every script on the
    # interpreter threads, which answer as always.
    {_peer, node} = ExBashkit.Test.Cluster.start_node(args: ["+SDcpu", "1:1"])
    assert :erpc.call(node, ExBashkit, :stats, []).caller_slots == 0
    assert {:ok, %Result{stdout: "hi\n"}} = :erpc.call(node, ExBashkit, :exec, ["echo hi"])
  end
end
