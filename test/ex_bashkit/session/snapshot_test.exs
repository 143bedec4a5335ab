defmodule ExBashkit.SnapshotTest do
  use ExBashkit.Case, async: true

  @moduletag timeout: 120_000

  defp populated do
    session = Session.new()

    run(session, """
    x=42
    export EXPORTED=yes
    arr=(a "b c" d)
    declare -A map=([k]=v)
    greet() { echo "hello $1"; }
    alias ll='echo aliased'
    shopt -s expand_aliases
    mkdir -p /work/deep && cd /work
    echo data > /work/deep/file.txt
    """)

    :ok = Session.write_file(session, "/bin.dat", <<0, 1, 2, 255>>)
    session
  end

  defp restored(bytes, opts \\ []) do
    {:ok, session} = Session.restore(Session.new(), bytes, opts)
    session
  end

  describe "round trip" do
    test "variables, arrays, functions, aliases, cwd and files" do
      {:ok, bytes} = Session.snapshot(populated())
      session = restored(bytes)

      assert %Result{stdout: "42 yes b c v hello ada /work\n"} =
               run(session, ~S|echo $x $EXPORTED "${arr[1]}" ${map[k]} "$(greet ada)" "$(pwd)"|)

      assert %Result{stdout: "aliased\n"} = run(session, "ll")
      assert {:ok, "data\n"} = Session.read_file(session, "/work/deep/file.txt")
      assert {:ok, <<0, 1, 2, 255>>} = Session.read_file(session, "/bin.dat")
    end

    test "exclude_filesystem keeps the shell state and leaves the target's files" do
      {:ok, bytes} = Session.snapshot(populated(), exclude_filesystem: true)
      target = Session.new(files: %{"/mine.txt" => "target's own\n"})
      {:ok, target} = Session.restore(target, bytes)

      assert %Result{stdout: "42\n"} = run(target, "echo $x")
      assert {:ok, "target's own\n"} = Session.read_file(target, "/mine.txt")
      assert {:error, _} = Session.read_file(target, "/work/deep/file.txt")
    end

    test "exclude_functions leaves functions out" do
      {:ok, with_functions} = Session.snapshot(populated())
      {:ok, bytes} = Session.snapshot(populated(), exclude_functions: true)
      session = restored(bytes)

      assert %Result{stdout: "42\n"} = run(session, "echo $x")
      assert %Result{exit_code: 127} = run(session, "greet ada")
      assert byte_size(bytes) < byte_size(with_functions)
    end

    test "a snapshot is taken after the running script, not in its middle" do
      session = Session.new()
      test = self()
      script = "x=before; echo running; sleep 0.3; x=after"
      task = Task.async(fn -> Session.exec(session, script, stream_to: {test, :s}) end)
      assert_receive {:ex_bashkit, :s, {:stdout, "running\n"}}

      {:ok, bytes} = Session.snapshot(session)
      assert {:ok, _} = Task.await(task)
      assert %Result{stdout: "after\n"} = run(restored(bytes), "echo $x")
    end

    test "a snapshot restores in another VM" do
      {:ok, bytes} = Session.snapshot(populated())
      {:ok, peer, _node} = :peer.start_link(%{connection: :standard_io, args: peer_code_path()})

      try do
        assert :peer.call(peer, ExBashkit.Test.Remote, :os_pid, []) != System.pid()

        assert {:ok, "42 hello peer\n"} =
                 :peer.call(peer, ExBashkit.Test.Remote, :restore_and_run, [
                   bytes,
                   ~S|echo $x "$(greet peer)"|
                 ])
      after
        :peer.stop(peer)
      end
    end
  end

  describe "keys" do
    test "a keyed snapshot restores with its key only" do
      {:ok, bytes} = Session.snapshot(populated(), key: "s3cret")

      assert %Result{stdout: "42\n"} = run(restored(bytes, key: "s3cret"), "echo $x")

      for opts <- [[], [key: "wrong"], [key: "s3cret!"]] do
        assert {:error, message} = Session.restore(Session.new(), bytes, opts)
        assert message =~ "integrity check failed"
      end
    end

    test "a key on unkeyed bytes is refused" do
      {:ok, bytes} = Session.snapshot(populated())
      assert {:error, message} = Session.restore(Session.new(), bytes, key: "s3cret")
      assert message =~ "HMAC mismatch"
    end
  end

  describe "bad bytes leave the target untouched" do
    setup do
      target = Session.new(files: %{"/keep.txt" => "kept\n"})
      run(target, "marker=untouched; cd /tmp")
      %{target: target}
    end

    defp assert_untouched(target) do
      assert %Result{stdout: "untouched /tmp\n"} = run(target, ~S|echo $marker "$(pwd)"|)
      assert {:ok, "kept\n"} = Session.read_file(target, "/keep.txt")
    end

    test "empty, garbage and truncated bytes", %{target: target} do
      {:ok, bytes} = Session.snapshot(populated())

      for bad <- [
            "",
            "garbage",
            binary_part(bytes, 0, 31),
            binary_part(bytes, 0, 32),
            binary_part(bytes, 0, div(byte_size(bytes), 2)),
            binary_part(bytes, 0, byte_size(bytes) - 1)
          ] do
        assert {:error, _} = Session.restore(target, bad)
      end

      assert_untouched(target)
    end

    test "every single-byte flip of a small snapshot is rejected", %{target: target} do
      source = Session.new()
      run(source, "x=1; echo small > /s")
      {:ok, bytes} = Session.snapshot(source)

      for i <- 0..(byte_size(bytes) - 1) do
        <<before::binary-size(i), byte, rest::binary>> = bytes
        flipped = <<before::binary, Bitwise.bxor(byte, 0xFF), rest::binary>>
        assert {:error, _} = Session.restore(target, flipped), "flip at byte #{i} was accepted"
      end

      assert_untouched(target)
    end

    test "a keyed snapshot with a flipped byte is rejected", %{target: target} do
      {:ok, bytes} = Session.snapshot(populated(), key: "k")
      <<head::binary-size(100), byte, rest::binary>> = bytes
      tampered = <<head::binary, Bitwise.bxor(byte, 1), rest::binary>>

      assert {:error, _} = Session.restore(target, tampered, key: "k")
      assert_untouched(target)
    end
  end

  describe "capabilities" do
    test "the target keeps its builtins, limits and mounts" do
      source = Session.new(builtins: %{"kv" => fn _ -> {:ok, "source\n"} end})
      run(source, "x=1")
      {:ok, bytes} = Session.snapshot(source)

      host = host_dir!("snapshot")
      File.write!(Path.join(host, "h.txt"), "host file\n")

      target =
        Session.new(
          builtins: %{"kv" => fn _ -> {:ok, "target\n"} end},
          limits: [max_commands: 20],
          mounts: [{"/host", host, :read_only}]
        )

      {:ok, target} = Session.restore(target, bytes)

      assert %Result{stdout: "1 target\n"} = run(target, "echo $x $(kv)")
      assert %Result{stdout: "host file\n"} = run(target, "cat /host/h.txt")
      assert {:error, message} = Session.exec(target, "for i in $(seq 100); do :; done")
      assert message =~ ":max_commands"
    end

    test "a snapshot from a session with builtins the target lacks is refused" do
      {:ok, bytes} = Session.snapshot(Session.new(builtins: %{"kv" => fn _ -> {:ok, ""} end}))
      assert {:error, message} = Session.restore(Session.new(), bytes)
      assert message =~ "missing builtins: kv"
    end
  end

  describe "validation" do
    test "bad options raise ArgumentError" do
      session = Session.new()

      assert_raise ArgumentError, ~r/:key must be a non-empty binary/, fn ->
        Session.snapshot(session, key: :secret)
      end

      assert_raise ArgumentError, ~r/:key must be a non-empty binary/, fn ->
        Session.snapshot(session, key: "")
      end

      assert_raise ArgumentError, ~r/:exclude_filesystem must be a boolean/, fn ->
        Session.snapshot(session, exclude_filesystem: 1)
      end

      assert_raise ArgumentError, ~r/unknown keys \[:compress\]/, fn ->
        Session.snapshot(session, compress: true)
      end

      assert_raise ArgumentError, ~r/snapshot must be a binary/, fn ->
        Session.restore(session, :bytes)
      end
    end
  end

  defp peer_code_path do
    Enum.flat_map(:code.get_path(), &[~c"-pa", &1])
  end
end
