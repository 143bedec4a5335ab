defmodule ExBashkit.CallbackLeakTest do
  # Counts every process in the VM, so it runs alone (async: false modules
  # run after all async ones).
  use ExBashkit.Case, async: false

  @moduletag timeout: 120_000

  # Peer VMs booting in the background (spares of the pool, started by the
  # async Peer tests) come and go with processes of their own.
  setup do
    if Process.whereis(ExBashkit.Peer.Pool) do
      assert wait_until(fn -> ExBashkit.Peer.Pool.info().booting == 0 end, 3_000)
    end

    :ok
  end

  test "1,000 timed-out callbacks leave the process count where it was" do
    session =
      Session.new(
        builtin_timeout_ms: 1,
        builtins: %{"hang" => fn _ -> Process.sleep(:infinity) end}
      )

    Session.exec(session, "true")
    before = length(Process.list())

    assert {:ok, %Result{stdout: "124\n"}} =
             Session.exec(session, "for i in $(seq 1000); do hang; done; echo $?")

    assert length(Process.list()) <= before
  end

  test "a script timeout and a killed caller leave no process behind" do
    session =
      Session.new(
        limits: [timeout_ms: 100],
        builtins: %{"hang" => fn _ -> Process.sleep(:infinity) end}
      )

    before = length(Process.list())

    for _ <- 1..20 do
      assert {:error, _} = Session.exec(session, "hang")
    end

    assert length(Process.list()) <= before

    caller = spawn(fn -> Session.exec(session, "hang") end)
    Process.sleep(50)
    Process.exit(caller, :kill)

    assert wait_until(fn -> length(Process.list()) <= before end)
  end
end
