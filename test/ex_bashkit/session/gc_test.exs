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

  test "the library's memory asks for no huge pages, and leaves the VM's own setting alone" do
    # With huge pages, each first touch of a session's few kilobytes had the
    # kernel zero 2 MiB. The library stops asking for them for its own
    # memory only (crates/core/tests/pages.rs checks its mappings): the
    # switch for the whole process is the host's.
    sessions = for _ <- 1..1_000, do: Session.new(files: %{"/f" => "x"})
    for session <- Enum.take(sessions, 200), do: {:ok, _} = Session.exec(session, "cat /f")

    status = File.read!("/proc/self/status")

    case Regex.run(~r/^THP_enabled:\s+(\d)/m, status, capture: :all_but_first) do
      nil -> :ok
      [enabled] -> assert enabled == "1"
    end

    assert length(sessions) == 1_000
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
