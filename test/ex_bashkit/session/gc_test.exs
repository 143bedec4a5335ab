defmodule ExBashkit.GCTest do
  # Counts live interpreters in the NIF, so it must not share the VM's
  # session count with async tests.
  use ExBashkit.Case, async: false

  alias ExBashkit.Native
  alias ExBashkit.Test.Memory

  @moduletag timeout: 300_000

  test "10,000 sessions created and dropped are freed by garbage collection" do
    baseline = Native.live_sessions()
    rss_before = Memory.rss_kb()

    for round <- 1..10 do
      # Sessions live only in this short-lived process; its exit frees them.
      task =
        Task.async(fn ->
          sessions = for _ <- 1..1_000, do: Session.new(files: %{"/f" => "round #{round}"})
          {:ok, _} = Session.exec(List.last(sessions), "cat /f")
          live = Native.live_sessions()
          # Referenced until counted: a list used last above is dead to
          # the compiler, and a collection during exec would free it.
          {live, length(sessions)}
        end)

      # At least these 1,000 are alive while referenced. (Not baseline +
      # 1,000: sessions an earlier module left running may be freed
      # meanwhile, as a runaway of containment_test ends.)
      assert {live, 1_000} = Task.await(task, 60_000)
      assert live >= 1_000
    end

    :erlang.garbage_collect()
    assert wait_until(fn -> Native.live_sessions() <= baseline end)
    # Freed interpreters return their memory; allow for allocator slack.
    assert Memory.rss_kb() - rss_before < 200_000
  end

  test "a session dropped while its script runs is freed when the script ends" do
    baseline = Native.live_sessions()
    test = self()

    spawn(fn ->
      session = Session.new()
      send(test, :created)
      Session.exec(session, "sleep 0.2")
      send(test, :ran)
    end)

    assert_receive :created
    assert_receive :ran
    assert wait_until(fn -> Native.live_sessions() <= baseline end)
  end
end
