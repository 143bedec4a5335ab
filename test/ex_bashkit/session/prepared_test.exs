defmodule ExBashkit.Session.PreparedTest do
  # Changes the application's configuration and counts the VM's live
  # sessions, so it runs alone.
  use ExBashkit.Case, async: false

  alias ExBashkit.Native

  @capacity 4

  setup do
    # The prepared interpreters are the VM's defaults: a suite run with
    # isolated defaults (EX_BASHKIT_ISOLATION=process) has none.
    previous = Application.get_env(:ex_bashkit, :isolation)
    Application.put_env(:ex_bashkit, :isolation, :none)

    on_exit(fn ->
      restore(:isolation, previous)
      Application.delete_env(:ex_bashkit, :prepared_sessions)
      Application.delete_env(:ex_bashkit, :max_timeout_ms)
    end)
  end

  test "new() hands over interpreters prepared ahead, each its own, and the shelf refills" do
    fill_shelf()

    sessions = for _ <- 1..3, do: Session.new()
    live = Native.live_sessions()

    assert sessions |> Enum.map(& &1.id) |> Enum.uniq() |> length() == 3
    [first, second, third] = sessions
    assert {:ok, %{exit_code: 0}} = Session.exec(first, "echo one > /f; export X=1")
    assert {:ok, %{stdout: "", exit_code: 1}} = Session.exec(second, "cat /f 2>/dev/null")
    assert {:ok, %{stdout: "\n"}} = Session.exec(third, "echo $X")

    # One left is a quarter of the shelf: it is refilled, with sessions
    # that are not counted until handed over.
    assert wait_until(fn -> ExBashkit.stats().prepared == @capacity end)
    assert Native.live_sessions() <= live
  end

  test "the shelf refills while a script keeps an interpreter thread busy" do
    fill_shelf()

    busy = Session.new(limits: [timeout_ms: 60_000])
    test = self()

    runner =
      spawn(fn ->
        Session.exec(busy, "echo running; sleep 30", timeout_ms: 60_000, stream_to: {test, :busy})
      end)

    # The script runs from here on.
    assert_receive {:ex_bashkit, :busy, {:stdout, "running\n"}}
    taken = for _ <- 1..@capacity, do: Session.new()
    # Builds wait a moment for scripts to end, not for ever.
    assert wait_until(fn -> ExBashkit.stats().prepared == @capacity end)
    assert Process.alive?(runner)
    assert length(taken) == @capacity
    Session.cancel(busy)
  end

  test "sessions made at once from many processes are all distinct and usable" do
    results =
      1..40
      |> Enum.map(fn i ->
        Task.async(fn ->
          session = Session.new()
          {:ok, result} = Session.exec(session, "echo #{i} > /n; cat /n")
          {session.id, result.stdout}
        end)
      end)
      |> Task.await_many(30_000)

    assert results |> Enum.map(&elem(&1, 0)) |> Enum.uniq() |> length() == 40
    assert Enum.map(results, &elem(&1, 1)) == Enum.map(1..40, &"#{&1}\n")
  end

  test "a burst past the shelf is handed sessions at once, each built once and its own" do
    fill_shelf()
    baseline = Native.live_sessions()

    # Far more than the shelf holds: most are handed over unbuilt, and
    # built by the refill thread or by their first call, whichever is first.
    sessions = for _ <- 1..300, do: Session.new()
    assert sessions |> Enum.map(& &1.id) |> Enum.uniq() |> length() == 300

    # The first calls race the refill thread for the first sessions, and
    # find the later ones built.
    for {session, i} <- Enum.with_index(sessions) do
      assert {:ok, %{stdout: stdout}} = Session.exec(session, "echo #{i} > /n; cat /n")
      assert stdout == "#{i}\n"
    end

    assert Native.live_sessions() >= baseline + 300
    # Each session has its own files.
    assert {:ok, %{stdout: "0\n"}} = Session.exec(hd(sessions), "cat /n")
  end

  test "sessions of a burst dropped before they are built are never built" do
    fill_shelf()
    baseline = Native.live_sessions()

    task = Task.async(fn -> length(for _ <- 1..2_000, do: Session.new()) end)
    assert Task.await(task) == 2_000
    :erlang.garbage_collect()

    # The handles are gone with the task: whatever the refill thread had
    # not built yet it skips, and what it built is freed.
    assert wait_until(fn -> Native.live_sessions() <= baseline end, 1_000)
    assert wait_until(fn -> ExBashkit.stats().prepared == @capacity end, 1_000)
  end

  test "a one-off takes a prepared interpreter and leaves nothing for the next" do
    fill_shelf()
    baseline = Native.live_sessions()

    assert {:ok, %{exit_code: 0}} =
             ExBashkit.exec("echo secret > /tmp/left; export LEFT=1; f() { echo f; }")

    assert {:ok, %{stdout: "[][]\n", exit_code: 0}} =
             ExBashkit.exec(
               ~S|echo "[$(cat /tmp/left 2>/dev/null)][$LEFT]"; if type f >/dev/null 2>&1; then echo f; fi|
             )

    # Each one-off's interpreter is gone with its script.
    assert wait_until(fn -> Native.live_sessions() <= baseline end)
  end

  test "one-offs in a burst each run alone, are all freed, and leave the shelf above a quarter" do
    fill_shelf(32)
    baseline = Native.live_sessions()

    stdouts = fn range ->
      for i <- range do
        {:ok, result} = ExBashkit.exec("ls /tmp; echo #{i} > /tmp/mine; cat /tmp/mine")
        result.stdout
      end
    end

    # Back to back, as a fan-out of tool calls: each its own interpreter,
    # freed by the refill thread once the burst pauses. One-offs leave more
    # than a quarter of the shelf (past it they build their own), so they
    # never set the refill thread building beside them.
    assert stdouts.(1..40) == Enum.map(1..40, &"#{&1}\n")
    assert wait_until(fn -> Native.live_sessions() <= baseline end)
    assert ExBashkit.stats().prepared > 8

    # Sessions take it down to a quarter, or the refill thread fills it
    # in the middle of their burst and they leave it above: either way it
    # is refilled, at once or once they pause.
    sessions = for _ <- 1..24, do: Session.new()
    assert wait_until(fn -> ExBashkit.stats().prepared == 32 end)
    assert length(sessions) == 24
  end

  test "one-offs that leave the shelf short of full see it refilled once they pause" do
    fill_shelf()
    baseline = Native.live_sessions()

    # One-offs take while more than a quarter stays, so they never take it
    # down to the quarter that sets the refill thread building.
    for _ <- 1..@capacity do
      assert {:ok, %{stdout: "ok\n"}} = ExBashkit.exec("echo ok")
    end

    assert wait_until(fn -> ExBashkit.stats().prepared == @capacity end)
    assert wait_until(fn -> Native.live_sessions() <= baseline end)
  end

  test "a change of configuration prepares with the new defaults" do
    fill_shelf()

    Application.put_env(:ex_bashkit, :max_timeout_ms, 300)
    session = Session.new()
    assert session.timeout_ms == 300
    assert {:error, message} = Session.exec(session, "sleep 20")
    assert message =~ "execution timeout (300ms)"

    Application.delete_env(:ex_bashkit, :max_timeout_ms)
    assert Session.new().timeout_ms == 30_000
  end

  test "prepared_sessions: 0 keeps none, and a bad value names the option" do
    Session.new()
    Application.put_env(:ex_bashkit, :prepared_sessions, 0)
    assert {:ok, %{stdout: "ok\n"}} = Session.exec(Session.new(), "echo ok")
    assert wait_until(fn -> ExBashkit.stats().prepared == 0 end)
    # A one-off then builds its own, from the defaults it passes.
    assert {:ok, %{stdout: "once\n"}} = ExBashkit.exec("echo once")

    Application.put_env(:ex_bashkit, :prepared_sessions, :many)

    assert_raise ArgumentError, ~r/:prepared_sessions must be a non-negative integer/, fn ->
      Session.new()
    end
  end

  test "isolated defaults prepare no interpreter in the VM" do
    Application.put_env(:ex_bashkit, :isolation, :process)
    session = Session.new()
    assert Session.info(session).isolation == :process
    assert wait_until(fn -> ExBashkit.stats().prepared == 0 end)
  end

  # A shelf of `capacity`, full: new options (another capacity) prepare a
  # new one, without a hand-over from it.
  defp fill_shelf(capacity \\ @capacity) do
    Application.put_env(:ex_bashkit, :prepared_sessions, capacity + 1)
    ExBashkit.Session.Prepared.defaults()
    Application.put_env(:ex_bashkit, :prepared_sessions, capacity)
    ExBashkit.Session.Prepared.defaults()
    assert wait_until(fn -> ExBashkit.stats().prepared == capacity end)
  end

  defp restore(key, nil), do: Application.delete_env(:ex_bashkit, key)
  defp restore(key, value), do: Application.put_env(:ex_bashkit, key, value)
end
