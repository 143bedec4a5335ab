defmodule ExBashkit.ScriptMemoryTest do
  # What a script's memory costs the VM, measured as the VM's resident set.
  # Each test runs in a VM of its own (ChildVM.eval!/1): in the suite's VM,
  # runaways left by other tests (ContainmentTest's compute for seconds
  # after their tests end, at idle priority) allocate too, and their memory
  # was once counted as the script's.
  use ExBashkit.Case, async: true

  alias ExBashkit.Result
  alias ExBashkit.Test.ChildVM

  @mib 1_048_576

  # What the child VMs' code starts with: the aliases it uses, and
  # ExBashkit.Case's wait_until/2.
  @prelude """
  alias ExBashkit.{Session, Test.Memory}
  import ExBashkit.Case, only: [wait_until: 2]
  """

  defp measure(code), do: ChildVM.eval!(@prelude <> code)

  @tag timeout: 120_000
  test "what a large parse allocated is returned once it is over" do
    # 940 KB, under the 1 MB cap, parsed on the blocking pool: about 165 MB
    # at its peak. Kept at about +160 MB before blocking threads retired
    # and returned it.
    observed =
      measure("""
      before = Memory.rss_kb()
      script = "a=(" <> Enum.join(1..150_000, " ") <> "); echo ${#a[@]}"
      session = Session.new(limits: [max_memory_bytes: 100_000_000])
      {:ok, parsed} = Session.exec(session, script)
      {:ok, unset} = Session.exec(session, "unset a; echo ${#a[@]}")
      # An interpreter thread hands back what a large free left once it
      # has had no work for a second (runtime.rs, COLLECT_WHEN_IDLE_FOR).
      back? = wait_until(fn -> Memory.rss_kb() - before < 90_000 end, 10_000)
      %{parsed: parsed, unset: unset, back?: back?, resident_kb: Memory.rss_kb() - before}
      """)

    assert %Result{exit_code: 0} = observed.parsed
    assert %Result{stdout: "0\n"} = observed.unset
    assert observed.back?, "#{observed.resident_kb} KB still resident"
  end

  @tag timeout: 120_000
  test "past :max_script_memory_bytes the script is stopped and the session goes on" do
    observed =
      measure("""
      session =
        Session.new(limits: [max_script_memory_bytes: #{64 * @mib}, max_memory_bytes: 1_000_000_000])

      {outcome, growth_kb} =
        Memory.peak_growth_kb(fn -> Session.exec(session, "x=a; while true; do x=$x$x; done") end)

      %{outcome: outcome, growth_kb: growth_kb, after: Session.exec(session, "echo ok")}
      """)

    assert {:error, message} = observed.outcome
    assert message =~ "more than #{64 * @mib} bytes (limit :max_script_memory_bytes)"
    # Net of what it freed, the script held at most its cap; the copies
    # doubling makes and what the allocator keeps cached come on top.
    assert observed.growth_kb < 3 * 64 * 1024, "grew #{observed.growth_kb} KB"
    assert {:ok, %Result{stdout: "ok\n"}} = observed.after
  end

  @tag timeout: 120_000
  test "what background jobs allocate is charged to the script that started them" do
    # 300 jobs of ~590 KB output each: bashkit gathers their output
    # whatever the output caps.
    observed =
      measure("""
      session =
        Session.new(limits: [max_script_memory_bytes: #{32 * @mib}, max_background_jobs: 1000])

      script = "for i in $(seq 300); do seq 100000 & done; wait"
      {outcome, growth_kb} = Memory.peak_growth_kb(fn -> Session.exec(session, script) end)

      %{
        outcome: outcome,
        growth_kb: growth_kb,
        jobs: Session.exec(session, "jobs"),
        after: Session.exec(session, "echo ok")
      }
      """)

    assert {:error, message} = observed.outcome
    assert message =~ "limit :max_script_memory_bytes"
    assert observed.growth_kb < 3 * 32 * 1024, "grew #{observed.growth_kb} KB"
    assert {:ok, %Result{stdout: ""}} = observed.jobs
    assert {:ok, %Result{stdout: "ok\n"}} = observed.after
  end

  # jq builds its whole result without reaching a next command, so it
  # cannot see a cancellation: it is frozen.
  @tag timeout: 120_000
  test "work that cannot be interrupted is frozen: its caller is answered at once" do
    observed =
      measure("""
      session = Session.new(limits: [max_script_memory_bytes: #{32 * @mib}])
      before = ExBashkit.stats()
      jq = "jq -n 'reduce range(100000) as $i (null; [.])' > /dev/null"
      {outcome, growth_kb} = Memory.peak_growth_kb(fn -> Session.exec(session, jq) end)

      %{
        outcome: outcome,
        growth_kb: growth_kb,
        before: before,
        stats: ExBashkit.stats(),
        refused_exec: Session.exec(session, "echo hi"),
        refused_snapshot: Session.snapshot(session),
        others: Session.exec(Session.new(), "echo hi")
      }
      """)

    assert {:error, message} = observed.outcome
    assert message =~ "#{32 * @mib} bytes"
    assert message =~ "(limit :max_script_memory_bytes)"
    assert message =~ "frozen"
    # Frozen at twice its cap; jq's doubling reallocations leave the old
    # buffers in the allocator's cache on top.
    assert observed.growth_kb < 6 * 32 * 1024, "grew #{observed.growth_kb} KB"

    assert observed.stats.frozen_scripts == observed.before.frozen_scripts + 1
    # What it holds counts its stack (jq recurses once per level). The
    # stack is measured at allocations, and a recursion that frees only
    # (dropping a nested value) goes deeper between two of them.
    held = observed.stats.frozen_bytes - observed.before.frozen_bytes
    assert held > 32 * @mib and held <= 3 * 32 * @mib, "held #{held} bytes"

    # The session refuses work at once instead of queueing it forever.
    assert {:error, refused} = observed.refused_exec
    assert refused =~ "can run no more scripts"
    assert {:error, refused} = observed.refused_snapshot
    assert refused =~ "can run no more scripts"
    # Everyone else goes on.
    assert {:ok, %Result{stdout: "hi\n"}} = observed.others
  end

  # `eval` nested 10,000 deep: each level parses the rest again on the
  # blocking pool and holds its syntax tree. This once held gigabytes,
  # charged to nobody, and left them resident.
  @tag timeout: 120_000
  test "deep eval at once in several sessions stays within each cap, and is given back" do
    four_within_cap_then_given_back(String.duplicate("eval ", 10_000) <> "echo hi", 32 * @mib)
  end

  # Its stack and the syntax trees of its parses count; the message names
  # whichever took more (tests/memory.rs checks the stack alone).
  @tag timeout: 120_000
  test "recursion deep on the stack is charged to the cap, and the stack is given back" do
    four_within_cap_then_given_back(~S|e='eval "$e"'; eval "$e"|, 16 * @mib)
  end

  @tag timeout: 120_000
  test "over the VM-wide budget a growing script is stopped, naming the setting" do
    observed =
      measure("""
      ExBashkit.Native.set_memory_budget(ExBashkit.stats().live_bytes + #{48 * @mib})
      session = Session.new(limits: [max_memory_bytes: 1_000_000_000])
      outcome = Session.exec(session, "x=a; while true; do x=$x$x; done")
      ExBashkit.Native.set_memory_budget(nil)
      %{outcome: outcome, after: Session.exec(session, "echo ok")}
      """)

    assert {:error, message} = observed.outcome
    assert message =~ "(config :ex_bashkit, :memory_budget_bytes)"
    assert {:ok, %Result{stdout: "ok\n"}} = observed.after
  end

  # Runs `script` four times at once under a `cap` of memory: each is
  # stopped naming the limit, the VM grows by at most the four caps and
  # the allocator's cache of what was freed, and gives it all back after.
  defp four_within_cap_then_given_back(script, cap) do
    observed =
      measure("""
      script = #{inspect(script, limit: :infinity, printable_limit: :infinity)}
      before = Memory.rss_kb()
      live = ExBashkit.stats().live_bytes
      limits = [max_script_memory_bytes: #{cap}, timeout_ms: 30_000]

      {outcomes, growth_kb} =
        Memory.peak_growth_kb(fn ->
          1..4
          |> Enum.map(fn _ -> Task.async(fn -> ExBashkit.exec(script, limits: limits) end) end)
          |> Task.await_many(40_000)
        end)

      # A parse already under way when its script stopped runs to its end
      # on the blocking pool; then everything is given back.
      live_back? =
        wait_until(fn -> ExBashkit.stats().live_bytes - live < #{16 * @mib} end, 1_000)

      # After a second without work (runtime.rs, COLLECT_WHEN_IDLE_FOR).
      resident_back? = wait_until(fn -> Memory.rss_kb() - before < 64 * 1024 end, 10_000)

      %{
        outcomes: outcomes,
        growth_kb: growth_kb,
        live_back?: live_back?,
        resident_back?: resident_back?,
        resident_kb: Memory.rss_kb() - before
      }
      """)

    for outcome <- observed.outcomes do
      assert {:error, message} = outcome
      assert message =~ "(limit :max_script_memory_bytes)"
    end

    assert observed.growth_kb < 4 * 3 * div(cap, 1024), "grew #{observed.growth_kb} KB"
    assert observed.live_back?
    assert observed.resident_back?, "#{observed.resident_kb} KB still resident"
  end
end
