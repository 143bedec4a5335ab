defmodule ExBashkit.Session.CheckpointTest do
  # `Session.checkpoint/1`, `rollback/2` and `checkpoints/1`: a session's
  # state kept in memory and put back, within bounds.
  use ExBashkit.Case, async: true

  defp stdout(session, script) do
    {:ok, result} = Session.exec(session, script)
    result.stdout
  end

  @probe "pwd; cat /work/notes.txt 2>&1; echo $STAGE $count; type greet >/dev/null 2>&1 && greet; " <>
           "ll 2>/dev/null; ls /work"

  test "a rollback puts back the files and the shell state of its checkpoint" do
    session = Session.new()

    {:ok, _} =
      Session.exec(session, """
      mkdir -p /work && cd /work && echo first > notes.txt
      export STAGE=one; count=1; greet() { echo hello; }; alias ll='echo listed'
      shopt -s expand_aliases
      """)

    before = stdout(session, @probe)
    {:ok, id} = Session.checkpoint(session)

    {:ok, _} =
      Session.exec(session, """
      echo second >> notes.txt; touch extra.txt; cd /tmp
      export STAGE=two; unset count; unset -f greet; unalias ll
      """)

    refute stdout(session, @probe) == before
    assert Session.rollback(session, id) == :ok
    assert stdout(session, @probe) == before
    assert before =~ "/work\nfirst\none 1\nhello\nlisted\nnotes.txt\n"
  end

  test "checkpoints after the one rolled back to stay, to go forward again" do
    session = Session.new()
    {:ok, one} = Session.checkpoint(session)
    {:ok, _} = Session.exec(session, "echo 2 > /tmp/v")
    {:ok, two} = Session.checkpoint(session)
    {:ok, _} = Session.exec(session, "echo 3 > /tmp/v")
    {:ok, three} = Session.checkpoint(session)
    assert Session.checkpoints(session) == {:ok, [one, two, three]}

    :ok = Session.rollback(session, one)
    assert {:error, _} = Session.read_file(session, "/tmp/v")
    :ok = Session.rollback(session, three)
    assert Session.read_file(session, "/tmp/v") == {:ok, "3\n"}
    :ok = Session.rollback(session, two)
    assert Session.read_file(session, "/tmp/v") == {:ok, "2\n"}
    assert Session.checkpoints(session) == {:ok, [one, two, three]}
  end

  test "a change after a checkpoint does not reach into it" do
    session = Session.new()
    :ok = Session.write_file(session, "/tmp/log", "a\n")
    {:ok, id} = Session.checkpoint(session)

    {:ok, _} =
      Session.exec(session, "echo b >> /tmp/log; chmod 600 /tmp/log; mv /tmp/log /tmp/old")

    :ok = Session.rollback(session, id)
    assert Session.read_file(session, "/tmp/log") == {:ok, "a\n"}
    assert {:ok, %{mode: 0o644}} = Session.stat(session, "/tmp/log", details: true)
    assert {:error, _} = Session.read_file(session, "/tmp/old")
  end

  test "a checkpoint waits for the running script, and holds what it did" do
    session = Session.new()
    running = Task.async(fn -> Session.exec(session, "sleep 0.3; echo done > /tmp/mark") end)
    Process.sleep(50)
    {:ok, id} = Session.checkpoint(session)
    assert {:ok, _} = Task.await(running)
    {:ok, _} = Session.exec(session, "rm /tmp/mark")
    :ok = Session.rollback(session, id)
    assert Session.read_file(session, "/tmp/mark") == {:ok, "done\n"}
  end

  test "the latest 100 are kept" do
    session = Session.new()
    ids = for _ <- 1..105, do: elem(Session.checkpoint(session), 1)
    assert Session.checkpoints(session) == {:ok, Enum.drop(ids, 5)}
    assert {:error, "no checkpoint " <> _} = Session.rollback(session, hd(ids))
  end

  test "checkpoints hold at most the filesystem limit in files the session no longer has" do
    session = Session.new(limits: [max_fs_bytes: 1_000_000, max_file_bytes: 1_000_000])

    ids =
      for round <- 1..6 do
        # 600 KB that no other checkpoint shares, each round.
        :ok = Session.write_file(session, "/tmp/big", :binary.copy(<<round>>, 600_000))
        elem(Session.checkpoint(session), 1)
      end

    {:ok, kept} = Session.checkpoints(session)
    # Each older one holds 600 KB the session no longer has: one fits.
    assert kept == Enum.take(ids, -2)
    :ok = Session.rollback(session, hd(kept))
    assert {:ok, <<5, _::binary>>} = Session.read_file(session, "/tmp/big")
  end

  test "a copy starts with no checkpoints, and the original keeps its own" do
    session = Session.new()
    {:ok, id} = Session.checkpoint(session)
    {:ok, copy} = Session.fork(session)
    assert Session.checkpoints(copy) == {:ok, []}
    assert Session.checkpoints(session) == {:ok, [id]}
  end

  test "bad ids are refused, and a closed session takes none" do
    session = Session.new()

    for id <- [0, -1, "1", nil] do
      assert_raise ArgumentError, ~r/checkpoint id must be a positive integer/, fn ->
        Session.rollback(session, id)
      end
    end

    :ok = Session.close(session)
    assert {:error, message} = Session.checkpoint(session)
    assert message =~ "closed"
  end

  @tag isolation: :process
  test "an isolated session answers that it keeps none" do
    session = Session.new(isolation: :process)
    assert {:error, message} = Session.checkpoint(session)
    assert message =~ "snapshot"
    assert {:error, _} = Session.checkpoints(session)
  end
end
