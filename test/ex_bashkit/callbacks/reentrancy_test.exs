defmodule ExBashkit.ReentrancyTest do
  # Not async: it asserts that 200 scripts, each waiting on a builtin that
  # drives another session, all finish within their 30 s. A script that
  # computes without yielding holds every script parked on its thread
  # (documented in guides/how_scripts_run.md), and with 400 scripts at
  # once every thread has some: a CPU-heavy script of a concurrent test
  # would land beside them, and at idle priority on a loaded machine it
  # held one of these past its deadline (seen once in a loaded pair).
  use ExBashkit.Case, async: false

  @moduletag timeout: 300_000

  test "200 sessions whose builtin drives another session all finish" do
    await_no_runaways()

    tasks =
      for i <- 1..200 do
        Task.async(fn ->
          backend = Session.new(files: %{"/value" => "7"})

          session =
            Session.new(
              builtins: %{
                "lookup" => fn _ ->
                  {:ok, result} = Session.exec(backend, "sleep 0.2; cat /value")
                  {:ok, result.stdout}
                end
              }
            )

          Session.exec(session, "echo $(( $(lookup) * #{i} ))")
        end)
      end

    results = Task.await_many(tasks, 60_000)
    assert Enum.map(results, fn {:ok, r} -> r.stdout end) == Enum.map(1..200, &"#{7 * &1}\n")
  end
end
