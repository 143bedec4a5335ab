defmodule ExBashkit.IsolationTest do
  # `isolation: :process`: real worker processes, killed for real. The
  # Session contract itself runs over worker sessions too
  # (EX_BASHKIT_ISOLATION=process, see test_helper.exs); this file covers
  # what only a worker has: its deadline, its death, its end with the VM.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Error, Session}
  alias ExBashkit.Test.ChildVM

  @jq_bomb "jq -n 'reduce range(10000) as $i (null; {a: .})' | wc -c"
  # A script that never yields (see hog_session/2).
  @hog hog_command()

  defp isolated(opts \\ []), do: Session.new([isolation: :process] ++ opts)
  defp isolated_hog(opts), do: hog_session([isolation: :process] ++ opts)

  defp os_pid(session), do: Session.info(session).os_pid

  # A worker process with this pid (see process?/1: pids are reused).
  defp alive?(os_pid),
    do:
      process?(os_pid) and
        match?({:ok, "ex_bashkit_work" <> _}, File.read("/proc/#{os_pid}/comm"))

  describe "a session in a worker process" do
    test "runs scripts, keeps its state, and says where it lives" do
      session = isolated(env: [GREETING: "hi"], files: %{"/data/a.txt" => "one\n"})
      info = Session.info(session)
      assert info.isolation == :process
      assert alive?(info.os_pid)
      refute info.os_pid == String.to_integer(System.pid())

      assert %Result{stdout: "hi one\n"} = run(session, "echo $GREETING $(cat /data/a.txt)")
      run(session, "cd /data; x=42; f() { echo f$1; }")
      assert %Result{stdout: "/data 42 f1\n"} = run(session, "echo $(pwd) $x $(f 1)")
      assert inspect(session) =~ "in process #{info.os_pid}"
    end

    test "serves builtins and virtual_fs backends from this VM" do
      test = self()

      backend = fn
        %{op: :read, path: "/greeting"} -> {:ok, "from elixir\n"}
        %{op: :stat, path: "/greeting"} -> {:ok, %{type: :file, size: 12}}
        _ -> {:error, :enoent}
      end

      session =
        isolated(
          builtins: %{
            "whoami_vm" => fn _ -> send(test, {:served_by, self()}) && {:ok, "vm\n"} end
          },
          virtual_fs: %{"/api" => backend}
        )

      assert %Result{stdout: "vm\nfrom elixir\n"} = run(session, "whoami_vm; cat /api/greeting")
      assert_received {:served_by, runner}
      assert node(runner) == node()
    end

    test "snapshots cross the boundary both ways" do
      isolated = isolated()
      run(isolated, "x=from_worker; echo data > /f")
      {:ok, bytes} = Session.snapshot(isolated)
      {:ok, in_vm} = Session.restore(Session.new(isolation: :none), bytes)
      assert %Result{stdout: "from_worker data\n"} = run(in_vm, "echo $x $(cat /f)")

      run(in_vm, "x=from_vm")
      {:ok, bytes} = Session.snapshot(in_vm)
      {:ok, back} = Session.restore(isolated(), bytes)
      assert %Result{stdout: "from_vm\n"} = run(back, "echo $x")
    end
  end

  describe "a script that outlives its deadline" do
    test "never yielding: its caller is answered and its worker killed" do
      session = isolated_hog([])
      os_pid = os_pid(session)
      started = System.monotonic_time(:millisecond)

      assert {:error, %Error{reason: :timeout, message: message}} =
               Session.exec(session, @hog, timeout_ms: 1_000, errors: :struct)

      # 10x the expected 1.5 s: the bound is the behaviour (no waiting on
      # work that never yields).
      assert System.monotonic_time(:millisecond) - started < 15_000
      assert message =~ "worker process was killed"
      assert wait_until(fn -> not alive?(os_pid) end)

      assert {:error, %Error{message: gone}} = Session.exec(session, "echo hi", errors: :struct)
      assert gone =~ "worker process is gone"
      assert Session.info(session).os_pid == nil
    end

    test "yielding: stopped inside the worker, which lives on" do
      session = isolated()
      os_pid = os_pid(session)

      assert {:error, %Error{reason: :timeout, stdout: "before\n"}} =
               Session.exec(session, "echo before; sleep 30", timeout_ms: 300, errors: :struct)

      assert %Result{stdout: "still\n"} = run(session, "echo still")
      assert os_pid(session) == os_pid
    end

    test "queued behind another, it has its whole deadline from when it starts; its worker lives on" do
      session = isolated()
      os_pid = os_pid(session)
      test = self()

      # The first holds the worker for 800 ms; the second, sent once the
      # first has started, starts only then and stops at its own deadline,
      # 1 s later: past the count its caller began at the call.
      first =
        Task.async(fn ->
          Session.exec(session, "echo started; sleep 0.8", stream_to: {test, :first})
        end)

      assert_receive {:ex_bashkit, :first, {:stdout, "started\n"}}, 10_000

      assert {:error, %Error{reason: :timeout, stdout: "second\n"}} =
               Session.exec(session, "echo second; sleep 30", timeout_ms: 1_000, errors: :struct)

      assert {:ok, %Result{exit_code: 0}} = Task.await(first, 10_000)
      assert %Result{stdout: "still\n"} = run(session, "echo still")
      assert os_pid(session) == os_pid
    end

    test "a script over its memory cap ends its worker; the host keeps nothing" do
      frozen_before = ExBashkit.stats().frozen_scripts
      session = isolated()
      os_pid = os_pid(session)

      assert {:error, %Error{reason: :limit, limit: :max_script_memory_bytes}} =
               Session.exec(session, @jq_bomb, errors: :struct)

      assert wait_until(fn -> not alive?(os_pid) end)
      assert ExBashkit.stats().frozen_scripts == frozen_before
    end
  end

  # 8 s here: ten times that, for a slower machine.
  @tag timeout: 300_000
  test "the same attack again and again leaves nothing behind, and bystanders are served" do
    bystander = isolated()
    in_vm = Session.new(isolation: :none)
    frozen_before = ExBashkit.stats().frozen_scripts

    for round <- 1..5 do
      jq = isolated()
      hog = isolated_hog([])
      pids = [os_pid(jq), os_pid(hog)]

      assert {:error, %Error{reason: :limit}} = Session.exec(jq, @jq_bomb, errors: :struct)

      assert {:error, %Error{reason: :timeout}} =
               Session.exec(hog, @hog, timeout_ms: 1_000, errors: :struct)

      expected = "#{round}\n"

      assert %Result{stdout: ^expected, stderr: "", exit_code: 0, truncated: false} =
               run(bystander, "echo #{round}")

      expected = "#{round}\n"

      assert %Result{stdout: ^expected, stderr: "", exit_code: 0, truncated: false} =
               run(in_vm, "echo #{round}")

      assert wait_until(fn -> Enum.all?(pids, &(not alive?(&1))) end)
    end

    assert ExBashkit.stats().frozen_scripts == frozen_before
  end

  test "a worker killed from outside fails only its own session" do
    victim = isolated()
    neighbour = isolated()
    os_pid = os_pid(victim)

    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    assert wait_until(fn -> not alive?(os_pid) end)

    assert {:error, message} = Session.exec(victim, "echo hi")
    assert message =~ "worker process is gone"
    assert {:error, _} = Session.read_file(victim, "/etc/hostname")
    assert %Result{stdout: "fine\n"} = run(neighbour, "echo fine")
  end

  test "a caller killed mid-script: a script that never yields loses its worker" do
    session = isolated_hog(limits: [timeout_ms: 120_000])
    os_pid = os_pid(session)
    caller = spawn(fn -> Session.exec(session, @hog) end)
    # The worker has the script once it is busy computing.
    assert wait_until(fn -> cpu_ticks(os_pid) > 50 end)
    Process.exit(caller, :kill)

    assert wait_until(fn -> not alive?(os_pid) end)
    assert ExBashkit.stats().workers.kills.orphaned >= 1
    # The session was held all along (a dropped one ends its worker too).
    assert Session.info(session).os_pid == nil
  end

  test "a session's last call keeps it alive until answered, whatever its caller collects" do
    test = self()

    # Nothing but the running call refers to the session: its caller's
    # stack lets go of it once the script is queued.
    caller =
      Task.async(fn ->
        session = isolated()
        send(test, {:owner, session.resource.pid})
        Session.exec(session, "echo started; sleep 2; echo done", stream_to: {test, :last})
      end)

    assert_receive {:owner, owner}
    assert_receive {:ex_bashkit, :last, {:stdout, "started\n"}}
    :erlang.garbage_collect(caller.pid)
    # The owner has seen whatever that collection sent it.
    _ = :sys.get_state(owner)

    assert {:ok, %Result{stdout: "started\ndone\n"}} = Task.await(caller, 30_000)
  end

  test "dropped sessions leave no worker once collected" do
    parent = self()

    owner =
      spawn(fn ->
        sessions = for _ <- 1..20, do: isolated()
        send(parent, {:pids, Enum.map(sessions, &os_pid/1)})

        # Refers to the sessions until the drop: a variable not used again
        # is garbage, and a collection here would drop them early.
        receive do
          :drop -> length(sessions)
        end
      end)

    assert_receive {:pids, pids}
    assert Enum.all?(pids, &alive?/1)
    send(owner, :drop)

    # The sessions die with their process's heap; the workers with them.
    assert wait_until(fn -> Enum.all?(pids, &(not alive?(&1))) end)
  end

  test "a VM halted abruptly leaves no worker behind" do
    file = Path.join(host_dir!("halt"), "worker")

    code = """
    session = ExBashkit.Session.new(isolation: :process)
    {:ok, _} = ExBashkit.Session.exec(session, "true")
    File.write!(#{inspect(file)}, Integer.to_string(ExBashkit.Session.info(session).os_pid))
    :erlang.halt(0, flush: false)
    """

    {_output, 0} = ChildVM.run(code)
    os_pid = File.read!(file)
    assert wait_until(fn -> not alive?(os_pid) end)
  end

  test "a VM killed with SIGKILL leaves no worker behind" do
    file = Path.join(host_dir!("sigkill"), "worker")

    code = """
    session = ExBashkit.Session.new(isolation: :process)
    {:ok, _} = ExBashkit.Session.exec(session, "true")
    File.write!(#{inspect(file)}, Integer.to_string(ExBashkit.Session.info(session).os_pid))
    System.cmd("kill", ["-9", System.pid()])
    """

    {_output, 137} = ChildVM.run(code)
    os_pid = File.read!(file)
    assert wait_until(fn -> not alive?(os_pid) end)
  end

  test "a kill is counted by its reason" do
    before = ExBashkit.stats().workers.kills.timeout
    session = isolated_hog([])
    assert {:error, _} = Session.exec(session, @hog, timeout_ms: 500)
    assert ExBashkit.stats().workers.kills.timeout >= before + 1
  end

  # A server's worker, killed from outside as a deadline or a memory cap
  # kills it: these tests are about what comes after.
  defp kill_server_worker(server) do
    os_pid = Session.info(:sys.get_state(server).session).os_pid
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    assert wait_until(fn -> not alive?(os_pid) end)
  end

  describe "a server with isolation: :process" do
    test "with a store, comes back from its last record after its worker is killed" do
      store = {ExBashkit.Store.Memory, []}

      {:ok, pid} =
        ExBashkit.Server.start_link(
          id: {:isolation_test, make_ref()},
          isolation: :process,
          store: store,
          session: [limits: [timeout_ms: 500]]
        )

      assert {:ok, %Result{}} = ExBashkit.Server.exec(pid, "x=kept; echo data > /f")
      kill_server_worker(pid)
      # The call that finds the worker gone fails; the next wakes the
      # session from the record.
      assert {:error, message} = ExBashkit.Server.exec(pid, "echo hi")
      assert message =~ "worker process"

      assert {:ok, %Result{stdout: "kept data\n"}} =
               ExBashkit.Server.exec(pid, "echo $x $(cat /f)")
    end

    test "without a store, answers errors once its worker is killed" do
      {:ok, pid} = ExBashkit.Server.start_link(isolation: :process, session: [])
      assert {:ok, %Result{}} = ExBashkit.Server.exec(pid, "true")
      kill_server_worker(pid)

      assert {:error, _} = ExBashkit.Server.exec(pid, "echo hi")
      assert {:error, message} = ExBashkit.Server.exec(pid, "echo hi")
      assert message =~ "worker process is gone"
    end
  end

  test "a session the worker cannot build is an ArgumentError naming why" do
    assert_raise ArgumentError, ~r/cannot create session: .*"\/nonexistent\/dir"/, fn ->
      isolated(mounts: [{"/x", "/nonexistent/dir", :read_only}])
    end
  end

  test "bad options are named" do
    assert_raise ArgumentError, ~r/:isolation/, fn -> Session.new(isolation: :vm) end

    assert_raise ArgumentError, ~r/:isolation/, fn ->
      ExBashkit.exec("true", isolation: "process")
    end
  end

  defp cpu_ticks(os_pid) do
    case File.read("/proc/#{os_pid}/stat") do
      {:ok, stat} ->
        # utime and stime, after the parenthesized command name.
        [_, rest] = String.split(stat, ") ", parts: 2)
        fields = String.split(rest)
        String.to_integer(Enum.at(fields, 11)) + String.to_integer(Enum.at(fields, 12))

      _ ->
        0
    end
  end
end

defmodule ExBashkit.IsolationConfigTest do
  # Changes the application's environment: not async.
  use ExBashkit.Case, async: false

  test "a missing worker executable is an error at new/1, not a crash" do
    Application.put_env(:ex_bashkit, :worker_executable, "/nonexistent/ex_bashkit_worker")
    on_exit(fn -> Application.delete_env(:ex_bashkit, :worker_executable) end)

    assert_raise ArgumentError, ~r/cannot create session: .*worker executable/, fn ->
      Session.new(isolation: :process)
    end

    assert %Result{stdout: "in vm\n"} = run(Session.new(isolation: :none), "echo in vm")
  end

  test "config :ex_bashkit, isolation: :process is the default it names" do
    previous = Application.get_env(:ex_bashkit, :isolation)
    Application.put_env(:ex_bashkit, :isolation, :process)

    on_exit(fn ->
      if previous,
        do: Application.put_env(:ex_bashkit, :isolation, previous),
        else: Application.delete_env(:ex_bashkit, :isolation)
    end)

    assert Session.info(Session.new()).isolation == :process
    assert Session.info(Session.new(isolation: :none)).isolation == :none
  end
end
