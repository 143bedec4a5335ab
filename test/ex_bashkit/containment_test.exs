defmodule ExBashkit.ContainmentTest do
  # A hostile script ends on time for its caller and leaves its session
  # usable. (No assertion on elapsed time: a test that would wait for the
  # runaway itself fails on its own ExUnit timeout instead.)
  #
  # Not async: a runaway keeps its interpreter thread after its test ends,
  # and other tests must not share it. The module waits, when it ends,
  # until every runaway is over.
  use ExBashkit.Case, async: false

  alias ExBashkit.Error

  # For the module's exit, which waits for the runaways.
  @moduletag timeout: 120_000

  # `[[ a && a && … ]]` is evaluated without yielding to the runtime, so
  # bashkit's own timeout cannot fire inside it: 30,000 terms keep an
  # interpreter thread busy for several seconds here (hog_session/2).
  @hog "touch /started; " <> hog_command()
  @hog_script "[[ " <> Enum.join(List.duplicate("a", 30_000), " && ") <> " ]]"

  # The module's own budget bounds the wait for its runaways at the end:
  # a dozen of them, each seconds of CPU at idle priority on two cores.
  @moduletag timeout: 300_000

  setup_all do
    {:ok, runaways} = Agent.start(fn -> [] end)

    # Runaways end by themselves: wait for them, so that the modules after
    # this one get their threads back, within ExUnit's 60 s for an on_exit
    # (a dozen runaways take seconds of CPU each at idle priority).
    on_exit(fn ->
      until = System.monotonic_time(:millisecond) + 50_000
      over? = fn -> System.monotonic_time(:millisecond) > until end

      for session <- Agent.get(runaways, & &1) do
        wait_until(
          fn ->
            over?.() or match?({:ok, _}, Session.exec(session, "true", timeout_ms: 1_000))
          end,
          100_000
        )
      end

      Agent.stop(runaways)
    end)

    %{runaways: runaways}
  end

  # A session for a runaway, waited for when the module ends.
  defp runaway_session(%{runaways: runaways}, terms \\ 30_000) do
    session = hog_session([], terms)
    Agent.update(runaways, &[session | &1])
    session
  end

  defp wait_until_started(session) do
    wait_until(fn -> match?({:ok, _}, Session.stat(session, "/started")) end, 1_000)
  end

  describe "a script that does not stop at its deadline" do
    # 10x the expected 1.5 s: the bound is the behaviour.
    @tag timeout: 15_000
    test "its caller is answered after timeout_ms plus a margin, saying so", ctx do
      session = runaway_session(ctx)

      assert {:error, message} = Session.exec(session, @hog, timeout_ms: 1_000)
      # The script did not stop at its deadline, or (when another test's
      # runaway holds the thread it was given) had not started by then.
      assert message =~
               ~r/timed out after 1000 ms \(limit :timeout_ms\): .*(did not stop at its deadline|before the script started)/
    end

    @tag timeout: 10_000
    test "its caller gets what it printed before the deadline", ctx do
      session = runaway_session(ctx)
      hog = String.replace_prefix(@hog, "touch /started;", "touch /started; echo part;")

      assert {:error, %Error{reason: :timeout, stdout: "part\n", message: message}} =
               Session.exec(session, hog, timeout_ms: 1_000, errors: :struct)

      assert message =~ "did not stop at its deadline"
    end

    # The script queued behind the runaway has 100 ms; the runaway is
    # answered at its own deadline. 10x the expected 1.5 s.
    @tag timeout: 15_000
    test "a script queued behind it is answered too, and says why", ctx do
      session = runaway_session(ctx)
      hog = Task.async(fn -> Session.exec(session, @hog, timeout_ms: 1_000) end)
      wait_until_started(session)

      assert {:error, message} = Session.exec(session, "echo queued", timeout_ms: 100)
      assert message =~ "waiting for the session: an earlier script is still running"
      assert {:error, _} = Task.await(hog, 15_000)
    end

    # Waits out a runaway, sharing the cores with earlier tests' ones. A
    # runaway computes at idle priority (SCHED_IDLE), so beside a second
    # suite it gets the cores only when nothing else wants them: a smaller
    # one than the module's others, which once was not done in 300 s. It
    # must still outlast its caller's wait (100 ms and a 500 ms margin)
    # on a fast, idle machine: 25,000 terms took 1.27 s alone on the
    # development machine on a day its 15,000 took 0.44 s (their cost
    # grows with the square of the count), and then the script answered
    # {:ok, _} before the wait ran out.
    test "the session works again once the runaway ends", ctx do
      session = runaway_session(ctx, 25_000)
      assert {:error, _} = Session.exec(session, @hog, timeout_ms: 100)

      assert wait_until(
               fn ->
                 match?({:ok, %Result{stdout: "back\n"}}, Session.exec(session, "echo back"))
               end,
               1_000
             )
    end
  end

  describe "a runaway stalls nobody else" do
    # The hogs run for longer than the test may take, together.
    @tag timeout: 30_000
    test "new sessions keep answering while every interpreter thread is hogged", ctx do
      %{threads: threads} = ExBashkit.stats()
      hogs = hog_every_thread(ctx, threads, [])

      # Each would wait seconds for a hog if it were given a hogged thread.
      for _ <- 1..20 do
        assert %Result{stdout: "hi\n"} = run(Session.new(), "echo hi")
      end

      %{threads: grown} = ExBashkit.stats()
      assert grown > threads
      # Their callers go; the hogs finish on their own.
      Enum.each(hogs, &Task.shutdown(&1, :brutal_kill))
    end
  end

  # One hog per thread, and one more while some thread is still not hogged:
  # with other tests' scripts arriving meanwhile, two hogs can share a
  # thread (a tally run on an idle machine saw it once).
  defp hog_every_thread(ctx, threads, hogs) when length(hogs) < 4 * threads do
    # A script holding the work itself: no deadline here to race its parse,
    # and restoring hog_session/2's function on hogged threads is slow.
    session = Session.new(limits: [timeout_ms: 60_000])
    Agent.update(ctx.runaways, &[session | &1])
    hogs = [Task.async(fn -> Session.exec(session, @hog_script) end) | hogs]

    cond do
      length(hogs) < threads -> hog_every_thread(ctx, threads, hogs)
      wait_until(fn -> all_hogged?() end, 100) -> hogs
      true -> hog_every_thread(ctx, threads, hogs)
    end
  end

  defp hog_every_thread(_ctx, threads, hogs),
    do: flunk("#{length(hogs)} hogs did not hog every thread (#{threads} at the start)")

  defp all_hogged? do
    %{hogged: hogged, threads: threads} = ExBashkit.stats()
    hogged >= threads
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

      # With stderr sent away, the failed script prints nothing at all.
      for script <- [
            ~S|f() { set -u;$P"${}"; }; f 2>/dev/null|,
            ~S|exec 2>/dev/null; set -u;$P"${}"|
          ] do
        assert %Result{stderr: ""} = run(session, script)
        assert %Result{stdout: "alive\n", stderr: ""} = run(session, "echo alive")
      end
    end
  end
end
