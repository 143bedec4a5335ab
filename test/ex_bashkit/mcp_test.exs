defmodule ExBashkit.MCPTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.{MCP, Tool}
  alias ExBashkit.MCP.Stdio
  alias ExBashkit.Test.IOPipe

  doctest ExBashkit.MCP
  doctest ExBashkit.MCP.Stdio

  defp request(id, method, params \\ %{}),
    do: %{"jsonrpc" => "2.0", "id" => id, "method" => method, "params" => params}

  defp notification(method, params \\ %{}),
    do: %{"jsonrpc" => "2.0", "method" => method, "params" => params}

  defp initialize(version \\ "2025-06-18") do
    request(0, "initialize", %{
      "protocolVersion" => version,
      "capabilities" => %{},
      "clientInfo" => %{"name" => "test", "version" => "1"}
    })
  end

  defp ready(target \\ Session.new(), opts \\ []) do
    {_reply, mcp} = MCP.handle(MCP.new(target, opts), initialize())
    {nil, mcp} = MCP.handle(mcp, notification("notifications/initialized"))
    mcp
  end

  defp call(mcp, name, arguments, id \\ 1) do
    {reply, ^mcp} =
      MCP.handle(mcp, request(id, "tools/call", %{"name" => name, "arguments" => arguments}))

    reply
  end

  defp text(%{"result" => %{"content" => [%{"type" => "text", "text" => text}]}}), do: text

  describe "the lifecycle" do
    test "run_code: true adds the code runner's tool" do
      mcp = ready(Session.new(), run_code: true)
      arguments = %{"code" => "jq '.a + 1'", "language" => "bash", "input" => %{"a" => 41}}

      assert %{"result" => %{"content" => [%{"text" => "output: 42\nstdout:\n42\n"}]}} =
               call(mcp, "run_code", arguments)
    end

    test "initialize answers the revision, the tools capability and who we are" do
      mcp = MCP.new(Session.new(), name: "sandbox", version: "9.9", instructions: "Be careful.")
      {reply, mcp} = MCP.handle(mcp, initialize())

      assert reply == %{
               "jsonrpc" => "2.0",
               "id" => 0,
               "result" => %{
                 "protocolVersion" => "2025-06-18",
                 "capabilities" => %{"tools" => %{"listChanged" => false}},
                 "serverInfo" => %{"name" => "sandbox", "version" => "9.9"},
                 "instructions" => "Be careful."
               }
             }

      assert mcp.phase == :initialized

      assert {nil, %MCP{phase: :ready}} =
               MCP.handle(mcp, notification("notifications/initialized"))
    end

    test "the revision: the client's when we speak it, else ours" do
      for {asked, answered} <- [
            {"2025-06-18", "2025-06-18"},
            {"2025-03-26", "2025-03-26"},
            {"2024-11-05", "2024-11-05"},
            {"2025-11-25", "2025-06-18"},
            {"not a date", "2025-06-18"},
            {nil, "2025-06-18"}
          ] do
        {reply, _} = MCP.handle(MCP.new(Session.new()), initialize(asked))
        assert reply["result"]["protocolVersion"] == answered
      end
    end

    test "instructions: nil sends none; the version defaults to the library's" do
      {reply, _} = MCP.handle(MCP.new(Session.new(), instructions: nil), initialize())
      refute Map.has_key?(reply["result"], "instructions")

      assert reply["result"]["serverInfo"]["version"] ==
               to_string(Application.spec(:ex_bashkit, :vsn))
    end

    test "before initialize, only ping is served; initialize comes once" do
      mcp = MCP.new(Session.new())
      assert {%{"result" => %{}}, ^mcp} = MCP.handle(mcp, request(1, "ping"))

      for method <- ["tools/list", "tools/call"] do
        assert {%{"id" => 2, "error" => %{"code" => -32600, "message" => message}}, ^mcp} =
                 MCP.handle(mcp, request(2, method, %{"name" => "bash"}))

        assert message =~ "initialize first"
      end

      {_, mcp} = MCP.handle(mcp, initialize())

      assert {%{"error" => %{"code" => -32600, "message" => message}}, ^mcp} =
               MCP.handle(mcp, initialize())

      assert message =~ "already initialized"
    end
  end

  describe "JSON-RPC" do
    test "notifications and responses get no answer" do
      mcp = ready()

      for message <- [
            notification("notifications/cancelled", %{"requestId" => 99}),
            notification("notifications/whatever"),
            %{"jsonrpc" => "2.0", "id" => 5, "result" => %{}},
            %{"jsonrpc" => "2.0", "id" => 5, "error" => %{"code" => 1, "message" => "x"}}
          ] do
        assert {nil, ^mcp} = MCP.handle(mcp, message)
      end
    end

    test "an unknown method is -32601" do
      mcp = ready()

      for method <- ["resources/list", "prompts/list", "logging/setLevel", "nope"] do
        assert {%{
                  "id" => 3,
                  "error" => %{"code" => -32601, "message" => "Method not found: " <> ^method}
                }, _} = MCP.handle(mcp, request(3, method))
      end
    end

    test "what is not a JSON-RPC 2.0 request is -32600, answered to its id when it has a usable one" do
      mcp = ready()

      for {message, id} <- [
            {%{"id" => 1, "method" => "ping"}, 1},
            {%{"jsonrpc" => "1.0", "id" => "a", "method" => "ping"}, "a"},
            {%{"jsonrpc" => "2.0", "id" => 1, "method" => "ping", "params" => [1]}, 1},
            {%{"jsonrpc" => "2.0", "id" => nil, "method" => "ping"}, nil},
            {%{"jsonrpc" => "2.0", "id" => 1.5, "method" => "ping"}, nil},
            {%{"jsonrpc" => "2.0", "id" => %{}, "method" => "ping"}, nil},
            {%{"jsonrpc" => "2.0", "id" => 1, "method" => 42}, 1},
            {[request(1, "ping")], nil},
            {"ping", nil},
            {42, nil},
            {nil, nil}
          ] do
        assert {%{"jsonrpc" => "2.0", "id" => ^id, "error" => %{"code" => -32600}}, ^mcp} =
                 MCP.handle(mcp, message),
               inspect(message)
      end
    end

    test "handle_json/2: text that is not JSON is -32700; answers are one line of JSON" do
      mcp = ready()

      for text <- [
            "",
            "{",
            "nul",
            ~s({"a":1} {"b":2}),
            <<0xFF, 0xFE>>,
            String.duplicate("[", 10_000)
          ] do
        assert {reply, ^mcp} = MCP.handle_json(mcp, text)

        assert {:ok, %{"id" => nil, "error" => %{"code" => -32700}}} =
                 ExBashkit.JSON.decode(reply)
      end

      {reply, _} =
        MCP.handle_json(
          mcp,
          ~s({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"bash","arguments":{"command":"printf 'a\\\\nb\\\\x01\\\\xff'"}}})
        )

      refute reply =~ "\n"

      assert {:ok, %{"id" => "x", "result" => %{"isError" => false}} = decoded} =
               ExBashkit.JSON.decode(reply)

      assert text(decoded) =~ "a\nb\u0001\\xFF"
      assert {nil, ^mcp} = MCP.handle_json(mcp, ~s({"jsonrpc":"2.0","method":"notifications/x"}))
    end
  end

  describe "tools" do
    test "tools/list: each tool's name, description and JSON schema" do
      session = Session.new()
      {reply, _} = MCP.handle(ready(session), request(1, "tools/list"))
      tools = reply["result"]["tools"]

      assert Enum.map(tools, & &1["name"]) == [
               "bash",
               "read_file",
               "write_file",
               "edit_file",
               "list_dir",
               "grep",
               "glob"
             ]

      for {entry, tool} <- Enum.zip(tools, Tool.all(session)) do
        assert entry == %{
                 "name" => tool.name,
                 "description" => tool.description,
                 "inputSchema" => tool.parameters
               }
      end
    end

    test "tools/call runs in the one session of the connection" do
      session = Session.new()
      mcp = ready(session)

      assert %{"result" => %{"isError" => false}} =
               call(mcp, "write_file", %{"path" => "/work/notes.txt", "content" => "one\n"})

      assert text(
               call(mcp, "bash", %{"command" => "cd /work && echo two >> notes.txt && export X=3"})
             ) =~
               "exit code: 0"

      assert text(call(mcp, "read_file", %{"path" => "notes.txt"})) ==
               "     1\tone\n     2\ttwo\n"

      assert text(call(mcp, "bash", %{"command" => "echo $X; exit 4"})) ==
               "exit code: 4\nstdout:\n3\n"

      assert Session.read_file(session, "/work/notes.txt") == {:ok, "one\ntwo\n"}
      # A call with no arguments at all is a call with none.
      {reply, _} = MCP.handle(mcp, request(9, "tools/call", %{"name" => "list_dir"}))
      assert text(reply) =~ "notes.txt"
    end

    test "a tool's failure is a result the model reads (isError), not a protocol error" do
      mcp = ready()

      for {name, arguments, expected} <- [
            {"read_file", %{"path" => "/missing"}, ~r/file not found/},
            {"bash", %{"command" => 5}, ~r/"command" must be a string/},
            {"bash", %{}, ~r/Missing required argument "command"/},
            {"bash", %{"command" => "echo", "color" => "red"}, ~r/color/},
            {"bash", %{"command" => "sleep 5", "timeout_ms" => 50}, ~r/time/}
          ] do
        reply = call(mcp, name, arguments)
        assert reply["result"]["isError"] == true, inspect({name, arguments, reply})
        assert text(reply) =~ expected
      end
    end

    test "an unknown tool or params of the wrong shape are -32602" do
      mcp = ready()

      for params <- [
            %{"name" => "python", "arguments" => %{}},
            %{"arguments" => %{}},
            %{"name" => 7},
            %{"name" => "bash", "arguments" => "echo hi"},
            %{"name" => "bash", "arguments" => ["echo hi"]}
          ] do
        assert {%{"id" => 4, "error" => %{"code" => -32602, "message" => message}}, ^mcp} =
                 MCP.handle(mcp, request(4, "tools/call", params))

        if params["name"] == "python", do: assert(message =~ "The tools are: bash, read_file")
      end
    end

    test "a denial by the session's approval comes back as text the model can act on" do
      deny = fn %{commands: commands} ->
        if Enum.any?(commands, &(&1.name == "curl")), do: {:deny, "no network tools"}, else: :ok
      end

      mcp = ready(Session.new(approve: deny))
      reply = call(mcp, "bash", %{"command" => "echo start; curl http://127.0.0.1/"})
      assert reply["result"]["isError"]
      assert text(reply) =~ "no network tools"
      assert text(call(mcp, "bash", %{"command" => "echo fine"})) =~ "fine"
    end

    test "a server gone mid-conversation: the call fails as a result, the MCP server stays" do
      {:ok, server} = ExBashkit.Server.start(session: [])
      mcp = ready(server)
      assert text(call(mcp, "bash", %{"command" => "echo up"})) =~ "up"
      :ok = ExBashkit.Server.stop(server)

      reply = call(mcp, "bash", %{"command" => "echo up"})
      assert reply["result"]["isError"]
      assert text(reply) != ""
    end

    test "a list of tools of your own" do
      session = Session.new()
      mcp = ready([Tool.bash(session, name: "sh", max_output_bytes: 64)])
      {reply, _} = MCP.handle(mcp, request(1, "tools/list"))
      assert [%{"name" => "sh"}] = reply["result"]["tools"]
      assert text(call(mcp, "sh", %{"command" => "echo ok"})) =~ "ok"
      assert mcp.sandbox == nil
    end

    test "bad options raise ArgumentError naming them" do
      session = Session.new()

      for {target, opts, message} <- [
            {session, [name: ""], ":name"},
            {session, [version: 3], ":version"},
            {session, [instructions: ~c"x"], ":instructions"},
            {session, [tool_options: :x], ":tool_options"},
            {session, [tool_options: [max_output_bytes: 0]], "max_output_bytes"},
            {session, [colour: :red], ":colour"},
            {session, :x, "keyword list"},
            {5, [], "ExBashkit.MCP.new/2"},
            {[:not_a_tool], [], "ExBashkit.Tool"}
          ] do
        error = assert_raise ArgumentError, fn -> MCP.new(target, opts) end
        assert Exception.message(error) =~ message
      end
    end
  end

  describe "over stdio (ExBashkit.MCP.Stdio)" do
    setup do
      input = IOPipe.start()
      output = IOPipe.start()
      %{input: input, output: output}
    end

    defp serve(mcp, %{input: input, output: output}) do
      Task.async(fn -> Stdio.serve(mcp, input: input, output: output) end)
    end

    defp send_message(%{input: input}, message),
      do: IOPipe.feed(input, ExBashkit.JSON.encode!(message))

    defp next_reply(%{output: output}) do
      assert_receive {:io_pipe, ^output, line}

      assert String.ends_with?(line, "\n") and
               not String.contains?(String.trim_trailing(line), "\n")

      {:ok, reply} = ExBashkit.JSON.decode(line)
      reply
    end

    defp start_ready(pipes, target \\ Session.new()) do
      task = serve(MCP.new(target), pipes)
      send_message(pipes, initialize())
      assert %{"id" => 0, "result" => _} = next_reply(pipes)
      send_message(pipes, notification("notifications/initialized"))
      task
    end

    defp bash(id, command, extra \\ %{}),
      do:
        request(id, "tools/call", %{
          "name" => "bash",
          "arguments" => Map.put(extra, "command", command)
        })

    test "ping is answered while a call runs; a cancelled call gets no answer and its script stops",
         pipes do
      session = Session.new(limits: [timeout_ms: 600_000])
      task = start_ready(pipes, session)

      send_message(pipes, bash(1, "echo started > /started; sleep 300"))
      assert wait_until(fn -> Session.read_file(session, "/started") == {:ok, "started\n"} end)
      send_message(pipes, request(2, "ping"))
      assert %{"id" => 2, "result" => %{}} = next_reply(pipes)

      send_message(
        pipes,
        notification("notifications/cancelled", %{"requestId" => 1, "reason" => "user"})
      )

      send_message(pipes, bash(3, "echo after"))
      assert %{"id" => 3, "result" => %{"isError" => false}} = reply = next_reply(pipes)
      assert text(reply) =~ "after"
      # Calls are answered in order: the cancelled one would have come first.
      refute_received {:io_pipe, _, _}

      IOPipe.close(pipes.input)
      assert Task.await(task) == :ok
    end

    test "a call cancelled before its turn never runs; one cancelled before its script starts is still stopped",
         pipes do
      session = Session.new(limits: [timeout_ms: 600_000])
      task = start_ready(pipes, session)

      # Sent together: the cancel of 1 may come before its script started.
      send_message(pipes, bash(1, "sleep 300"))
      send_message(pipes, bash(2, "touch /ran"))
      send_message(pipes, notification("notifications/cancelled", %{"requestId" => 2}))
      send_message(pipes, notification("notifications/cancelled", %{"requestId" => 1}))
      send_message(pipes, bash(3, "ls /ran"))

      assert %{"id" => 3} = reply = next_reply(pipes)
      assert text(reply) =~ "No such file"
      IOPipe.close(pipes.input)
      assert Task.await(task) == :ok
    end

    test "a tool without a session to cancel in: its task is stopped", pipes do
      test = self()

      hang = %Tool{
        name: "hang",
        description: "Waits forever.",
        parameters: %{"type" => "object", "properties" => %{}},
        function: fn _ -> send(test, {:hanging, self()}) && Process.sleep(:infinity) end
      }

      task = start_ready(pipes, [hang, Tool.bash(Session.new())])
      send_message(pipes, request(1, "tools/call", %{"name" => "hang"}))
      assert_receive {:hanging, hanging}
      ref = Process.monitor(hanging)
      send_message(pipes, notification("notifications/cancelled", %{"requestId" => 1}))
      assert_receive {:DOWN, ^ref, :process, _, _}
      send_message(pipes, bash(2, "echo next"))
      assert %{"id" => 2} = next_reply(pipes)
      IOPipe.close(pipes.input)
      assert Task.await(task) == :ok
    end

    test "when the input ends, the calls sent are answered, then serve/2 returns", pipes do
      task = start_ready(pipes)
      for id <- 1..3, do: send_message(pipes, bash(id, "sleep 0.2; echo #{id}"))
      IOPipe.close(pipes.input)

      for id <- 1..3, do: assert(%{"id" => ^id} = next_reply(pipes))
      assert Task.await(task) == :ok
    end

    test "a caller that exits stops its server and the script it was running", pipes do
      session = Session.new(limits: [timeout_ms: 600_000])
      mcp = MCP.new(session)
      caller = spawn(fn -> Stdio.serve(mcp, input: pipes.input, output: pipes.output) end)
      send_message(pipes, initialize())
      assert %{"id" => 0} = next_reply(pipes)
      [server] = servers_of(caller)
      ref = Process.monitor(server)

      send_message(pipes, bash(1, "echo started > /started; sleep 300"))
      assert wait_until(fn -> Session.read_file(session, "/started") == {:ok, "started\n"} end)
      Process.exit(caller, :kill)
      assert_receive {:DOWN, ^ref, :process, _, _}
      # The sleep was interrupted: the session answers at once.
      assert {:ok, %{stdout: "free\n"}} = Session.exec(session, "echo free")
    end

    test "garbage, floods and a hundred failing calls leave nothing behind", pipes do
      task = start_ready(pipes)

      for line <- ["", "   ", "{", "[]", "null", ~s({"jsonrpc":"2.0"}), <<0xC3, 0x28>>] do
        IOPipe.feed(pipes.input, line)
      end

      # Blank lines are skipped; each other line gets one error.
      codes = for _ <- 1..5, do: next_reply(pipes)["error"]["code"]
      assert codes == [-32700, -32600, -32600, -32600, -32700]

      for id <- 1..100, do: send_message(pipes, bash(id, "echo $((1/0))"))

      for id <- 1..100,
          do: assert(%{"id" => ^id, "result" => %{"isError" => _}} = next_reply(pipes))

      for id <- 101..1100, do: send_message(pipes, request(id, "ping"))
      for id <- 101..1100, do: assert(%{"id" => ^id, "result" => %{}} = next_reply(pipes))

      IOPipe.close(pipes.input)
      assert Task.await(task) == :ok
      assert Task.Supervisor.children(ExBashkit.TaskSupervisor) == []
    end
  end

  # The Stdio servers serving `caller` (each monitors its caller).
  defp servers_of(caller) do
    for {_, pid, _, _} <- DynamicSupervisor.which_children(ExBashkit.MCP.Supervisor),
        {:monitors, monitors} = Process.info(pid, :monitors),
        {:process, caller} in monitors,
        do: pid
  end
end
