defmodule ExBashkit.Session.ForkTest do
  # `Session.fork/1,2`: independent copies of a session's state and
  # options, in the VM (files shared until changed) and in workers.
  # Not async: two tests count the VM's live sessions and its memory.
  use ExBashkit.Case, async: false

  alias ExBashkit.Test.Memory

  @state """
  mkdir -p /work/src && cd /work
  printf 'line %s\\n' $(seq 3) > src/notes.txt
  export STAGE=draft
  count=1
  greet() { echo "hi $1"; }
  alias ll='echo listed'
  """

  defp stdout(session, script) do
    {:ok, result} = Session.exec(session, script)
    result.stdout
  end

  for isolation <- [:none, :process] do
    describe "isolation: #{isolation}" do
      @describetag isolation: isolation

      test "a copy has the session's files, variables, cwd, functions and aliases",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        {:ok, _} = Session.exec(session, @state)
        {:ok, copy} = Session.fork(session)

        probe =
          "pwd; cat src/notes.txt; echo $STAGE $count; greet ada; shopt -s expand_aliases; ll"

        assert stdout(copy, probe) == stdout(session, probe)
        assert stdout(copy, probe) =~ "/work\nline 1\nline 2\nline 3\ndraft 1\nhi ada\n"
        assert copy.id != session.id
      end

      test "what a copy changes is its own, and the original's changes are the original's",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        {:ok, _} = Session.exec(session, @state)
        {:ok, [left, right]} = Session.fork(session, 2)

        {:ok, _} = Session.exec(left, "echo left >> src/notes.txt; STAGE=left; rm -r /tmp; cd /")
        {:ok, _} = Session.exec(right, "echo right > src/new.txt; unset -f greet")
        {:ok, _} = Session.exec(session, "echo original >> src/notes.txt; count=9")

        assert stdout(left, "tail -1 /work/src/notes.txt; echo $STAGE; pwd; ls / | grep -c tmp") ==
                 "left\nleft\n/\n0\n"

        assert stdout(
                 right,
                 "tail -1 src/notes.txt; cat src/new.txt; type greet >/dev/null || echo gone"
               ) ==
                 "line 3\nright\ngone\n"

        assert stdout(session, "tail -1 src/notes.txt; echo $STAGE $count; ls src; ls -d /tmp") ==
                 "original\ndraft 9\nnotes.txt\n/tmp\n"
      end

      test "a copy keeps the session's options", %{isolation: isolation} do
        session =
          Session.new(
            isolation: isolation,
            env: [FROM: "options"],
            username: "ada",
            limits: [max_file_bytes: 100]
          )

        {:ok, copy} = Session.fork(session)
        assert stdout(copy, "echo $FROM; whoami") == "options\nada\n"

        {:ok, result} = Session.exec(copy, "head -c 200 /dev/zero > big; echo $?")
        refute result.stdout == "0\n"
        assert {:error, _} = Session.read_file(copy, "big")
      end

      test "a copy's builtins are the session's, and answer its scripts",
           %{isolation: isolation} do
        test = self()

        builtin = fn call ->
          send(test, {:called, call.args})
          {:ok, "pong\n"}
        end

        session = Session.new(isolation: isolation, builtins: %{"ping" => builtin})
        {:ok, copy} = Session.fork(session)
        task = Task.async(fn -> stdout(copy, "ping copy") end)
        assert Task.await(task) == "pong\n"
        assert_received {:called, ["copy"]}
        assert stdout(session, "ping original") == "pong\n"
        assert_received {:called, ["original"]}
      end

      test "a fork waits for the running script, and sees what it did",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        running = Task.async(fn -> Session.exec(session, "sleep 0.3; echo done > /tmp/mark") end)
        Process.sleep(50)
        {:ok, copy} = Session.fork(session)
        assert {:ok, _} = Task.await(running)
        assert Session.read_file(copy, "/tmp/mark") == {:ok, "done\n"}
      end

      test "a closed session does not fork", %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        :ok = Session.close(session)
        assert {:error, message} = Session.fork(session)
        assert is_binary(message)
      end

      test "the profile is not run again in a copy", %{isolation: isolation} do
        session = Session.new(isolation: isolation, profile: "echo ran >> /tmp/profile.log")
        {:ok, copy} = Session.fork(session)
        assert Session.read_file(copy, "/tmp/profile.log") == {:ok, "ran\n"}
      end
    end
  end

  test "a fork of a fork, and a snapshot of a copy restored elsewhere" do
    session = Session.new()
    {:ok, _} = Session.exec(session, @state)
    {:ok, copy} = Session.fork(session)
    {:ok, _} = Session.exec(copy, "echo second >> src/notes.txt")
    {:ok, grandchild} = Session.fork(copy)
    assert stdout(grandchild, "tail -1 src/notes.txt; echo $STAGE") == "second\ndraft\n"

    {:ok, snapshot} = Session.snapshot(grandchild)
    {:ok, restored} = Session.restore(Session.new(), snapshot)
    assert stdout(restored, "cd /work && cat src/notes.txt | wc -l") == "4\n"
  end

  test "copies share a host mount's directory" do
    dir = host_dir!("fork")
    session = Session.new(mounts: [{"/host", dir, :read_write}])
    {:ok, copy} = Session.fork(session)
    {:ok, _} = Session.exec(copy, "echo from-copy > /host/shared.txt")
    assert File.read!(Path.join(dir, "shared.txt")) == "from-copy\n"
    assert stdout(session, "cat /host/shared.txt") == "from-copy\n"
  end

  test "a big file is shared, not copied: forks cost the same whatever the session holds" do
    session = Session.new(limits: [max_file_bytes: 20_000_000, max_fs_bytes: 40_000_000])
    :ok = Session.write_file(session, "/tmp/big", :binary.copy("x", 10_000_000))
    {{:ok, copies}, growth_kb} = Memory.peak_growth_kb(fn -> Session.fork(session, 20) end)
    # Twenty copies of 10 MB would be 200 MB; shared, they take tens of KB each.
    assert growth_kb < 50_000
    assert {:ok, %{size: 10_000_000}} = Session.stat(hd(copies), "/tmp/big")
    {:ok, _} = Session.exec(hd(copies), "echo changed > /tmp/big")
    assert {:ok, %{size: 10_000_000}} = Session.stat(session, "/tmp/big")
  end

  test "copies are reclaimed when dropped, however many are made" do
    session = Session.new()
    {:ok, _} = Session.exec(session, @state)
    base = ExBashkit.Native.live_sessions()

    for _ <- 1..10 do
      {:ok, copies} = Session.fork(session, 10)
      assert length(copies) == 10
    end

    :erlang.garbage_collect()
    assert wait_until(fn -> ExBashkit.Native.live_sessions() <= base end)
  end

  test "a count that is not a positive integer is refused" do
    session = Session.new()

    for count <- [0, -1, 1.5, :two] do
      assert_raise ArgumentError, ~r/fork count must be a positive integer/, fn ->
        Session.fork(session, count)
      end
    end
  end
end
