defmodule ExBashkit.PeerTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.Peer

  @moduletag timeout: 120_000

  doctest ExBashkit.Peer

  describe "results" do
    test "output and the raw return value" do
      assert {:ok, %{output: "a\nb", result: %{list: [1, 2]}}} =
               Peer.run(~S|IO.puts("a"); IO.write("b"); %{list: [1, 2]}|)
    end

    test "errors are normalized to exceptions, exits and throws kept as they are" do
      assert {:error, {:error, %ArithmeticError{}, [_ | _]}, %{output: ""}} = Peer.run("1 / 0")
      assert {:error, {:error, %RuntimeError{message: "boom"}, _}, _} = Peer.run(~S|raise "boom"|)
      assert {:error, {:exit, :bye, _}, _} = Peer.run("exit(:bye)")
      assert {:error, {:throw, :ball, _}, _} = Peer.run("throw(:ball)")
      assert {:error, {:error, %TokenMissingError{}, _}, _} = Peer.run("1 +")
      assert {:error, {:error, %SyntaxError{}, _}, _} = Peer.run("1 + * 2")
    end

    test "a killed evaluation, a linked crash and System.halt are errors, not raises" do
      assert {:error, {:exit, :killed, []}, _} = Peer.run("Process.exit(self(), :kill)")

      assert {:error, {:exit, {%RuntimeError{message: "linked"}, _}, []}, _} =
               Peer.run(~S|spawn_link(fn -> raise "linked" end); Process.sleep(5_000)|)

      assert {:error, :noconnection, %{output: "going\n"}} =
               Peer.run(~S|IO.puts("going"); System.halt(3)|)
    end

    test "output from spawned Tasks is captured" do
      code = ~S"""
      1..3
      |> Enum.map(fn i -> Task.async(fn -> IO.puts("task #{i}") end) end)
      |> Task.await_many()
      """

      assert {:ok, %{output: output}} = Peer.run(code)

      assert output |> String.split("\n", trim: true) |> Enum.sort() == [
               "task 1",
               "task 2",
               "task 3"
             ]
    end

    test "ExBashkit itself works inside the peer" do
      assert {:ok, %{result: {:ok, %ExBashkit.Result{stdout: "from the peer\n"}}}} =
               Peer.run(~S|ExBashkit.exec("echo from the peer")|)
    end
  end

  describe "a clean slate every time" do
    test "a module defined in one run does not exist in the next" do
      assert {:ok, %{result: 42}} =
               Peer.run("defmodule Scratch do def x, do: 42 end; Scratch.x()")

      assert {:ok, %{result: false}} = Peer.run("Code.ensure_loaded?(Scratch)")
    end

    test "every run is a different node" do
      {:ok, %{result: first}} = Peer.run("node()")
      {:ok, %{result: second}} = Peer.run("node()")
      assert first != second and first != node()
    end

    test "protocols are consolidated as in the host" do
      host = Protocol.consolidated?(Enumerable)
      assert {:ok, %{result: ^host}} = Peer.run("Protocol.consolidated?(Enumerable)")
    end

    test "the host's environment is not inherited; :env sets the peer's" do
      System.put_env("EX_BASHKIT_PEER_SECRET", "hunter2")

      assert {:ok, %{result: nil}} = Peer.run(~S|System.get_env("EX_BASHKIT_PEER_SECRET")|)

      assert {:ok, %{result: "given"}} =
               Peer.run(~S|System.get_env("GIVEN")|, env: %{"GIVEN" => "given"})
    end
  end

  describe "options" do
    test "setup as a string, quoted AST, or a list, in order, with its output dropped" do
      assert {:ok, %{output: "code\n", result: 3}} =
               Peer.run(~S|IO.puts("code"); x + y|,
                 setup: ["x = 1", quote(do: var!(y) = var!(x) + 1), ~S|IO.puts("setup")|]
               )

      assert {:ok, %{result: 5}} = Peer.run("z", setup: quote(do: var!(z) = 5))

      assert {:ok, %{result: "M"}} =
               Peer.run(~S|upcase("m")|, setup: "import String, only: [upcase: 1]")
    end

    test "a failing setup is the run's error" do
      assert {:error, {:error, %RuntimeError{message: "setup"}, _}, %{output: ""}} =
               Peer.run("1", setup: ~S|raise "setup"|)
    end

    test "output is capped as produced, with a notice; :infinity keeps it all" do
      code = ~S|for _ <- 1..1_000, do: IO.write(String.duplicate("x", 1_000))|

      assert {:ok, %{output: output}} = Peer.run(code, max_output: 5_000)
      assert output == String.duplicate("x", 5_000) <> "\n... (output truncated at 5000 bytes)\n"

      assert {:ok, %{output: output}} = Peer.run(code, max_output: :infinity)
      assert byte_size(output) == 1_000_000
    end

    test "a timeout keeps the output produced so far" do
      assert {:error, :timeout, %{output: "started\n"}} =
               Peer.run(~S|IO.puts("started"); Process.sleep(:infinity)|, timeout: 3_000)
    end

    test "output cut before a timeout still carries the notice" do
      assert {:error, :timeout, %{output: output}} =
               Peer.run(~S|IO.write(String.duplicate("y", 100)); Process.sleep(:infinity)|,
                 timeout: 3_000,
                 max_output: 10
               )

      assert output == "yyyyyyyyyy\n... (output truncated at 10 bytes)\n"
    end

    test ":max_heap_size stops runaway memory" do
      assert {:error, {:exit, :killed, []}, _} =
               Peer.run("Enum.to_list(1..50_000_000)", max_heap_size: 1_000_000)
    end

    test "bad options raise ArgumentError" do
      for {opts, message} <- [
            {[timeout: 0], ~r/:timeout must be a positive integer/},
            {[max_output: -1], ~r/:max_output must be/},
            {[setup: "1 +"], ~r/:setup is not valid Elixir/},
            {[setup: [{:bad}]], ~r/:setup entries must be/},
            {[env: "X=1"], ~r/:env must be/},
            {[max_heap_size: :big], ~r/:max_heap_size must be a positive integer/},
            {[unknown: 1], ~r/unknown keys/}
          ] do
        assert_raise ArgumentError, message, fn -> Peer.run("1", opts) end
      end
    end
  end

  describe "the IO capture behaves like a unicode IO device" do
    test "chardata it cannot take is the writer's error, and the capture goes on" do
      code = ~S"""
      tried = fn write -> try do write.() rescue e -> e end end
      IO.write("a")
      no_code_point = tried.(fn -> :io.put_chars([1_114_112]) end)
      not_chardata = tried.(fn -> :io.put_chars(:foo) end)
      bad_utf8 = tried.(fn -> IO.write(<<255>>) end)
      IO.write("b")
      {no_code_point, not_chardata, bad_utf8}
      """

      assert {:ok, %{output: "ab", result: result}} = Peer.run(code)

      # As with any IO device, :io turns the device's error into a badarg.
      assert {%ArgumentError{}, %ArgumentError{}, %ArgumentError{}} = result
    end

    test "uncaught, the writer's error carries the user's frames only" do
      for code <- [":io.put_chars(:foo)", "IO.write(<<255>>)"] do
        assert {:error, {:error, _, stacktrace}, %{output: ""}} = Peer.run(code)
        assert [{:io, _, _, _} | _] = stacktrace
        assert internal_frames(stacktrace) == [], inspect(stacktrace)
      end

      for code <- ["1 / 0", ~S|raise "boom"|, "1 + * 2", "f = fn -> exit(:x) end; f.()"] do
        assert {:error, {_, _, stacktrace}, _} = Peer.run(code)
        assert internal_frames(stacktrace) == [], inspect(stacktrace)
      end
    end

    test "output is valid UTF-8: Latin-1 bytes are converted, cuts fall between characters" do
      assert {:ok, %{output: "ÿé"}} = Peer.run(~S|IO.binwrite(<<255, 233>>)|)

      assert {:ok, %{output: output}} = Peer.run(~S|IO.write("é")|, max_output: 1)
      assert output == "\n... (output truncated at 1 bytes)\n"

      # Every cut of a mix of 1- to 4-byte characters.
      text = "aé€😀"

      for max <- 0..byte_size(text) do
        assert {:ok, %{output: output}} = Peer.run("IO.write(#{inspect(text)})", max_output: max)
        kept = String.replace(output, ~r/\n\.\.\. \(output truncated.*\n\z/, "")
        assert String.valid?(kept) and String.starts_with?(text, kept), inspect({max, output})
        assert byte_size(kept) <= max and max - byte_size(kept) < 4
      end
    end

    test "standard error is captured with standard output, in the order written" do
      code = ~S"""
      IO.puts("out 1")
      IO.puts(:stderr, "err 1")
      :io.format(:standard_error, "err ~p~n", [2])
      Task.async(fn -> IO.write(:standard_error, "err 3\n") end) |> Task.await()
      IO.puts("out 2")
      """

      assert {:ok, %{output: "out 1\nerr 1\nerr 2\nerr 3\nout 2\n"}} = Peer.run(code)
      # Setup's standard error is dropped like its standard output.
      assert {:ok, %{output: "x"}} = Peer.run(~S|IO.write("x")|, setup: ~S|IO.puts(:stderr, "s")|)
    end

    test "there is nothing to read" do
      assert {:ok, %{result: {:eof, :eof}}} = Peer.run(~S|{IO.gets("? "), IO.read(:line)}|)
    end
  end

  test "a run inside a run boots its own VM" do
    code = ~S"""
    {:ok, %{output: "inner\n", result: 2}} = ExBashkit.Peer.run(~S|IO.puts("inner"); 1 + 1|)
    ExBashkit.Peer.run("node()")
    """

    assert {:ok, %{output: "", result: {:ok, %{result: inner_node}}}} = Peer.run(code)
    assert inner_node not in [node() | Node.list(:hidden)]
  end

  test "10 runs at once" do
    results =
      1..10
      |> Enum.map(fn i -> Task.async(fn -> Peer.run("#{i} * 10") end) end)
      |> Task.await_many(60_000)

    assert Enum.map(results, fn {:ok, %{result: r}} -> r end) == Enum.map(1..10, &(&1 * 10))
  end

  @internal [ExBashkit.Peer.Evaluator, Code, Module.ParallelChecker, :elixir, :erl_eval]
  defp internal_frames(stacktrace) do
    Enum.filter(stacktrace, fn {module, _, _, _} ->
      module in @internal or String.starts_with?(Atom.to_string(module), "elixir_")
    end)
  end
end
