defmodule ExBashkit.BuiltinsTest do
  use ExBashkit.Case, async: true

  @moduletag timeout: 120_000

  describe "return forms" do
    test "{:ok, iodata} is stdout with exit 0, {:error, iodata} stderr with exit 1" do
      session =
        Session.new(
          builtins: %{
            "ok" => fn _ -> {:ok, ["a", ?b, ["c\n"]]} end,
            "fail" => fn _ -> {:error, ["no ", "such key\n"]} end
          }
        )

      assert %Result{stdout: "abc\n0\n"} = run(session, "ok; echo $?")
      assert %Result{stdout: "1\n", stderr: "no such key\n"} = run(session, "fail; echo $?")
      assert %Result{stdout: "1\n"} = run(session, "fail 2>/dev/null && echo yes || echo 1")
    end

    test "%Result{} gives full control of stdout, stderr and the exit code" do
      session =
        Session.new(
          builtins: %{
            "custom" => fn _ -> %Result{stdout: "out", stderr: "err", exit_code: 42} end
          }
        )

      assert %Result{stdout: "out|42\n", stderr: "err"} = run(session, "custom; echo \"|$?\"")
    end

    test "output is raw bytes" do
      bytes = <<0, 255, 1, 128>>
      session = Session.new(builtins: %{"bin" => fn _ -> {:ok, bytes} end})

      {:ok, result} = Session.exec(session, "bin")
      assert result.stdout == bytes
    end

    test "the output of a builtin feeds pipelines and substitutions" do
      session = Session.new(builtins: %{"three" => fn _ -> {:ok, "c\nb\na\n"} end})
      assert %Result{stdout: "a\nb\nc\n"} = run(session, "three | sort")
      assert %Result{stdout: "3\n"} = run(session, "n=$(three | wc -l); echo $n")
    end
  end

  describe "what the function receives" do
    setup do
      test = self()

      session =
        Session.new(
          env: [GREETING: "hi"],
          cwd: "/start",
          builtins: %{
            "probe" => fn call ->
              send(test, {:call, call})
              {:ok, ""}
            end
          }
        )

      %{session: session}
    end

    test "args, with quoting and expansion done by the shell", %{session: session} do
      run(session, ~S|x="two words"; probe a "$x" '$x' ''|)
      assert_received {:call, %{args: ["a", "two words", "$x", ""]}}
    end

    test "stdin piped in, and empty without a pipe", %{session: session} do
      run(session, "printf 'line 1\\nline 2\\n' | probe")
      assert_received {:call, %{stdin: "line 1\nline 2\n"}}

      run(session, "probe")
      assert_received {:call, %{stdin: ""}}
    end

    test "the environment and the current directory at the time of the call", %{
      session: session
    } do
      run(session, "export LATER=yes; cd /tmp; probe")
      assert_received {:call, %{env: env, cwd: "/tmp"}}
      assert %{"GREETING" => "hi", "LATER" => "yes"} = env
    end
  end

  describe "failures fail one command and leave the session usable" do
    setup do
      session =
        Session.new(
          # Room for a loaded machine; only "sleeps" should reach it.
          builtin_timeout_ms: 1_000,
          builtins: %{
            "raises" => fn _ -> raise ArgumentError, "bad input" end,
            "divides" => fn call -> {:ok, "#{1 / length(call.args)}"} end,
            "exits" => fn _ -> exit(:shutdown) end,
            "throws" => fn _ -> throw(:ball) end,
            "returns_junk" => fn _ -> {:ok, :not_iodata} end,
            "returns_atom" => fn _ -> :what end,
            "bad_result" => fn _ -> %Result{stdout: "x", exit_code: 999} end,
            "kills_itself" => fn _ -> Process.exit(self(), :kill) end,
            "linked_crash" => fn _ ->
              spawn_link(fn -> exit(:linked_boom) end)
              Process.sleep(1_000)
            end,
            "sleeps" => fn _ -> Process.sleep(10_000) end
          }
        )

      Session.exec(session, "marker=alive")
      %{session: session}
    end

    for {name, code, stderr} <- [
          {"raises", 1, "raises: raised ArgumentError: bad input"},
          {"divides", 1,
           "divides: raised ArithmeticError: bad argument in arithmetic expression"},
          {"exits", 1, "exits: exited: :shutdown"},
          {"throws", 1, "throws: threw :ball"},
          {"returns_junk", 1, "returns_junk: the builtin returned {:ok, :not_iodata}"},
          {"returns_atom", 1, "returns_atom: the builtin returned :what"},
          {"bad_result", 1, "bad_result: the builtin returned exit code 999, outside 0..255"},
          {"kills_itself", 1, "kills_itself: the callback process stopped: it exited: :killed"},
          {"linked_crash", 1,
           "linked_crash: the callback process stopped: it exited: :linked_boom"},
          {"sleeps", 124, "sleeps: timed out after 1000 ms"}
        ] do
      @name name
      @code code
      @stderr stderr

      test "#{name}", %{session: session} do
        result = run(session, "#{@name}; echo \"exit $?\"; echo $marker")

        assert result.stdout == "exit #{@code}\nalive\n"
        assert result.stderr =~ @stderr
      end
    end
  end

  describe "the callback server" do
    test "is started only by a script that calls back" do
      session = Session.new(builtins: %{"hi" => fn _ -> {:ok, "hi\n"} end})
      test = self()
      # Servers start under the partition of ExBashkit.Callbacks.Supervisor
      # that this caller maps to; other tests' servers may start there too,
      # so only spawns made for this caller (its owner) are relayed.
      supervisor = GenServer.whereis(ExBashkit.Callbacks.Supervisor.for_caller(test))

      relay = spawn_link(fn -> relay(test, &mentions?(&1, test)) end)
      :erlang.trace(supervisor, true, [:procs, {:tracer, relay}])

      assert {:ok, %Result{stdout: "quiet\n"}} = Session.exec(session, "echo quiet")
      refute_receive {:trace, _, :spawn, _, _}, 100

      assert {:ok, %Result{stdout: "hi\n"}} = Session.exec(session, "hi")
      assert_receive {:trace, ^supervisor, :spawn, _, _}
    after
      supervisor = GenServer.whereis(ExBashkit.Callbacks.Supervisor.for_caller(self()))

      :erlang.trace(supervisor, false, [:procs])
    end

    test "leaves nothing in the caller's mailbox, whatever the script's end" do
      builtins = %{
        "hi" => fn _ -> {:ok, "hi\n"} end,
        "hang" => fn _ -> Process.sleep(:infinity) end
      }

      session = Session.new(builtins: builtins, limits: [timeout_ms: 200])

      for script <- ["hi; hi", "hi; hang", "hang & hi; wait", "for i in 1 2 3; do hi; done"] do
        Session.exec(session, script)
        assert {:messages, []} = Process.info(self(), :messages), script
      end
    end

    test "calls made at once by background jobs all reach it" do
      slow = fn %{args: [word]} -> Process.sleep(20) && {:ok, word <> "\n"} end
      session = Session.new(builtins: %{"slow" => slow})
      script = "slow a & slow b & slow c & slow d; wait"

      for _ <- 1..5 do
        assert {:ok, %Result{stdout: out, exit_code: 0}} = Session.exec(session, script)
        assert out |> String.split() |> Enum.sort() == ~w(a b c d)
      end
    end
  end

  describe "reentrancy" do
    test "exec/2 on the same session from its builtin is an immediate error" do
      test = self()

      session =
        self_referencing(fn _call, session ->
          send(test, {:inner, Session.exec(session, "echo inner")})
          {:ok, "outer done\n"}
        end)

      # A deadlock would end in the builtin's 10 s timeout: the outer command
      # would fail with 124 and the inner call would never answer.
      result = Session.exec(session, "again")

      assert {:ok, %Result{stdout: "outer done\n"}} = result
      assert_received {:inner, {:error, message}}
      assert message =~ "from inside one of its own builtins"
    end

    test "a Task started by a builtin is refused the same way" do
      test = self()

      session =
        self_referencing(fn _call, session ->
          inner = Task.async(fn -> Session.exec(session, "echo inner") end) |> Task.await()
          send(test, {:inner, inner})
          {:ok, "done\n"}
        end)

      assert {:ok, %Result{stdout: "done\n"}} = Session.exec(session, "again")
      assert_received {:inner, {:error, "exec/2 was called on session" <> _}}
    end

    test "a builtin can drive a different session" do
      other = Session.new(env: [WHO: "other"])

      session =
        Session.new(
          builtins: %{
            "ask_other" => fn call ->
              {:ok, result} = Session.exec(other, "echo $WHO #{Enum.join(call.args, " ")}")
              {:ok, result.stdout}
            end
          }
        )

      assert %Result{stdout: "other says hi\n"} = run(session, "ask_other says hi")
    end
  end

  describe "cancellation" do
    test "a script timeout kills the running callback and leaves nothing behind" do
      test = self()

      # Long enough that a loaded machine surely reaches the callback before
      # the time is up: with 200 ms this test flaked rarely, and that was
      # the one step that depends on timing (the flake was not reproduced).
      session =
        Session.new(
          limits: [timeout_ms: 1_000],
          builtins: %{
            "hang" => fn _ ->
              send(test, {:callback, self()})
              Process.sleep(:infinity)
            end
          }
        )

      assert {:error, message} = Session.exec(session, "hang")
      assert message =~ "timeout"
      assert_received {:callback, runner}
      refute Process.alive?(runner)
      # The script itself is dropped on its interpreter thread, which a
      # neighbour's runaway may hold a moment longer on a loaded machine.
      assert wait_until(
               fn -> match?({:ok, %Result{stdout: "ok\n"}}, Session.exec(session, "echo ok")) end,
               5
             )
    end

    test "a caller that dies kills the running callback" do
      test = self()

      session =
        Session.new(
          builtins: %{
            "hang" => fn _ ->
              send(test, {:callback, self()})
              Process.sleep(:infinity)
            end
          }
        )

      caller = spawn(fn -> Session.exec(session, "hang") end)
      assert_receive {:callback, runner}
      ref = Process.monitor(runner)
      Process.exit(caller, :kill)

      assert_receive {:DOWN, ^ref, :process, ^runner, :killed}
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end
  end

  describe "validation" do
    test "malformed builtins raise ArgumentError" do
      for {opts, message} <- [
            {[builtins: %{"x" => fn -> :ok end}], ~r/"x" must be a 1-arity function/},
            {[builtins: %{"" => fn _ -> :ok end}], ~r/:builtins names/},
            {[builtins: %{"a b" => fn _ -> :ok end}], ~r/:builtins names/},
            {[builtins: %{"a/b" => fn _ -> :ok end}], ~r/:builtins names/},
            {[builtins: [:x]], ~r/:builtins entries/},
            {[builtins: "x"], ~r/:builtins must be a map/},
            {[builtin_timeout_ms: 0], ~r/:builtin_timeout_ms must be a positive integer/},
            {[builtin_timeout_ms: :infinity], ~r/:builtin_timeout_ms/}
          ] do
        assert_raise ArgumentError, message, fn -> Session.new(opts) end
      end
    end

    test "atom names and keyword lists are accepted" do
      session = Session.new(builtins: [hello: fn _ -> {:ok, "hi\n"} end])
      assert %Result{stdout: "hi\n"} = run(session, "hello")
    end
  end

  # A builtin that needs its own session finds it through an Agent: the
  # session does not exist yet when its builtins are written.
  defp self_referencing(builtin) do
    {:ok, holder} = Agent.start_link(fn -> nil end)

    session =
      Session.new(
        builtin_timeout_ms: 10_000,
        builtins: %{"again" => &builtin.(&1, Agent.get(holder, fn s -> s end))}
      )

    Agent.update(holder, fn _ -> session end)
    session
  end

  defp relay(to, wanted?) do
    receive do
      {:trace, _, :spawn, _, _} = message -> if wanted?.(message), do: send(to, message)
      _other -> :ok
    end

    relay(to, wanted?)
  end

  # Whether `pid` appears anywhere in `term`: a Task child's start
  # arguments carry its owner and `$callers`.
  defp mentions?(pid, pid), do: true
  defp mentions?(term, pid) when is_tuple(term), do: mentions?(Tuple.to_list(term), pid)
  defp mentions?(term, pid) when is_list(term), do: Enum.any?(term, &mentions?(&1, pid))
  defp mentions?(_term, _pid), do: false
end
