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
    assert {:ran, {:ok, {"hi\n", "", 0, false, []}}} = queued_or_ran(session, "echo hi")
    assert {:ok, %Result{stdout: "hi\n"}} = Session.exec(session, "echo hi")
  end

  test "a script that waits goes on elsewhere, its output whole and in order" do
    session = Session.new()
    script = "echo a; sleep 0.05; echo b; export AFTER=1"
    assert {:queued, {:ok, {"a\nb\n", "", 0, false, []}}} = queued_or_ran(session, script)
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
end
