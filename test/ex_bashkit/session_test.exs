defmodule ExBashkit.SessionTest do
  use ExBashkit.Case, async: true

  doctest ExBashkit.Session

  describe "state persistence" do
    test "env, cwd, functions, aliases and files carry over between calls" do
      session = Session.new()
      run(session, "export NAME=world; mkdir -p /work/dir; cd /work/dir")

      run(
        session,
        "greet() { echo \"hello $1\"; }; shopt -s expand_aliases; alias ll='echo listed'"
      )

      run(session, "echo data > notes.txt")

      assert run(session, "echo $NAME; pwd; greet you").stdout == "world\n/work/dir\nhello you\n"
      assert run(session, "ll").stdout == "listed\n"
      assert Session.read_file(session, "/work/dir/notes.txt") == {:ok, "data\n"}
    end

    test "unexported variables and the last exit status persist too" do
      session = Session.new()
      run(session, "x=5; arr=(a b c)")
      assert run(session, "echo $x ${arr[1]} ${#arr[@]}").stdout == "5 b 3\n"
    end

    test "scripts leave no command history, as in bash -c" do
      session = Session.new()
      for _ <- 1..3, do: assert({:ok, _} = Session.exec(session, "echo recorded?"))
      assert {:ok, %Result{stdout: "0\n"}} = Session.exec(session, "history | wc -l")
    end

    test "sessions are isolated from each other" do
      a = Session.new()
      b = Session.new()
      run(a, "export SECRET=a; echo a > /only-a; cd /tmp")

      result = run(b, "echo ${SECRET:-unset}; pwd; cat /only-a")
      assert result.stdout == "unset\n/\n"
      assert result.exit_code != 0
      assert {:error, _} = Session.read_file(b, "/only-a")
    end

    test "a failing or refused script leaves the session usable" do
      session = Session.new()
      run(session, "kept=yes")
      assert {:error, _} = Session.exec(session, "if then fi")
      assert {:error, _} = Session.exec(session, <<0xC3, 0x28>>)
      assert run(session, "false").exit_code == 1
      assert run(session, "echo $kept").stdout == "yes\n"
    end

    test "10,000 calls on one session all run" do
      session = Session.new()

      for _ <- 1..10_000 do
        %Result{exit_code: 0} = run(session, "n=$((n + 1))")
      end

      assert run(session, "echo $n").stdout == "10000\n"
    end
  end

  describe "new/1 options" do
    test "env accepts a map or keyword list and stringifies keys and values" do
      session = Session.new(env: %{"A" => "1", B: 2, C: :three})
      assert run(session, "echo $A $B $C").stdout == "1 2 three\n"
      session = Session.new(env: [LANG: "C"])
      assert run(session, "echo $LANG").stdout == "C\n"
    end

    test "cwd is created and used; username and hostname are reported" do
      session = Session.new(cwd: "/home/agent/project", username: "agent", hostname: "box")
      assert run(session, "pwd; whoami; hostname").stdout == "/home/agent/project\nagent\nbox\n"
    end

    test "files accepts a map or list of iodata and creates parents" do
      session = Session.new(files: [{"/a/b/c.txt", ["he", ?l, "lo"]}, {"rel.txt", "r"}])
      assert Session.read_file(session, "/a/b/c.txt") == {:ok, "hello"}
      assert run(session, "cat /rel.txt").stdout == "r"
    end

    test "malformed options raise ArgumentError naming the option" do
      for {opts, pattern} <- [
            {[bogus: 1], ~r/unknown option :bogus/},
            {[env: "A=1"], ~r/:env must be a map or keyword/},
            {[env: %{"" => "x"}], ~r/:env names/},
            {[env: %{"A=B" => "x"}], ~r/:env names/},
            {[env: %{"A" => %{}}], ~r/:env value for "A"/},
            {[env: %{"A" => "nul\0"}], ~r/:env value/},
            {[cwd: "relative"], ~r/:cwd must be an absolute path/},
            {[cwd: 42], ~r/:cwd/},
            {[username: ""], ~r/:username/},
            {[hostname: "two\nlines"], ~r/:hostname/},
            {[files: "x"], ~r/:files must be/},
            {[files: %{"/f" => :not_iodata}], ~r/:files content for "\/f"/},
            {[files: %{42 => "x"}], ~r/:files paths/},
            {[sandbox: true], ~r/unknown option :sandbox/},
            {:not_a_list, ~r/keyword list/},
            {[{"env", []}], ~r/keyword list/}
          ] do
        assert_raise ArgumentError, pattern, fn -> Session.new(opts) end
      end
    end
  end

  describe "concurrency" do
    test "20 concurrent exec/2 calls on one session run one at a time" do
      session = Session.new(files: %{"/counter" => "0"})

      1..20
      |> Enum.map(fn _ ->
        Task.async(fn ->
          Session.exec(session, "n=$(cat /counter); sleep 0.01; echo $((n + 1)) > /counter")
        end)
      end)
      |> Task.await_many(30_000)
      |> Enum.each(fn result -> assert {:ok, %Result{exit_code: 0}} = result end)

      assert Session.read_file(session, "/counter") == {:ok, "20\n"}
    end

    test "stat/2 and read_file/2 answer while a script runs" do
      session = Session.new(files: %{"/f" => "abc"})
      task = Task.async(fn -> Session.exec(session, "touch /started; sleep 2; echo done") end)
      wait_until_running(session)

      assert Session.stat(session, "/f") == {:ok, %{type: :file, size: 3}}
      assert Session.read_file(session, "/f") == {:ok, "abc"}
      assert Task.yield(task, 0) == nil, "the script should still be sleeping"
      assert {:ok, %Result{stdout: "done\n"}} = Task.await(task, 10_000)
    end

    test "sleeping scripts hold no scheduler: dirty NIFs and other sessions keep working" do
      # Far more sleepers than dirty CPU/IO schedulers: if each held one,
      # the calls below would queue behind them until the sleeps end.
      sleepers =
        for _ <- 1..(2 * (System.schedulers_online() + 10)) do
          session = Session.new()
          {session, Task.async(fn -> Session.exec(session, "touch /started; sleep 60") end)}
        end

      Enum.each(sleepers, fn {session, _} -> wait_until_running(session) end)

      fresh = Session.new(files: %{"/x" => "1"})
      assert run(fresh, "cat /x").stdout == "1"
      assert {:ok, _} = Session.stat(fresh, "/x")
      assert {:ok, _} = ExBashkit.exec("true")
      assert Enum.all?(sleepers, fn {_, task} -> Task.yield(task, 0) == nil end)

      # Their callers going away cancels the sleeps.
      Enum.each(sleepers, fn {_, task} -> Task.shutdown(task, :brutal_kill) end)
    end

    test "a caller that dies cancels its script and frees the session for the next one" do
      session = Session.new()
      caller = waiting_caller(session, "touch /started; sleep 20; echo late > /late")
      wait_until_running(session)
      Process.exit(caller, :kill)

      # The queue is free again well before the 20 s sleep would end.
      assert run(session, "echo next").stdout == "next\n"
      assert {:error, _} = Session.read_file(session, "/late")
    end

    test "a caller that dies while its script waits behind another's: that script never runs" do
      session = Session.new()
      first = waiting_caller(session, "touch /started; sleep 0.5")
      wait_until_running(session)
      # Queued behind the first: the job watches its caller from this wait.
      queued = waiting_caller(session, "touch /ran")
      Process.exit(queued, :kill)

      assert run(session, "echo next").stdout == "next\n"
      assert {:error, _} = Session.read_file(session, "/ran")
      Process.exit(first, :kill)
    end
  end

  describe "filesystem API" do
    test "binary content round-trips through files and scripts" do
      session = Session.new()
      bytes = :crypto.strong_rand_bytes(4096) <> <<0, 255, 254>>
      assert Session.write_file(session, "/bin.dat", bytes) == :ok
      assert Session.read_file(session, "/bin.dat") == {:ok, bytes}
      assert run(session, "cat /bin.dat").stdout == bytes
      assert run(session, "cp /bin.dat /copy.dat; wc -c < /copy.dat").stdout =~ "4099"
      assert Session.read_file(session, "/copy.dat") == {:ok, bytes}
    end

    test "relative paths resolve from the root, not the cwd" do
      session = Session.new(cwd: "/tmp")
      assert Session.write_file(session, "rel.txt", "x") == :ok
      assert Session.read_file(session, "/rel.txt") == {:ok, "x"}
      assert run(session, "cat /rel.txt; ls /tmp").stdout == "x"
    end

    test "list_dir, mkdir, remove, rename and stat" do
      session = Session.new()
      assert Session.mkdir(session, "/p/q", parents: true) == :ok
      assert Session.mkdir(session, "/p/q", parents: true) == :ok
      assert Session.write_file(session, "/p/q/file", "12") == :ok
      assert Session.list_dir(session, "/p") == {:ok, [{"q", :dir}]}
      assert Session.stat(session, "/p/q/file") == {:ok, %{type: :file, size: 2}}
      assert Session.rename(session, "/p/q/file", "/p/moved") == :ok
      assert Session.list_dir(session, "/p") == {:ok, [{"moved", :file}, {"q", :dir}]}
      assert Session.remove(session, "/p/moved") == :ok
      assert Session.remove(session, "/p", recursive: true) == :ok
      assert {:error, _} = Session.stat(session, "/p")
    end

    test "symlinks made by a script show up as :symlink" do
      session = Session.new(files: %{"/target" => "t"})
      run(session, "ln -s /target /link")
      assert {:ok, entries} = Session.list_dir(session, "/")
      assert {"link", :symlink} in entries
      assert Session.read_file(session, "/link") == {:ok, "t"}
    end

    test "every error path returns {:error, message} naming the path" do
      session = Session.new(files: %{"/file" => "x", "/dir/inner" => "y"})

      assert {:error, "/missing" <> _} = Session.read_file(session, "/missing")
      assert {:error, "/dir" <> _} = Session.read_file(session, "/dir")
      assert {:error, "/missing" <> _} = Session.list_dir(session, "/missing")
      assert {:error, "/file" <> _} = Session.list_dir(session, "/file")
      assert {:error, "/no/parent" <> _} = Session.mkdir(session, "/no/parent")
      assert {:error, "/dir" <> _} = Session.mkdir(session, "/dir")
      assert {:error, "/missing" <> _} = Session.remove(session, "/missing")
      assert {:error, "/dir" <> _} = Session.remove(session, "/dir")
      assert {:error, "/missing" <> _} = Session.rename(session, "/missing", "/b")
      assert {:error, "/missing" <> _} = Session.stat(session, "/missing")
      assert {:error, "/file/child" <> _} = Session.write_file(session, "/file/child", "z")
      assert {:error, _} = Session.write_file(session, "/dir", "z")

      assert {:error, message} = Session.read_file(session, <<"/", 0xFF>>)
      assert message =~ "UTF-8"
      assert {:error, message} = Session.stat(session, "/a\0b")
      assert message =~ "NUL"
      # nothing above changed the filesystem
      assert Session.read_file(session, "/file") == {:ok, "x"}
      assert Session.read_file(session, "/dir/inner") == {:ok, "y"}
    end

    test "bad argument types raise ArgumentError" do
      session = Session.new()

      assert_raise ArgumentError, ~r/path must be a string/, fn ->
        Session.read_file(session, :f)
      end

      assert_raise ArgumentError, ~r/content must be iodata/, fn ->
        Session.write_file(session, "/f", :x)
      end

      assert_raise ArgumentError, ~r/:parents must be a boolean/, fn ->
        Session.mkdir(session, "/d", parents: 1)
      end

      assert_raise ArgumentError, ~r/unknown keys \[:force\]/, fn ->
        Session.remove(session, "/d", force: true)
      end

      assert_raise ArgumentError, ~r/script must be a binary/, fn -> Session.exec(session, 42) end

      assert_raise ArgumentError, ~r/expected an ExBashkit.Session/, fn ->
        Session.exec(:not_a_session, "true")
      end
    end
  end

  test "inspect shows an opaque handle with its id" do
    session = Session.new()
    assert inspect(session) =~ ~r/^#ExBashkit.Session<\d+( in process \d+)?>$/
    refute inspect(Session.new()) == inspect(session)
  end

  # A process running `script` on `session`, returned once its script is
  # queued: the process then waits in `ExBashkit.Caller` for the answer.
  defp waiting_caller(session, script) do
    caller = spawn(fn -> Session.exec(session, script) end)
    wait_until_waiting(caller)
    caller
  end

  defp wait_until_waiting(pid) do
    case Process.info(pid, [:status, :current_function]) do
      [status: :waiting, current_function: {ExBashkit.Caller, _, _}] ->
        :ok

      _ ->
        Process.sleep(1)
        wait_until_waiting(pid)
    end
  end

  # Scripts under test start with `touch /started`; stat/2 does not queue
  # behind the script, so it can watch for that.
  defp wait_until_running(session) do
    case Session.stat(session, "/started") do
      {:ok, _} ->
        :ok

      {:error, _} ->
        Process.sleep(5)
        wait_until_running(session)
    end
  end
end
