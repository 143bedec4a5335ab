defmodule ExBashkit.PlacementTest do
  # Where new work goes. Not async: it starts runaways, which hold their
  # threads for seconds, and counts on idle threads being there.
  use ExBashkit.Case, async: false

  # A script that never yields holds every script started on its thread;
  # new work goes to idle threads first, so it does not land beside one.
  @tag timeout: 300_000
  test "runaways started after a sleeping script do not hold it" do
    # Runaways of earlier tests (containment_test's run for tens of
    # seconds) would leave no idle thread to place these on. A frozen
    # script holds its thread for good: those stay hogged.
    await_no_runaways()

    test = self()
    ready = fn _ -> send(test, :asleep_next) && {:ok, ""} end
    sleeper = Session.new(builtins: %{"ready" => ready})
    waiting = Task.async(fn -> Session.exec(sleeper, "ready; sleep 0.3; echo awake") end)
    assert_receive :asleep_next

    # Seconds each, and longer together on two cores. In a VM that just
    # started (4 threads) round robin put one of these beside the sleeper;
    # a pool grown by earlier tests may have more threads than runaways.
    hog = "[[ " <> Enum.join(List.duplicate("a", 25_000), " && ") <> " ]]"

    hogs =
      for _ <- 1..4 do
        session = Session.new(limits: [timeout_ms: 120_000])
        Task.async(fn -> Session.exec(session, hog) end)
      end

    # Ten times its sleep.
    assert {:ok, %Result{stdout: "awake\n"}} = Task.await(waiting, 3_000)
    # The runaways end by themselves; later tests get the threads back.
    for task <- hogs, do: assert({:ok, _} = Task.await(task, 120_000))
  end
end
