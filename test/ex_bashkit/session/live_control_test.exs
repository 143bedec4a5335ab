defmodule ExBashkit.LiveControlTest do
  # Per-call options, streaming, cancel, and the outcome as data (issue 14).
  # Latencies are asserted generously here; bench/live_control.exs measures
  # them.
  use ExBashkit.Case, async: true

  alias ExBashkit.Error

  # A loopback server that accepts connections and never answers.
  defp silent_server do
    {:ok, listen} = :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false])
    {:ok, port} = :inet.port(listen)
    test = self()

    server =
      spawn_link(fn ->
        {:ok, socket} = :gen_tcp.accept(listen)
        send(test, :connected)
        Process.sleep(:infinity)
        :gen_tcp.close(socket)
      end)

    :ok = :gen_tcp.controlling_process(listen, server)
    port
  end

  # A session whose `ready` builtin tells this test process its script is
  # running: waiting for that, not for a while, holds on any machine.
  defp ready_session do
    test = self()
    Session.new(builtins: %{"ready" => fn _ -> send(test, :ready) && {:ok, ""} end})
  end

  # Runs `script` in a task, waits for `ready`, cancels, and returns the
  # task's outcome: a script that ignored the cancel would run far past the
  # generous bound of the await (latency is measured in bench/).
  defp cancel_when(session, script, ready) do
    task = Task.async(fn -> Session.exec(session, script, errors: :struct) end)
    ready.()
    assert Session.cancel(session) == :ok
    Task.await(task, 10_000)
  end

  describe "streaming" do
    test "chunks arrive while the script still runs" do
      test = self()

      # The script waits in a builtin until the test lets it go: the first
      # chunk must arrive before that, whatever the machine's load.
      hold = fn _call ->
        send(test, {:holding, self()})

        receive do
          :go -> {:ok, ""}
        end
      end

      session = Session.new(builtins: %{"hold" => hold})

      task =
        Task.async(fn ->
          Session.exec(session, "echo first; hold; echo second", stream_to: {test, :s})
        end)

      assert_receive {:ex_bashkit, :s, {:stdout, "first\n"}}, 10_000
      assert_receive {:holding, holder}, 10_000
      # The script is still running: its outcome has not come yet.
      refute_received {:ex_bashkit, :s, {:stdout, "second\n"}}
      refute_received {:ex_bashkit, :s, {:exit, _}}
      assert Task.yield(task, 0) == nil

      send(holder, :go)
      assert {:ok, %Result{stdout: "first\nsecond\n"}} = Task.await(task, 10_000)
      assert_receive {:ex_bashkit, :s, {:stdout, "second\n"}}
      assert_receive {:ex_bashkit, :s, {:exit, {:ok, %Result{stdout: "first\nsecond\n"}}}}
    end

    test "stdout and stderr chunks keep their order and exact bytes" do
      session = Session.new(files: %{"/bin.dat" => <<0, 255, 1, 128, 10>>})

      script = """
      echo out1
      echo err1 >&2
      cat /bin.dat
      printf 'caf\\xc3\\xa9' >&2
      echo out2
      """

      {:ok, result} = Session.exec(session, script, stream_to: self())
      chunks = collect_chunks(nil)

      assert chunks == [
               {:stdout, "out1\n"},
               {:stderr, "err1\n"},
               {:stdout, <<0, 255, 1, 128, 10>>},
               {:stderr, "café"},
               {:stdout, "out2\n"}
             ]

      assert result.stdout == "out1\n" <> <<0, 255, 1, 128, 10>> <> "out2\n"
      assert_received {:ex_bashkit, nil, {:exit, {:ok, ^result}}}
    end

    test "streamed output stops at the output caps, like the result" do
      session = Session.new(limits: [max_stdout_bytes: 10, max_stderr_bytes: 4])
      script = "for i in 1 2 3 4 5 6; do echo line$i; echo e$i >&2; done"
      {:ok, result} = Session.exec(session, script, stream_to: {self(), :capped})
      chunks = collect_chunks(:capped)

      streamed = fn stream -> for {^stream, data} <- chunks, into: "", do: data end
      assert streamed.(:stdout) == "line1\nline"
      assert streamed.(:stderr) == "e1\ne"
      assert result.truncated
      assert byte_size(result.stdout) <= 10
    end

    test ":into collects stdout as it comes, as System.cmd/3 does" do
      session = Session.new()
      {:ok, result} = Session.exec(session, "for i in 1 2 3; do echo $i; done", into: [])
      assert result.stdout == ["1\n", "2\n", "3\n"]

      {:ok, result} = Session.exec(session, "echo a; echo b >&2", into: "")
      assert result.stdout == "a\n"
      assert result.stderr == "b\n"
      # Nothing of the stream is left in the caller's mailbox.
      refute_received {:ex_bashkit, _, _}
    end

    test "builtins and virtual_fs callbacks stream in the same script" do
      fs = ExBashkit.Test.MapFs.start(%{"/note.txt" => "from the backend\n"})

      session =
        Session.new(
          builtins: %{"greet" => fn %{args: [name]} -> {:ok, "hello #{name}\n"} end},
          virtual_fs: %{"/vfs" => {ExBashkit.Test.MapFs, fs}}
        )

      {:ok, result} =
        Session.exec(session, "greet ada; cat /vfs/note.txt; echo done", stream_to: self())

      assert collect_chunks(nil) == [
               {:stdout, "hello ada\n"},
               {:stdout, "from the backend\n"},
               {:stdout, "done\n"}
             ]

      assert result.stdout == "hello ada\nfrom the backend\ndone\n"
    end

    test "a listener that is gone does not disturb the script" do
      listener = spawn(fn -> :ok end)
      ref = Process.monitor(listener)
      assert_receive {:DOWN, ^ref, _, _, _}
      session = Session.new()

      assert {:ok, %Result{stdout: "still\n"}} =
               Session.exec(session, "echo still", stream_to: listener)
    end
  end

  describe "cancel" do
    test "stops a script inside sleep; queued scripts still run; the session stays usable" do
      session = ready_session()
      task = Task.async(fn -> Session.exec(session, "echo before; ready; sleep 30") end)
      assert_receive :ready
      queued = Task.async(fn -> Session.exec(session, "echo queued") end)
      Process.sleep(50)

      assert Session.cancel(session) == :ok
      assert {:error, message} = Task.await(task, 10_000)
      assert message =~ "cancelled"
      assert {:ok, %Result{stdout: "queued\n"}} = Task.await(queued, 10_000)
      assert Session.cancel(session) == :idle
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end

    test "inside sleep, with the reason and output so far" do
      session = ready_session()

      outcome =
        cancel_when(session, "echo partial; ready; sleep 30", fn -> assert_receive :ready end)

      assert {:error, %Error{reason: :cancelled, stdout: "partial\n"}} = outcome
    end

    test "kills a builtin callback that never returns" do
      test = self()

      session =
        Session.new(
          builtins: %{
            "hang" => fn _ ->
              send(test, {:runner, self()})
              Process.sleep(:infinity)
            end
          }
        )

      outcome =
        cancel_when(session, "hang", fn ->
          assert_receive {:runner, runner}
          send(self(), {:runner, runner})
        end)

      assert {:error, %Error{reason: :cancelled}} = outcome
      assert_received {:runner, runner}
      refute Process.alive?(runner)
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end

    test "stops a network request to a server that never answers" do
      port = silent_server()
      base = "http://127.0.0.1:#{port}"
      session = Session.new(allow_net: [base], block_private_ips: false)

      outcome = cancel_when(session, "curl -s #{base}/slow", fn -> assert_receive :connected end)

      assert {:error, %Error{reason: :cancelled}} = outcome
      assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
    end

    test "is callable from any process, and rejects what is not a session" do
      session = ready_session()
      task = Task.async(fn -> Session.exec(session, "ready; sleep 30") end)
      assert_receive :ready
      canceller = Task.async(fn -> Session.cancel(session) end)
      assert Task.await(canceller) == :ok
      assert {:error, _} = Task.await(task, 10_000)

      assert_raise ArgumentError, ~r/expected an ExBashkit.Session/, fn ->
        Session.cancel(:nope)
      end
    end
  end

  describe "the outcome as data" do
    test "every reason comes from a real case" do
      session = Session.new(limits: [max_loop_iterations: 2])

      assert {:error, %Error{reason: :timeout, limit: :timeout_ms, stdout: "a\n"}} =
               Session.exec(session, "echo a; sleep 30", timeout_ms: 1_000, errors: :struct)

      assert {:error, %Error{reason: :limit, limit: :max_loop_iterations, stdout: "1\n2\n"}} =
               Session.exec(session, "for i in 1 2 3; do echo $i; done", errors: :struct)

      assert {:error, %Error{reason: :parse_error, limit: nil}} =
               Session.exec(session, "if then fi", errors: :struct)

      assert {:error, %Error{reason: :error, message: "cwd \"/nope\" does not exist"}} =
               Session.exec(session, "pwd", cwd: "/nope", errors: :struct)

      # Busy: the caller's time ran out while an earlier script held the session.
      test = self()

      hog =
        Session.new(
          builtins: %{
            "wait_here" => fn _ ->
              send(test, :holding)
              Process.sleep(1_500)
              {:ok, ""}
            end
          }
        )

      holder = Task.async(fn -> Session.exec(hog, "wait_here") end)
      assert_receive :holding

      assert {:error, %Error{reason: :busy, limit: :timeout_ms}} =
               Session.exec(hog, "echo late", timeout_ms: 50, errors: :struct)

      Task.await(holder, 5_000)
    end

    test "errors stay messages unless asked for, and the message is the struct's" do
      session = Session.new()
      {:error, message} = Session.exec(session, "if then fi")
      {:error, error} = Session.exec(session, "if then fi", errors: :struct)
      assert is_binary(message)
      assert error.message == message
      assert Exception.message(error) == message
    end

    test "a stream listener gets the error as a struct in its final message" do
      session = Session.new()

      {:error, message} =
        Session.exec(session, "echo part; sleep 30", timeout_ms: 1_000, stream_to: {self(), :t})

      assert message =~ "timeout"
      assert_received {:ex_bashkit, :t, {:stdout, "part\n"}}

      assert_received {:ex_bashkit, :t,
                       {:exit, {:error, %Error{reason: :timeout, stdout: "part\n"}}}}
    end
  end

  describe "per-call options" do
    test ":env and :cwd apply to one call and do not persist" do
      session = Session.new(env: %{"KEEP" => "session"})
      {:ok, _} = Session.exec(session, "mkdir -p /work/sub; cd /work")

      {:ok, result} =
        Session.exec(session, ~S|echo "$KEEP $ONLY $(pwd) $PWD"|,
          env: %{"KEEP" => "call", "ONLY" => "once"},
          cwd: "sub"
        )

      assert result.stdout == "call once /work/sub /work/sub\n"

      {:ok, result} = Session.exec(session, ~S|echo "$KEEP [${ONLY-unset}] $(pwd) $PWD"|)
      assert result.stdout == "session [unset] /work /work\n"

      # Even what the script itself did to them is undone.
      {:ok, _} =
        Session.exec(session, "export ONLY=changed; cd /", env: [ONLY: "x"], cwd: "/work")

      {:ok, result} = Session.exec(session, ~S|echo "[${ONLY-unset}] $(pwd)"|)
      assert result.stdout == "[unset] /work\n"
    end

    test "a cancelled call's :env and :cwd are undone before the next script" do
      session = ready_session()

      task =
        Task.async(fn ->
          Session.exec(session, "ready; sleep 30", env: [TEMP: "1"], cwd: "/tmp")
        end)

      assert_receive :ready
      :ok = Session.cancel(session)
      {:error, _} = Task.await(task)
      {:ok, result} = Session.exec(session, ~S|echo "[${TEMP-unset}] $(pwd)"|)
      assert result.stdout == "[unset] /\n"
    end

    test ":stdin reaches cat, read and wc" do
      session = Session.new()

      assert {:ok, %Result{stdout: "a\nb\n"}} =
               Session.exec(session, "cat", stdin: ["a\n", "b\n"])

      assert {:ok, %Result{stdout: "got one\n"}} =
               Session.exec(session, ~S(read -r x; echo "got $x"), stdin: "one\ntwo\n")

      assert {:ok, %Result{stdout: "2\n"}} = Session.exec(session, "wc -l", stdin: "x\ny\n")
      # Binary input goes through untouched.
      assert {:ok, %Result{stdout: <<0, 255, 7>>}} =
               Session.exec(session, "cat", stdin: <<0, 255, 7>>)

      # Not the next call's.
      assert {:ok, %Result{stdout: ""}} = Session.exec(session, "cat")
    end

    test ":args reach $1, $@ and $#" do
      session = Session.new()

      assert {:ok, %Result{stdout: "a b|a b c d|3\n"}} =
               Session.exec(session, ~S(echo "$1|$@|$#"), args: ["a b", "c", :d])

      assert {:ok, %Result{stdout: "0\n"}} = Session.exec(session, ~S(echo "$#"))
    end

    test ":arg0 is $0 for the call only, in the VM and in a worker" do
      for isolation <- [:none, :process] do
        session = Session.new(isolation: isolation)

        assert {:ok, %Result{stdout: "deploy.sh a\n"}} =
                 Session.exec(session, ~S(echo "$0 $1"), arg0: "deploy.sh", args: ["a"])

        assert {:ok, %Result{stdout: "bash\n"}} = Session.exec(session, ~S(echo "$0"))
      end

      for bad <- ["", :name, 1] do
        assert_raise ArgumentError, ~r/:arg0/, fn ->
          Session.exec(Session.new(), "true", arg0: bad)
        end
      end
    end

    test ":timeout_ms is bounded by the session's own limit" do
      session = Session.new(limits: [timeout_ms: 200])
      started = System.monotonic_time(:millisecond)
      assert {:error, message} = Session.exec(session, "sleep 5", timeout_ms: 60_000)
      assert message =~ "timeout"
      assert System.monotonic_time(:millisecond) - started < 30_000
    end

    test "ExBashkit.exec/2 takes session options and call options" do
      assert {:ok, %Result{stdout: "x y\n"}} =
               ExBashkit.exec(~S(echo "$GREETING $1"), env: [GREETING: "x"], args: ["y"])

      assert {:ok, %Result{stdout: "seeded"}} =
               ExBashkit.exec("cat /f", files: %{"/f" => "seeded"})

      assert {:error, %Error{reason: :timeout}} =
               ExBashkit.exec("sleep 5", timeout_ms: 100, errors: :struct)

      assert_raise ArgumentError, ~r/unknown option :nope/, fn ->
        ExBashkit.exec("true", nope: 1)
      end
    end

    test "bad options raise ArgumentError naming the option" do
      session = Session.new()

      for {opts, pattern} <- [
            {[timeout_ms: 0], ~r/:timeout_ms must be/},
            {[stdin: :nope], ~r/:stdin must be iodata/},
            {[env: "x"], ~r/:env must be/},
            {[cwd: ""], ~r/:cwd must be/},
            {[cwd: <<255>>], ~r/:cwd must be/},
            {[args: "x"], ~r/:args must be/},
            {[args: [<<0>>]], ~r/:args must be/},
            {[into: :nope], ~r/:into must be a Collectable/},
            {[stream_to: :nope], ~r/:stream_to must be/},
            {[errors: :loud], ~r/:errors must be/},
            {[bogus: 1], ~r/unknown option :bogus/}
          ] do
        assert_raise ArgumentError, pattern, fn -> Session.exec(session, "true", opts) end
      end

      assert_raise ArgumentError, ~r/keyword list/, fn -> Session.exec(session, "true", :x) end
    end
  end

  defp collect_chunks(tag, acc \\ []) do
    receive do
      {:ex_bashkit, ^tag, {:exit, _}} = exit ->
        send(self(), exit)
        Enum.reverse(acc)

      {:ex_bashkit, ^tag, chunk} ->
        collect_chunks(tag, [chunk | acc])
    after
      1_000 -> flunk("no final message; got #{inspect(Enum.reverse(acc))}")
    end
  end
end
