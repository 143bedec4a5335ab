defmodule ExBashkit.BadArgumentsTest do
  # Every public function, thrown a few hundred generated wrong arguments:
  # each call returns normally or raises an ArgumentError that says what
  # was wrong; no other exception, no generic "argument error".
  use ExBashkit.Case, async: true

  alias ExBashkit.Peer

  @moduletag timeout: 300_000

  defmodule SomeStruct do
    @moduledoc false
    defstruct a: 1
  end

  # Values of every shape, none of which is a session, a script or a
  # keyword list of valid options.
  defp bad_values do
    [
      nil,
      true,
      :atom,
      -1,
      0,
      2 ** 70,
      -2 ** 70,
      1.5,
      "",
      "text",
      <<255, 0, 1>>,
      [],
      [1, 2],
      ["a" | "b"],
      [{:a, 1} | :tail],
      [a: nil],
      [nonsense: 1],
      %{},
      %{"a" => 1},
      %SomeStruct{},
      %ExBashkit.Result{},
      {1, 2},
      {},
      self(),
      make_ref(),
      fn -> :ok end,
      fn _, _ -> :ok end,
      %Session{resource: make_ref(), callbacks: nil},
      %Session{resource: nil, callbacks: nil}
    ]
  end

  @session_options ExBashkit.Session.Options.supported()

  @peer_options [:timeout, :max_output, :setup, :env, :max_heap_size]

  setup_all do
    :rand.seed(:exsss, {10, 20, 30})
    %{session: Session.new(files: %{"/f" => "x"})}
  end

  defp pick(list), do: Enum.at(list, :rand.uniform(length(list)) - 1)

  # Calls `fun` and checks the outcome: a value, or an ArgumentError whose
  # message is specific.
  defp check(description, fun) do
    fun.()
  rescue
    error in ArgumentError ->
      message = Exception.message(error)

      assert is_binary(message) and message != "" and message != "argument error",
             "#{description}: generic ArgumentError #{inspect(message)}"

    other ->
      flunk("#{description} raised #{inspect(other.__struct__)}: #{Exception.message(other)}")
  end

  test "every session function, with a bad value in each position", %{session: session} do
    calls = [
      {"exec/2", 2, fn [s, a] -> Session.exec(s, a) end, [session, "true"]},
      {"read_file/2", 2, fn [s, a] -> Session.read_file(s, a) end, [session, "/f"]},
      {"write_file/3", 3, fn [s, a, b] -> Session.write_file(s, a, b) end, [session, "/g", "x"]},
      {"list_dir/2", 2, fn [s, a] -> Session.list_dir(s, a) end, [session, "/"]},
      {"mkdir/3", 3, fn [s, a, b] -> Session.mkdir(s, a, b) end,
       [session, "/d", [parents: true]]},
      {"remove/3", 3, fn [s, a, b] -> Session.remove(s, a, b) end, [session, "/g", []]},
      {"rename/3", 3, fn [s, a, b] -> Session.rename(s, a, b) end, [session, "/g", "/h"]},
      {"stat/2", 2, fn [s, a] -> Session.stat(s, a) end, [session, "/f"]},
      {"snapshot/2", 2, fn [s, a] -> Session.snapshot(s, a) end, [session, []]},
      {"restore/3", 3, fn [s, a, b] -> Session.restore(s, a, b) end, [session, "junk", []]}
    ]

    count =
      for {name, arity, call, valid} <- calls,
          position <- 0..(arity - 1),
          bad <- bad_values(),
          reduce: 0 do
        count ->
          args = List.replace_at(valid, position, bad)
          check("Session.#{name} with #{inspect(args)}", fn -> call.(args) end)
          count + 1
      end

    assert count > 600
  end

  test "Session.new/1 with bad values for every option, alone and combined" do
    single =
      for option <- @session_options, bad <- bad_values() do
        [{option, bad}]
      end

    combined =
      for _ <- 1..200 do
        for _ <- 1..3, do: {pick(@session_options), pick(bad_values())}
      end

    for opts <- single ++ combined ++ bad_values() do
      check("Session.new(#{inspect(opts)})", fn -> Session.new(opts) end)
    end
  end

  test "nested bad values inside option collections" do
    nested =
      for bad <- bad_values() do
        [
          env: [{"K", bad}],
          env: %{bad => "v"},
          files: %{"/f" => bad},
          files: [{bad, "x"}],
          limits: [timeout_ms: bad],
          limits: %{bad => 1},
          mounts: [{"/m", bad, :read_only}],
          mounts: [{bad, System.tmp_dir!(), :read_only}],
          mounts: [bad],
          allowed_mount_paths: [bad],
          allow_net: [bad],
          builtins: %{"b" => bad},
          builtins: [{bad, fn _ -> :ok end}],
          virtual_fs: %{"/v" => bad},
          virtual_fs: %{bad => fn _ -> :ok end},
          virtual_fs: %{"/v" => {bad, 1}},
          python: [name: bad],
          python: [names: [bad]]
        ]
      end

    for opts <- nested, option <- opts do
      check("Session.new([#{inspect(option)}])", fn -> Session.new([option]) end)
    end
  end

  test "ExBashkit.exec/1 and Peer.run/2 with bad arguments" do
    for bad <- bad_values() do
      check("ExBashkit.exec(#{inspect(bad)})", fn -> ExBashkit.exec(bad) end)
      check("Peer.run(#{inspect(bad)})", fn -> Peer.run(bad) end)
    end

    # Each option gets a value none of them accepts, so no peer is booted.
    never_valid = [
      -1,
      1.5,
      "text",
      <<255>>,
      %SomeStruct{},
      self(),
      make_ref(),
      {1, 2},
      ["a" | "b"]
    ]

    for option <- @peer_options, bad <- never_valid do
      check("Peer.run(\"1\", #{inspect([{option, bad}])})", fn ->
        Peer.run("1", [{option, bad}])
      end)
    end

    for bad <- [nil, :atom, %{}, %SomeStruct{}, "opts", [1, 2], [{:a, 1} | :tail], [nonsense: 1]] do
      check("Peer.run(\"1\", #{inspect(bad)})", fn -> Peer.run("1", bad) end)
    end
  end

  test "inspecting a hand-built session does not raise" do
    for resource <- [make_ref(), nil, :x, 1] do
      assert inspect(%Session{resource: resource}) == "#ExBashkit.Session<invalid>"
    end
  end

  test "a hand-built session with callbacks is refused naming the session" do
    callbacks = %ExBashkit.Callbacks{builtins: %{"hi" => fn _ -> {:ok, "hi"} end}}
    session = %Session{resource: make_ref(), callbacks: callbacks}

    assert_raise ArgumentError, ~r/not a session/, fn -> Session.exec(session, "hi") end
  end

  test "a session with many entries is built all the same" do
    env = Map.new(1..5_000, &{"V#{&1}", "#{&1}"})
    session = Session.new(env: env, allow_net: for(i <- 1..100, do: "https://h#{i}.example"))
    assert {:ok, %ExBashkit.Result{stdout: "5000\n"}} = Session.exec(session, "echo $V5000")
  end
end
