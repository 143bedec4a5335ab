defmodule ExBashkit.CommandPolicyTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.{Error, Session}

  # Spellings of `rm -rf /data`: each deletes /data in a session without a
  # policy (checked below, so that none of them is a test that cannot
  # fail), and none may under `command_policy: {:deny, ["rm"]}`.
  @bypasses [
    "rm -rf /data",
    "command rm -rf /data",
    "env rm -rf /data",
    "env -i rm -rf /data",
    "timeout 5 rm -rf /data",
    "nohup rm -rf /data",
    "nice rm -rf /data",
    "time rm -rf /data",
    "exec rm -rf /data",
    "trap 'rm -rf /data' EXIT",
    "trap 'eval \"rm -rf /data\"' EXIT",
    "find /data -exec rm -rf {} +",
    "find /data -name keep.txt -exec rm -f {} \\;",
    "find /data -name keep.txt -execdir rm -f {} \\;",
    "echo /data | xargs rm -rf",
    "printf '/data\\n' | xargs -I{} rm -rf {}",
    "xargs rm -rf <<< /data",
    "printf 'rm -rf /data' > /s; chmod +x /s; /s",
    "printf 'rm -rf /data' > /s; sh /s",
    "printf 'rm -rf /data' > /s; bash /s",
    "printf 'rm -rf /data' > /s; source /s",
    "printf 'rm -rf /data' > /s; . /s",
    "eval 'rm -rf /data'",
    "eval \"$(echo rm) -rf /data\"",
    "f() { rm -rf /data; }; f",
    "f() { \"$@\"; }; f rm -rf /data",
    "f=(rm -rf /data); \"${f[@]}\"",
    "x=rm; $x -rf /data",
    "set -- rm -rf /data; \"$@\"",
    "'rm' -rf /data",
    "\"rm\" -rf /data",
    "r\\m -rf /data",
    "$'\\x72\\x6d' -rf /data",
    "$'rm' -rf /data",
    "printf -v c rm; $c -rf /data",
    "read c <<< rm; $c -rf /data",
    "declare c=rm; \"$c\" -rf /data",
    "for c in rm; do $c -rf /data; done",
    "bash -c 'rm -rf /data'",
    "sh -c 'rm -rf /data'",
    "echo 'rm -rf /data' | bash",
    "bash <<'EOF'\nrm -rf /data\nEOF",
    "cat <<'EOF' | sh\nrm -rf /data\nEOF",
    "env timeout 5 nice rm -rf /data",
    "command env nohup rm -rf /data",
    "(rm -rf /data)",
    "echo $(rm -rf /data)",
    "echo `rm -rf /data`",
    "rm -rf /data & wait",
    "if rm -rf /data; then :; fi",
    "! rm -rf /data",
    "{ rm -rf /data; }",
    "true && rm -rf /data",
    "false || rm -rf /data",
    "while rm -rf /data; do break; done",
    "case x in x) rm -rf /data ;; esac"
  ]

  defp fresh(isolation, opts) do
    Session.new([isolation: isolation, files: %{"/data/keep.txt" => "precious"}] ++ opts)
  end

  defp kept?(session), do: Session.read_file(session, "/data/keep.txt") == {:ok, "precious"}

  test "the corpus has at least 50 spellings" do
    assert length(@bypasses) >= 50
  end

  for isolation <- [:none, :process] do
    describe "{:deny, [\"rm\"]} in isolation: #{isolation}" do
      @describetag isolation: isolation

      test "every spelling deletes /data without the policy", %{isolation: isolation} do
        for script <- @bypasses do
          session = fresh(isolation, [])
          Session.exec(session, script)
          refute kept?(session), "without a policy, #{inspect(script)} left /data"
        end
      end

      test "no spelling deletes /data, and what runs beside it still runs",
           %{isolation: isolation} do
        for script <- @bypasses do
          session = fresh(isolation, command_policy: {:deny, ["rm"]})
          outcome = Session.exec(session, "echo before\n" <> script)
          assert {:ok, %Result{stdout: "before\n" <> _}} = outcome, inspect(script)
          # What was read and what the script said, should this ever fail.
          read = Session.read_file(session, "/data/keep.txt")

          assert read == {:ok, "precious"},
                 "#{inspect(script)}: /data/keep.txt read as #{inspect(read)} after #{inspect(outcome)}"
        end
      end

      test "a denied command fails as a command, and the script goes on",
           %{isolation: isolation} do
        session = fresh(isolation, command_policy: {:deny, ["rm"]})

        assert {:ok, %Result{stdout: "status=1\nafter\n", stderr: stderr, exit_code: 0}} =
                 Session.exec(session, "rm -rf /data; echo status=$?; echo after")

        assert stderr =~ "rm: cancelled by before_tool hook"
      end

      test "command_policy_abort: true ends the script at the denied command",
           %{isolation: isolation} do
        session = fresh(isolation, command_policy: {:deny, ["rm"]}, command_policy_abort: true)

        assert {:error, %Error{reason: :denied, stdout: "first\n", message: message}} =
                 Session.exec(session, "echo first; env rm -rf /data; echo never", errors: :struct)

        assert message ==
                 "rm: denied by the command policy (the script was stopped: " <>
                   "command_policy_abort)"

        assert kept?(session)
        # The session goes on.
        assert %Result{stdout: "next\n"} = run(session, "echo next")
      end

      test "{:allow, names} fails every other command", %{isolation: isolation} do
        session = fresh(isolation, command_policy: {:allow, ["echo", "cat"]})

        assert %Result{stdout: "precious\nstatus=1\n", stderr: stderr} =
                 run(session, "cat /data/keep.txt; echo; ls /data; echo status=$?")

        assert stderr =~ "ls: cancelled by before_tool hook"
      end

      test "a call's own policy replaces the session's for that call only",
           %{isolation: isolation} do
        session = fresh(isolation, command_policy: {:deny, ["rm"]})

        assert {:ok, %Result{stdout: "x\n"}} =
                 Session.exec(session, "touch /t; rm /t; echo x > /u; cat /u",
                   command_policy: {:deny, ["touch"]}
                 )

        assert {:ok, %Result{exit_code: 1}} = Session.exec(session, "cat /t")
        # The session's own policy is back.
        assert %Result{stdout: "1\n"} = run(session, "rm /u; echo $?")
        assert {:ok, "x\n"} = Session.read_file(session, "/u")
      end

      test "a call's own policy needs a policed session", %{isolation: isolation} do
        session = fresh(isolation, [])

        assert {:error, message} =
                 Session.exec(session, "rm -rf /data", command_policy: {:deny, ["rm"]})

        assert message =~ "needs a session created with a :command_policy"
        assert kept?(session)

        policed = fresh(isolation, command_policy: {:deny, []})

        assert {:ok, %Result{stdout: "1\n"}} =
                 Session.exec(policed, "rm -rf /data; echo $?", command_policy: {:deny, ["rm"]})

        assert kept?(policed)
      end

      test "custom builtins are commands too", %{isolation: isolation} do
        greet = fn %{args: args} -> {:ok, "hi #{Enum.join(args, " ")}\n"} end

        session =
          fresh(isolation, builtins: %{"greet" => greet}, command_policy: {:deny, ["greet"]})

        assert %Result{stdout: "1\n", stderr: stderr} = run(session, "env greet you; echo $?")
        assert stderr =~ "greet: cancelled by before_tool hook"
      end

      test "the session's own work is not policed", %{isolation: isolation} do
        # A failed script is tidied with `kill`; a call's :cwd and :env are
        # set with the shell's own commands. None of that is the script's.
        session = fresh(isolation, command_policy: {:allow, ["echo", "false"]})
        assert {:ok, %Result{exit_code: 1}} = Session.exec(session, "sleep 0 & false")

        assert {:ok, %Result{stdout: "/data v\n"}} =
                 Session.exec(session, "echo $PWD $V", cwd: "/data", env: [V: "v"])
      end
    end
  end

  describe "a function policy (isolation: :process)" do
    test "decides each command, with its arguments, however it is reached" do
      test = self()

      policy = fn %{name: name, args: args} ->
        send(test, {:asked, name, args})
        if name == "rm" and "/data" in args, do: {:deny, "not /data"}, else: :ok
      end

      session = fresh(:process, command_policy: policy)

      assert %Result{stdout: "1\n0\n", stderr: stderr} =
               run(session, "env rm -rf /data; echo $?; rm -f /other; echo $?")

      assert stderr =~ "rm: cancelled by before_tool hook"
      assert kept?(session)
      assert_received {:asked, "env", ["rm", "-rf", "/data"]}
      assert_received {:asked, "rm", ["-rf", "/data"]}
      assert_received {:asked, "rm", ["-f", "/other"]}
    end

    test "one that raises, answers anything else or takes too long denies" do
      for {policy, opts} <- [
            {fn _ -> raise "boom" end, []},
            {fn _ -> :yes end, []},
            {fn _ -> Process.sleep(:infinity) end, [builtin_timeout_ms: 200]}
          ] do
        session = fresh(:process, [command_policy: policy] ++ opts)
        # echo is denied too: every command is.
        assert %Result{stdout: "", stderr: stderr} = run(session, "rm -rf /data; echo $?")
        assert stderr =~ "rm: cancelled by before_tool hook"
        assert stderr =~ "echo: cancelled by before_tool hook"
        assert kept?(session)
      end
    end

    test "aborts with the function's reason" do
      policy = fn %{name: name} -> if name == "rm", do: {:deny, "no deleting"}, else: :ok end
      session = fresh(:process, command_policy: policy, command_policy_abort: true)

      assert {:error, "rm: no deleting (the script was stopped: command_policy_abort)"} =
               Session.exec(session, "echo a; rm -rf /data; echo b")
    end

    test "is refused in the VM and per call" do
      assert_raise ArgumentError, ~r/needs isolation: :process/, fn ->
        Session.new(command_policy: fn _ -> :ok end, isolation: :none)
      end

      session = fresh(:none, command_policy: {:deny, []})

      assert_raise ArgumentError, ~r/given to ExBashkit.Session.new\/1 only/, fn ->
        Session.exec(session, "true", command_policy: fn _ -> :ok end)
      end
    end
  end

  # The policy guides/agent_tools.md teaches, applied before anything runs.
  defp static_policy(%{opaque: true}), do: {:deny, "the command hides what it runs"}

  defp static_policy(%{commands: commands}) do
    case Enum.find(commands, &(&1.name in ~w(curl wget rm))) do
      nil -> :ok
      %{name: name} -> {:deny, "#{name} is not allowed"}
    end
  end

  describe "the guide's static approval policy" do
    test "denies every spelling before anything runs" do
      for script <- @bypasses do
        session = fresh(:none, approve: &static_policy/1)

        assert {:error, "denied: " <> _} = Session.exec(session, "echo ran > /ran\n" <> script),
               "#{inspect(script)} was let through"

        assert {:ok, %Result{exit_code: 1}} = Session.exec(session, "cat /ran"), inspect(script)
        assert kept?(session)
      end
    end

    test "sees the command inside each wrapper, trap and find -exec" do
      for {script, wrapper} <- [
            {"env -i A=b rm -rf /", "env"},
            {"timeout -s KILL 5 nice -n 3 rm -rf /", "nice"},
            {"trap 'rm -rf /' EXIT", "trap"},
            {"find / -name x -exec rm -f {} \\;", "find"},
            {"echo / | xargs -n 1 rm -rf", "xargs"},
            {"command -p rm -rf /", "command"}
          ] do
        assert {:ok, found} = ExBashkit.analyze(script)

        assert Enum.any?(
                 found.commands,
                 &match?(%{name: "rm", context: :wrapped, wrapper: ^wrapper}, &1)
               ),
               "#{script}: #{inspect(found.commands)}"

        refute found.opaque, script
      end
    end

    test "a file run by its path is reentry, a name wrappers cannot read is dynamic" do
      assert {:ok, %{reentry: true, opaque: true}} = ExBashkit.analyze("/s; ./t")
      assert {:ok, %{dynamic_commands: true, opaque: true}} = ExBashkit.analyze("env $cmd /x")
      assert {:ok, %{opaque: false, commands: commands}} = ExBashkit.analyze("command -v rm")
      refute Enum.any?(commands, &(&1.context == :wrapped))
    end
  end

  describe "bad arguments" do
    test "raise ArgumentError naming the option" do
      for bad <- [
            :deny,
            {:deny, "rm"},
            {:block, ["rm"]},
            {:deny, [""]},
            {:deny, [1]},
            {:deny, ["a\0b"]}
          ] do
        assert_raise ArgumentError, ~r/:command_policy must be/, fn ->
          Session.new(command_policy: bad)
        end

        assert_raise ArgumentError, ~r/:command_policy must be/, fn ->
          Session.exec(Session.new(), "true", command_policy: bad)
        end
      end

      assert_raise ArgumentError, ~r/command_policy_abort/, fn ->
        Session.new(command_policy_abort: :yes)
      end
    end
  end
end
