defmodule ExBashkit.ContainmentTest do
  # A hostile script ends on time for its caller and leaves its session
  # usable. (No assertion on elapsed time: a test that would wait for the
  # runaway itself fails on its own ExUnit timeout instead.)
  use ExBashkit.Case, async: true

  # `[[ a && a && … ]]` is evaluated without yielding to the runtime, so
  # bashkit's own timeout cannot fire inside it: 30,000 terms keep an
  # interpreter thread busy for several seconds here.
  @hog "[[ " <> Enum.join(List.duplicate("a", 30_000), " && ") <> " ]]"

  describe "a script that does not stop at its deadline" do
    @tag timeout: 3_000
    test "its caller is answered after timeout_ms plus a margin, saying so" do
      session = Session.new(limits: [timeout_ms: 100])

      assert {:error, message} = Session.exec(session, @hog)
      assert message =~ "timed out after 100 ms (limit :timeout_ms)"
      assert message =~ "did not stop at its deadline"
    end

    @tag timeout: 3_000
    test "a script queued behind it is answered too, and says why" do
      session = Session.new(limits: [timeout_ms: 100])
      hog = Task.async(fn -> Session.exec(session, @hog) end)
      wait_until(fn -> match?({:ok, _}, Session.stat(session, "/")) end)
      Process.sleep(20)

      assert {:error, message} = Session.exec(session, "echo queued")
      assert message =~ "waiting for the session: an earlier script is still running"
      assert {:error, _} = Task.await(hog)
    end

    @tag timeout: 30_000
    test "the session works again once the runaway ends" do
      session = Session.new(limits: [timeout_ms: 100])
      assert {:error, _} = Session.exec(session, @hog)

      assert wait_until(
               fn ->
                 match?({:ok, %Result{stdout: "back\n"}}, Session.exec(session, "echo back"))
               end,
               100
             )
    end
  end

  describe "the session stays usable" do
    @tag timeout: 10_000
    test "background jobs left running by a timed-out script are killed" do
      session = Session.new(limits: [timeout_ms: 300])

      assert {:error, message} = Session.exec(session, "sleep 100000 &")
      assert message =~ "timeout_ms"
      assert %Result{stdout: "next\n"} = run(session, "echo next")
      assert %Result{stdout: ""} = run(session, "jobs")
    end

    @tag timeout: 10_000
    test "a script dropped with its caller is tidied up before the next one" do
      session = Session.new(limits: [timeout_ms: 2_000])

      caller =
        spawn(fn -> Session.exec(session, "touch /started; sleep 100000 & sleep 100000") end)

      wait_until(fn -> match?({:ok, _}, Session.stat(session, "/started")) end)
      Process.exit(caller, :kill)

      assert %Result{stdout: "next\n"} = run(session, "echo next")
    end

    test "a failed expansion does not leak into the next script" do
      session = Session.new()

      assert %Result{exit_code: 1, stderr: stderr} = run(session, ~S|set -u;$P"${}"|)
      assert stderr =~ "bad substitution"
      assert %Result{stdout: "alive\n", stderr: ""} = run(session, "echo alive")
    end
  end
end
