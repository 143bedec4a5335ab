defmodule ExBashkit.ApprovalTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.{Error, Session}

  # A policy: no rm, no network tools, nothing analysis cannot see through.
  defp policy(%{opaque: true}), do: {:deny, "the script hides what it runs"}

  defp policy(%{commands: commands}) do
    case Enum.find(commands, &(&1.name in ["rm", "curl", "wget"])) do
      nil -> :ok
      %{name: name} -> {:deny, "#{name} is not allowed"}
    end
  end

  describe "a denied script" do
    test "runs nothing, not even the lines before the denied command" do
      session = Session.new(approve: &policy/1)

      assert {:error, "denied: rm is not allowed"} =
               Session.exec(session, "echo first > /f; x=1; rm -rf /f")

      assert {:ok, %Result{exit_code: 1}} = Session.exec(session, "cat /f")
      assert %Result{stdout: "\n"} = run(session, "echo $x")
    end

    test "is an ExBashkit.Error with reason :denied for errors: :struct" do
      session = Session.new(approve: &policy/1)

      assert {:error, %Error{reason: :denied, message: "denied: curl is not allowed"}} =
               Session.exec(session, "curl http://example.com", errors: :struct)
    end

    test "a command in a substitution or a function body is seen" do
      session = Session.new(approve: &policy/1)
      assert {:error, "denied: rm" <> _} = Session.exec(session, "echo $(rm -rf /)")
      assert {:error, "denied: rm" <> _} = Session.exec(session, "f() { rm /x; }; echo hi")
    end

    test "opaque scripts can be refused: eval, source, a command built at run time" do
      session = Session.new(approve: &policy/1)

      for script <- [~S|eval "$cmd"|, "source /tmp/x", ~S|c=rm; $c -rf /|] do
        assert {:error, "denied: the script hides what it runs"} = Session.exec(session, script)
      end
    end
  end

  test "an approved script runs, and the function sees the script and its commands" do
    test = self()

    session =
      Session.new(
        approve: fn request ->
          send(test, {:asked, request})
          :ok
        end
      )

    assert %Result{stdout: "2\n"} = run(session, "echo a b | wc -w > /n; cat /n")
    assert_received {:asked, request}
    assert request.script == "echo a b | wc -w > /n; cat /n"
    assert Enum.map(request.commands, & &1.name) == ["echo", "wc", "cat"]
    assert request.redirects == [%{path: "/n", mode: :write}]
    refute request.opaque
  end

  test "a script that does not parse reaches the function, with its error" do
    session =
      Session.new(
        approve: fn %{error: error, opaque: true} -> {:deny, "unparsable: #{error}"} end
      )

    assert {:error, "denied: unparsable: parse error" <> _} = Session.exec(session, "if then fi")
  end

  describe "per call" do
    test ":approve on a call wins, and approve: nil turns the session's off" do
      session = Session.new(approve: &policy/1)
      assert {:ok, %Result{exit_code: 0}} = Session.exec(session, "touch /t; rm /t", approve: nil)

      deny_all = fn _ -> {:deny, "read-only hour"} end

      assert {:error, "denied: read-only hour"} =
               Session.exec(session, "echo hi", approve: deny_all)

      plain = Session.new()

      assert {:error, "denied: read-only hour"} =
               Session.exec(plain, "echo hi", approve: deny_all)
    end
  end

  describe "a function that fails denies, saying why" do
    test "raising, exiting, or answering something else" do
      for {fun, why} <- [
            {fn _ -> raise "boom" end, "failed: ** (RuntimeError) boom"},
            {fn _ -> exit(:gone) end, "failed: ** (exit) :gone"},
            {fn _ -> :yes end, "answered :yes, not :ok or {:deny, reason}"}
          ] do
        session = Session.new(approve: fun)

        assert {:error, "denied: the approve function " <> message} =
                 Session.exec(session, "echo")

        assert message =~ why
      end
    end

    test "taking longer than :builtin_timeout_ms" do
      session =
        Session.new(approve: fn _ -> Process.sleep(:infinity) end, builtin_timeout_ms: 100)

      assert {:error, "denied: the approve function did not answer within 100 ms" <> _} =
               Session.exec(session, "echo")
    end
  end

  test "the function runs with the caller in $callers, as a Task would" do
    test = self()

    session =
      Session.new(approve: fn _ -> send(test, {:callers, Process.get(:"$callers")}) && :ok end)

    run(session, "true")
    assert_received {:callers, [^test | _]}
  end

  test "works the same on a session in a worker process" do
    session = Session.new(isolation: :process, approve: &policy/1)
    assert {:error, "denied: rm is not allowed"} = Session.exec(session, "echo x > /f; rm /f")
    assert %Result{exit_code: 1} = run(session, "cat /f")
  end

  test "bad values are ArgumentErrors naming :approve" do
    assert_raise ArgumentError, ~r/:approve must be a 1-arity function/, fn ->
      Session.new(approve: fn -> :ok end)
    end

    assert_raise ArgumentError, ~r/:approve must be a 1-arity function/, fn ->
      Session.exec(Session.new(), "echo", approve: :yes)
    end
  end

  test "analyze/1 refuses deep nesting instead of overflowing a stack" do
    deep = String.duplicate("time ", 30_000) <> "true"
    assert {:error, message} = ExBashkit.analyze(deep)
    assert message =~ "nest"
    assert {:error, _} = ExBashkit.analyze(String.duplicate("(", 100_000))
  end

  test "analyze/1: an oversized script or one that is not UTF-8 is refused" do
    assert {:error, message} = ExBashkit.analyze(String.duplicate("x", 10_000_001))
    assert message =~ "max_input_bytes"
    assert {:error, message} = ExBashkit.analyze(<<"echo ", 0xFF>>)
    assert message =~ "UTF-8"
  end

  test "analyze/1 from many callers at once: each gets its own answer, nothing is left behind" do
    answers =
      1..50
      |> Enum.map(fn n -> Task.async(fn -> {n, ExBashkit.analyze("cmd#{n} arg")} end) end)
      |> Task.await_many(60_000)

    for {n, answer} <- answers do
      assert {:ok, %{commands: [command]}} = answer
      assert command.name == "cmd#{n}"
    end

    for _ <- 1..200, do: {:ok, _} = ExBashkit.analyze("echo $((1 + 2)) | wc -c")
    assert {:messages, []} = Process.info(self(), :messages)
  end
end
