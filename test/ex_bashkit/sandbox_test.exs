defmodule ExBashkit.SandboxTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.{Result, Sandbox, Server, Session, Tool}
  alias ExBashkit.Sandbox.{Contract, Target}
  alias ExBashkit.Test.Counted

  doctest ExBashkit.Sandbox
  doctest ExBashkit.Sandbox.Contract
  doctest ExBashkit.Sandbox.Target

  test "the protocol and the list of operations name the same functions" do
    from_list = for {name, arguments} <- Contract.operations(), do: {name, length(arguments) + 1}
    assert Enum.sort(Sandbox.__protocol__(:functions)) == Enum.sort(from_list)

    # Every operation is a function of Session and of Server, at that arity
    # (function_exported?/3 answers false for a module not loaded yet).
    Enum.each([Session, Server], &Code.ensure_loaded!/1)

    for {name, arity} <- from_list do
      assert function_exported?(Session, name, arity), "Session.#{name}/#{arity}"
      assert function_exported?(Server, name, arity), "Server.#{name}/#{arity}"
    end
  end

  # The same calls, the same answers, from every backend.
  defp exercise(sandbox) do
    [
      Sandbox.mkdir(sandbox, "/w/d", parents: true),
      Sandbox.mkdir(sandbox, "/w/d", []),
      Sandbox.write_file(sandbox, "/w/d/f", ["a", "b"]),
      Sandbox.read_file(sandbox, "/w/d/f"),
      Sandbox.stat(sandbox, "/w/d/f", []),
      Sandbox.chmod(sandbox, "/w/d/f", 0o600, []),
      Sandbox.stat(sandbox, "/w/d/f", details: true)
      |> elem(1)
      |> Map.take([:type, :size, :mode]),
      Sandbox.rename(sandbox, "/w/d/f", "/w/g", []),
      Sandbox.list_dir(sandbox, "/w", []),
      Sandbox.remove(sandbox, "/w/d", recursive: true),
      Sandbox.read_file(sandbox, "/w/d/f") |> elem(0),
      sandbox |> Sandbox.exec("x=1; cat /w/g; exit 3", []) |> without_timings(),
      Sandbox.cancel(sandbox),
      restored(sandbox)
    ]
  end

  # A snapshot restored in place: `:ok`, and the state it held.
  defp restored(sandbox) do
    {:ok, snapshot} = Sandbox.snapshot(sandbox, [])
    :ok = Sandbox.write_file(sandbox, "/w/g", "changed")
    {Sandbox.restore(sandbox, snapshot, []), Sandbox.read_file(sandbox, "/w/g")}
  end

  test "only what names a server is a sandbox among atoms and tuples" do
    for value <- [nil, true, {1, 2, 3}, {"name", :node}] do
      assert_raise Protocol.UndefinedError, ~r/only as a server's name/, fn ->
        Sandbox.read_file(value, "/x")
      end
    end
  end

  # What a script cost is the same everywhere but for the clock and the
  # allocator's bookkeeping.
  defp without_timings({:ok, %Result{stats: stats} = result}),
    do: {:ok, %{result | stats: %{stats | wall_us: 0, cpu_us: 0, peak_memory_bytes: 0}}}

  defp backends do
    {:ok, server} = Server.start()
    on_exit(fn -> Server.stop(server) end)

    [
      Session.new(),
      Session.new(isolation: :process),
      server,
      Counted.new()
    ]
  end

  test "every backend answers every operation in the same shape" do
    [first | others] = Enum.map(backends(), &exercise/1)

    assert [
             :ok,
             {:error, _exists},
             :ok,
             {:ok, "ab"},
             {:ok, %{type: :file, size: 2}},
             :ok,
             %{type: :file, size: 2, mode: 0o600},
             :ok,
             {:ok, [{"d", :dir}, {"g", :file}]},
             :ok,
             :error,
             {:ok, %Result{stdout: "ab", exit_code: 3}},
             :idle,
             # restore answers :ok everywhere, and the state is the snapshot's
             {:ok, {:ok, "ab"}}
           ] = first

    for answers <- others, do: assert(answers == first)
  end

  test "a snapshot taken from one backend restores into any other, in place" do
    [from | backends] = backends()
    {:ok, _} = Sandbox.exec(from, "cd /tmp && v=carried && echo f > /f", [])
    {:ok, snapshot} = Sandbox.snapshot(from, [])

    for sandbox <- backends do
      assert :ok = Sandbox.restore(sandbox, snapshot, [])

      assert {:ok, %Result{stdout: "/tmp carried f\n"}} =
               Sandbox.exec(sandbox, "echo $(pwd) $v $(cat /f)", [])
    end

    assert {:error, _} = Sandbox.restore(from, "not a snapshot", [])
  end

  test "the tools run on a backend of one's own, through the protocol only" do
    counted = Counted.new()
    [bash, _read, write | _] = Tool.all(counted)

    assert {:ok, _} = Tool.call(write, %{"path" => "/notes/a.txt", "content" => "hello\n"})

    assert {:ok, "exit code: 0\nstdout:\nhello\n"} =
             Tool.call(bash, %{"command" => "cat /notes/a.txt"})

    assert Counted.calls(counted) >= 3
  end

  test "validate! names the option it rejects" do
    for bad <- [nil, true, "name", 42, %{}, %URI{}, {1, 2}] do
      assert_raise ArgumentError, ~r/^:attach must be an ExBashkit.Session/, fn ->
        Target.validate!(bad, ":attach")
      end
    end

    session = Session.new()
    assert Target.validate!(session, :target) == session
    assert Target.validate!({:global, :x}, :target) == {:global, :x}
    assert Target.validate!({:via, Registry, {R, 1}}, :target) == {:via, Registry, {R, 1}}
    assert Target.validate!({:name, :node@host}, :target) == {:name, :node@host}
  end
end
