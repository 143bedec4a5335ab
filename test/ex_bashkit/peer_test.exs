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

    test "exceptions, exits and throws are normalized like catch gives them" do
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
               Peer.run(~S|IO.puts("started"); Process.sleep(:infinity)|, timeout: 500)
    end

    test "output cut before a timeout still carries the notice" do
      assert {:error, :timeout, %{output: output}} =
               Peer.run(~S|IO.write(String.duplicate("y", 100)); Process.sleep(:infinity)|,
                 timeout: 500,
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

  test "10 runs at once" do
    results =
      1..10
      |> Enum.map(fn i -> Task.async(fn -> Peer.run("#{i} * 10") end) end)
      |> Task.await_many(60_000)

    assert Enum.map(results, fn {:ok, %{result: r}} -> r end) == Enum.map(1..10, &(&1 * 10))
  end
end
