defmodule ExBashkit.CallbacksTest do
  # ExBashkit.Callbacks on its own terms: where its processes live, what a
  # callback's process has recorded, and what crosses back into the
  # interpreter. (What scripts see of builtins and virtual_fs backends is
  # in builtins_test.exs, virtual_fs_test.exs and callbacks/leak_test.exs.)
  # Not async: one test changes the application's :max_reply_bytes.
  use ExBashkit.Case, async: false

  alias ExBashkit.Callbacks

  # A session whose builtin `where` tells the test which process runs it.
  defp reporting_session do
    test = self()

    Session.new(
      builtins: %{
        "where" => fn _ ->
          runner = self()
          chain = :ets.lookup(ExBashkit.Callbacks.Chains, runner)
          send(test, {:runner, runner, chain})
          {:ok, "here\n"}
        end
      }
    )
  end

  test "a callback runs linked to a server under ExBashkit.Callbacks.Supervisor" do
    session = reporting_session()
    test = self()

    assert {:ok, %Result{stdout: "here\n"}} = Session.exec(session, "where")
    assert_received {:runner, runner, _chain}
    refute Process.alive?(runner)

    # While the builtin runs, its process is linked to the server, and the
    # server is a child of the partition of the supervisor this caller maps to.
    session =
      Session.new(
        builtins: %{
          "links" => fn _ ->
            send(test, {:links, Process.info(self(), :links)})
            {:ok, ""}
          end
        }
      )

    supervisor = GenServer.whereis(ExBashkit.Callbacks.Supervisor.for_caller(test))

    :erlang.trace(supervisor, true, [:procs, {:tracer, test}])

    try do
      assert {:ok, _} = Session.exec(session, "links")
    after
      :erlang.trace(supervisor, false, [:procs])
    end

    assert_received {:trace, ^supervisor, :spawn, server, _}
    assert_received {:links, {:links, [^server]}}
    refute Process.alive?(server), "the server ends with the script"
  end

  test "a callback's process has its chain recorded: the session waiting on it, until it ends" do
    session = reporting_session()
    assert {:ok, _} = Session.exec(session, "where")
    assert_received {:runner, runner, [{runner, [waiting]}]}
    assert waiting == session.resource
    assert :ets.lookup(ExBashkit.Callbacks.Chains, runner) == []
  end

  test "a nested callback's chain holds every session waiting, innermost last" do
    inner = reporting_session()

    outer =
      Session.new(
        builtins: %{
          "ask" => fn _ ->
            {:ok, result} = Session.exec(inner, "where")
            {:ok, result.stdout}
          end
        }
      )

    assert {:ok, %Result{stdout: "here\n"}} = Session.exec(outer, "ask")
    assert_received {:runner, _runner, [{_, chain}]}
    assert chain == [outer.resource, inner.resource]
    refute_received {:runner, _, _}
  end

  test "a script that calls nothing starts no server" do
    session = reporting_session()

    supervisor = GenServer.whereis(ExBashkit.Callbacks.Supervisor.for_caller(self()))

    before = Task.Supervisor.children(supervisor)
    assert {:ok, _} = Session.exec(session, "echo quiet")
    assert Task.Supervisor.children(supervisor) -- before == []
  end

  test "the chains' table outlives anything sent to its owner" do
    owner = Process.whereis(ExBashkit.Callbacks.Chains)
    send(owner, {:DOWN, make_ref(), :process, self(), :normal})
    send(owner, {:EXIT, self(), :kill})
    GenServer.cast(owner, :junk)
    assert GenServer.call(owner, :junk) == {:error, :unsupported}

    assert Process.whereis(ExBashkit.Callbacks.Chains) == owner
    assert {:ok, %Result{stdout: "here\n"}} = Session.exec(reporting_session(), "where")
    assert_received {:runner, runner, [{runner, [_waiting]}]}
  end

  describe "replies" do
    test "the cap on a reply comes from config, and fails closed" do
      previous = Application.fetch_env(:ex_bashkit, :max_reply_bytes)

      try do
        Application.put_env(:ex_bashkit, :max_reply_bytes, 10)
        assert Callbacks.max_reply_bytes() == 10

        for malformed <- [0, -1, "big", nil] do
          Application.put_env(:ex_bashkit, :max_reply_bytes, malformed)
          assert Callbacks.max_reply_bytes() == 16_000_000
        end
      after
        case previous do
          {:ok, value} -> Application.put_env(:ex_bashkit, :max_reply_bytes, value)
          :error -> Application.delete_env(:ex_bashkit, :max_reply_bytes)
        end
      end
    end

    test "text is cut on a character boundary" do
      assert Callbacks.truncate("short", 10) == "short"
      assert Callbacks.truncate("héllo", 2) == "h"
      assert Callbacks.truncate("héllo", 3) == "hé"
      assert Callbacks.truncate(<<"ab", 0xFF, "cd">>, 4) == "ab"
    end
  end
end
