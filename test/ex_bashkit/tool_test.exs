defmodule ExBashkit.ToolTest do
  # LLM tools (issue 16): schemas, every tool's success and failure paths,
  # output shaping, argument checking and the adapters' shapes.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Server, Tool}
  alias ExBashkit.Tool.Output

  doctest ExBashkit.Tool
  doctest ExBashkit.Tool.Output

  setup do
    session = Session.new()
    tools = Tool.all(session) ++ [Tool.elixir()]
    {:ok, session: session, tools: tools, by_name: Map.new(tools, &{&1.name, &1})}
  end

  defp call(by_name, name, args), do: Tool.call(Map.fetch!(by_name, name), args)

  describe "schemas" do
    @json_types ~w(string integer boolean number object array null)

    test "every tool's parameters are a JSON Schema object with string keys", %{tools: tools} do
      assert Enum.map(tools, & &1.name) ==
               ~w(bash read_file write_file edit_file list_dir grep glob elixir)

      for tool <- tools do
        assert tool.name =~ ~r/^[a-zA-Z0-9_-]{1,64}$/
        assert is_binary(tool.description) and byte_size(tool.description) > 40
        assert is_function(tool.function, 1)
        schema = tool.parameters
        assert json?(schema), "#{tool.name}: not plain JSON data: #{inspect(schema)}"
        assert schema["type"] == "object"
        assert schema["additionalProperties"] == false
        assert is_map(schema["properties"]) and map_size(schema["properties"]) > 0
        assert is_list(schema["required"])
        assert schema["required"] -- Map.keys(schema["properties"]) == []

        for {key, spec} <- schema["properties"] do
          assert key =~ ~r/^[a-z_]+$/
          assert spec["type"] in @json_types
          assert is_binary(spec["description"]) and spec["description"] != ""
          assert Map.keys(spec) -- ["type", "description", "minimum"] == []
        end
      end
    end

    # What a JSON encoder accepts and round-trips: string keys, no atoms
    # other than true/false/nil, no tuples.
    defp json?(map) when is_map(map),
      do: Enum.all?(map, fn {k, v} -> is_binary(k) and json?(v) end)

    defp json?(list) when is_list(list), do: Enum.all?(list, &json?/1)
    defp json?(value), do: is_binary(value) or is_number(value) or value in [true, false, nil]
  end

  describe "bash" do
    test "exit code, stdout and stderr; state persists between calls", %{by_name: t} do
      assert {:ok, "exit code: 0\n(no output)\n"} =
               call(t, "bash", %{"command" => "cd /tmp; X=1"})

      assert {:ok, "exit code: 2\nstdout:\n/tmp 1\nstderr:\noops\n"} =
               call(t, "bash", %{"command" => "echo $(pwd) $X; echo oops >&2; exit 2"})

      assert {:ok, "exit code: 0\nstdout:\nno newline\n"} =
               call(t, "bash", %{"command" => "printf 'no newline'"})
    end

    test "non-UTF-8 bytes are shown as \\xNN", %{by_name: t} do
      assert {:ok, text} = call(t, "bash", %{"command" => ~S(printf 'a\xff\xfeb')})
      assert text == "exit code: 0\nstdout:\na\\xFF\\xFEb\n"
      assert String.valid?(text)
    end

    test "long output keeps its head and tail and says what was dropped", %{session: session} do
      tool = Tool.bash(session, max_output_bytes: 100)
      {:ok, text} = Tool.call(tool, %{"command" => "seq 1 1000"})
      expected = Enum.map_join(1..1000, &"#{&1}\n")
      assert text == "exit code: 0\nstdout:\n" <> Output.truncate(expected, 100)
      assert text =~ "1\n2\n3\n"
      assert text =~ "999\n1000\n"
      assert text =~ "[... #{byte_size(expected) - 100} bytes dropped ...]"
    end

    test "the sandbox's own output cap is reported" do
      session = Session.new(limits: [max_stdout_bytes: 10])
      {:ok, text} = Tool.call(Tool.bash(session), %{"command" => "seq 1 100"})
      assert text =~ "exit code: 0\nstdout:\n1\n2\n3\n4\n5\n"
      assert text =~ "output cap was reached"
    end

    test "a timeout returns the partial output and what to do", %{session: session} do
      assert {:error, text} =
               Tool.call(Tool.bash(session), %{
                 "command" => "echo started; sleep 30",
                 "timeout_ms" => 1_000
               })

      assert text =~ "timed out"
      assert text =~ "timeout_ms"
      assert text =~ "Output before it stopped:\nstdout:\nstarted\n"
    end

    test "the tool's default timeout applies when the model gives none", %{session: session} do
      assert {:error, text} =
               Tool.call(Tool.bash(session, timeout_ms: 100), %{"command" => "sleep 5"})

      assert text =~ "timed out"
      refute text =~ "Output before"
    end

    test "stats: true appends what the script cost; the default leaves it out",
         %{session: session} do
      {:ok, plain} = Tool.call(Tool.bash(session), %{"command" => "echo hi"})
      refute plain =~ "cost:"

      {:ok, costed} = Tool.call(Tool.bash(session, stats: true), %{"command" => "echo hi"})

      assert costed =~
               ~r/\Aexit code: 0\nstdout:\nhi\ncost: [\d.]+ ms wall, [\d.]+ ms CPU, [\d.]+ (B|KiB|MiB) peak memory, 0 B written to files, 1 command\n\z/

      assert_raise ArgumentError, ~r/:stats/, fn -> Tool.bash(session, stats: :yes) end
      assert length(Tool.all(session, stats: true)) == 7
    end

    test "a cancel from elsewhere ends the call", %{session: session} do
      command = "echo a; touch /printed; sleep 30"
      task = Task.async(fn -> Tool.call(Tool.bash(session), %{"command" => command}) end)

      # Cancelled once `a` is out: a cancel as soon as the script runs could
      # land before its first command.
      assert wait_until(fn -> match?({:ok, _}, Session.stat(session, "/printed")) end)
      assert Session.cancel(session) == :ok
      assert {:error, text} = Task.await(task)
      assert text =~ "cancelled"
      assert text =~ "stdout:\na\n"
    end

    test "limits, parse errors", %{by_name: t} do
      session = Session.new(limits: [max_loop_iterations: 3])

      assert {:error, text} =
               Tool.call(Tool.bash(session), %{
                 "command" => "for i in 1 2 3 4 5; do echo $i; done"
               })

      assert text =~ "sandbox limit max_loop_iterations"
      assert {:error, text} = call(t, "bash", %{"command" => "if then fi ("})
      assert text =~ "could not parse"
      assert text =~ "nothing ran"
    end

    test "a command the session's :approve refuses reads as a refusal the model can act on" do
      session = Session.new(approve: fn _ -> {:deny, "no network tools in this task"} end)

      assert {:error, text} = Tool.call(Tool.bash(session), %{"command" => "curl example.com"})
      assert text =~ "refused before it started, so nothing in it ran: no network tools"
      assert text =~ "ask the user"
    end

    test "works on a server, and says so when the server is gone" do
      {:ok, server} = Server.start()
      tool = Tool.bash(server)
      assert {:ok, "exit code: 0\nstdout:\nhi\n"} = Tool.call(tool, %{"command" => "echo hi"})
      :ok = Server.stop(server)
      assert {:error, text} = Tool.call(tool, %{"command" => "echo hi"})
      assert text =~ "The sandbox is not available"
    end
  end

  describe "read_file" do
    setup %{session: session} do
      :ok = Session.write_file(session, "/notes.txt", Enum.map_join(1..10, &"line #{&1}\n"))
      :ok
    end

    test "numbered lines, whole or a range", %{by_name: t} do
      assert {:ok, text} = call(t, "read_file", %{"path" => "/notes.txt"})
      assert text =~ ~r/\A     1\tline 1\n     2\tline 2\n/
      assert text =~ "    10\tline 10\n"

      assert {:ok, text} =
               call(t, "read_file", %{"path" => "/notes.txt", "offset" => 3, "limit" => 2})

      assert text ==
               "[/notes.txt: lines 3-4 of 10; pass offset and limit to read others]\n" <>
                 "     3\tline 3\n     4\tline 4\n"

      assert {:ok, text} = call(t, "read_file", %{"path" => "/notes.txt", "offset" => 9})
      assert text =~ "lines 9-10 of 10"
    end

    test "relative paths start at the shell's working directory", %{session: session, by_name: t} do
      run(session, "mkdir -p /work && cd /work && printf 'x\\n' > rel.txt")
      assert {:ok, "     1\tx\n"} = call(t, "read_file", %{"path" => "rel.txt"})
    end

    test "failures say what to do", %{session: session, by_name: t} do
      assert {:error, text} = call(t, "read_file", %{"path" => "/notes.txt", "offset" => 11})
      assert text == "/notes.txt has 10 lines; offset 11 is past its end."
      assert {:error, text} = call(t, "read_file", %{"path" => "/missing"})
      assert text =~ "Could not read /missing"
      assert text =~ "list_dir"
      assert {:error, text} = call(t, "read_file", %{"path" => "/tmp"})
      assert text =~ "directory"
      :ok = Session.write_file(session, "/empty", "")
      assert {:ok, "/empty is empty."} = call(t, "read_file", %{"path" => "/empty"})
      assert {:error, _} = call(t, "read_file", %{"path" => "/notes.txt", "offset" => 0})
    end

    test "binary content and the byte budget", %{session: session} do
      :ok = Session.write_file(session, "/bin.dat", <<0xFF, 0x00, "ok", 0xC3>>)

      assert {:ok, "     1\t\\xFF\0ok\\xC3\n"} =
               Tool.call(Tool.read_file(session), %{"path" => "/bin.dat"})

      :ok = Session.write_file(session, "/big", String.duplicate("abcdefghij\n", 1000))
      {:ok, text} = Tool.call(Tool.read_file(session, max_output_bytes: 200), %{"path" => "/big"})
      assert text =~ "bytes dropped"
      assert text =~ ~r/\A     1\tabcdefghij\n/
      assert text =~ ~r/  1000\tabcdefghij\n\z/
    end
  end

  describe "write_file and edit_file" do
    test "write creates parents and reports the size", %{session: session, by_name: t} do
      assert {:ok, "Wrote 6 bytes to /a/b/c.txt."} =
               call(t, "write_file", %{"path" => "/a/b/c.txt", "content" => "héllo"})

      assert Session.read_file(session, "/a/b/c.txt") == {:ok, "héllo"}
      run(session, "cd /a")

      assert {:ok, "Wrote 1 bytes to /a/d.txt."} =
               call(t, "write_file", %{"path" => "d.txt", "content" => "x"})
    end

    test "write into a file's path fails in words", %{session: session, by_name: t} do
      :ok = Session.write_file(session, "/file", "x")
      assert {:error, text} = call(t, "write_file", %{"path" => "/file/inner", "content" => "y"})
      assert text =~ "Could not write /file/inner"
    end

    test "edit replaces exactly one occurrence, or all when asked", %{
      session: session,
      by_name: t
    } do
      :ok = Session.write_file(session, "/code.sh", "a=1\nb=2\na=1\n")
      edit = &call(t, "edit_file", Map.merge(%{"path" => "/code.sh"}, &1))

      assert {:ok, "Replaced 1 occurrence in /code.sh."} =
               edit.(%{"old_string" => "b=2", "new_string" => "b=3"})

      assert {:error, text} = edit.(%{"old_string" => "a=1", "new_string" => "a=9"})
      assert text =~ "occurs 2 times"
      assert text =~ "replace_all"
      assert Session.read_file(session, "/code.sh") == {:ok, "a=1\nb=3\na=1\n"}

      assert {:ok, "Replaced 2 occurrences in /code.sh."} =
               edit.(%{"old_string" => "a=1", "new_string" => "a=9", "replace_all" => true})

      assert Session.read_file(session, "/code.sh") == {:ok, "a=9\nb=3\na=9\n"}
    end

    test "edit failures", %{session: session, by_name: t} do
      :ok = Session.write_file(session, "/f", "text")
      edit = &call(t, "edit_file", Map.merge(%{"path" => "/f"}, &1))
      assert {:error, text} = edit.(%{"old_string" => "nope", "new_string" => "x"})
      assert text =~ "not found"
      assert {:error, text} = edit.(%{"old_string" => "", "new_string" => "x"})
      assert text =~ "write_file"
      assert {:error, text} = edit.(%{"old_string" => "text", "new_string" => "text"})
      assert text =~ "nothing to change"

      assert {:error, text} =
               call(t, "edit_file", %{
                 "path" => "/missing",
                 "old_string" => "a",
                 "new_string" => "b"
               })

      assert text =~ "Could not read /missing"
      assert Session.read_file(session, "/f") == {:ok, "text"}
    end
  end

  describe "list_dir" do
    test "entries sorted and marked; the working directory by default", %{
      session: session,
      by_name: t
    } do
      run(
        session,
        "mkdir -p /p/sub && touch /p/b.txt /p/a.txt && ln -s /p/a.txt /p/link && cd /p"
      )

      assert {:ok, "/p:\na.txt\nb.txt\nlink@\nsub/\n"} = call(t, "list_dir", %{})
      assert {:ok, "/p/sub is empty."} = call(t, "list_dir", %{"path" => "sub"})
      assert {:error, text} = call(t, "list_dir", %{"path" => "/nowhere"})
      assert text =~ "Could not list /nowhere"
    end
  end

  describe "elixir" do
    test "output and value, a raise, a timeout", %{by_name: t} do
      assert {:ok, "output:\nhi\n\nresult: 42\n"} =
               call(t, "elixir", %{"code" => ~S|IO.puts("hi"); 6 * 7|})

      assert {:error, text} = call(t, "elixir", %{"code" => ~S|IO.puts("before"); raise "boom"|})
      assert text =~ "The code raised:\n** (RuntimeError) boom"
      assert text =~ "output:\nbefore\n"

      assert {:error, text} =
               call(t, "elixir", %{"code" => "Process.sleep(10_000)", "timeout_ms" => 300})

      assert text =~ "timed out"
    end
  end

  describe "arguments" do
    test "checked against the schema, in words", %{by_name: t} do
      assert {:error, ~s(Unknown argument "cmd"; this tool takes: "command", "timeout_ms".)} =
               call(t, "bash", %{"cmd" => "ls"})

      assert {:error, ~s(Missing required arguments "content", "path".)} =
               call(t, "write_file", %{})

      assert {:error, ~s(Argument "command" must be a string; got 12.)} =
               call(t, "bash", %{"command" => 12})

      assert {:error, ~s(Argument "offset" must be an integer ≥ 1; got 0.)} =
               call(t, "read_file", %{"path" => "/", "offset" => 0})

      assert {:error, ~s(Argument "replace_all" must be true or false; got "yes".)} =
               call(t, "edit_file", %{
                 "path" => "/f",
                 "old_string" => "a",
                 "new_string" => "b",
                 "replace_all" => "yes"
               })

      assert {:error, "The arguments must be a JSON object" <> _} = Tool.call(t["bash"], ["ls"])
    end

    test "atom keys and integral floats are accepted", %{by_name: t} do
      assert {:ok, "exit code: 0\nstdout:\nx\n"} =
               call(t, "bash", %{command: "echo x", timeout_ms: 5000.0})
    end

    test "an exception inside a tool becomes an error answer" do
      tool = %Tool{
        name: "boom",
        description: "raises",
        parameters: %{"type" => "object", "properties" => %{}, "required" => []},
        function: fn _ -> raise ArgumentError, "kaput" end
      }

      assert Tool.call(tool, %{}) == {:error, "The boom tool failed: kaput"}
    end

    test "a tool of your own may use any JSON schema: types the check does not know are the tool's" do
      tool = %Tool{
        name: "scale",
        description: "scales",
        parameters: %{
          "type" => "object",
          "properties" => %{"factor" => %{"type" => "number"}, "tags" => %{"type" => "array"}}
        },
        function: fn args -> {:ok, inspect(args)} end
      }

      assert Tool.call(tool, %{"factor" => 1.5, "tags" => ["a"]}) ==
               {:ok, ~s(%{"factor" => 1.5, "tags" => ["a"]})}

      assert {:error, "Unknown argument \"size\"" <> _} = Tool.call(tool, %{"size" => 1})
    end
  end

  describe "truncate/2" do
    test "exact at the boundary" do
      text = String.duplicate("a", 100)
      assert Output.truncate(text, 100) == text

      assert Output.truncate(text <> "b", 100) ==
               String.duplicate("a", 50) <>
                 "\n[... 1 byte dropped ...]\n" <> String.duplicate("a", 49) <> "b"

      assert Output.truncate("", 0) == ""
      assert Output.truncate("ab", 0) == "\n[... 2 bytes dropped ...]\n"
    end

    test "keeps at most the budget, never splits a character, counts what it drops" do
      for size <- [1, 2, 7, 64, 333], budget <- [0, 1, 2, 3, 5, 10, 100, 400] do
        text = for(_ <- 1..size, into: "", do: Enum.random(["a", "é", "€", "𝄞", "\n"]))
        out = Output.truncate(text, budget)

        if byte_size(text) <= budget do
          assert out == text
        else
          [head, dropped, tail] =
            Regex.run(~r/\A(.*)\n\[\.\.\. (\d+) bytes? dropped \.\.\.\]\n(.*)\z/s, out,
              capture: :all_but_first
            )

          assert String.valid?(head) and String.valid?(tail)
          assert byte_size(head) + byte_size(tail) <= budget
          assert byte_size(head) + byte_size(tail) + String.to_integer(dropped) == byte_size(text)
          assert String.starts_with?(text, head) and String.ends_with?(text, tail)
        end
      end
    end

    test "printable/1 escapes only invalid bytes" do
      bytes = <<"é", 0x80, "x", 0xE2, 0x82>>
      assert Output.printable(bytes) == "é\\x80x\\xE2\\x82"
      assert Output.printable(<<"\u20ac">>) == "€"
    end
  end

  describe "adapters" do
    test "each shape holds the tool's own data and runs it", %{by_name: t} do
      bash = t["bash"]
      langchain = Tool.to_langchain(bash)

      assert MapSet.new(Map.keys(langchain)) ==
               MapSet.new([:description, :function, :name, :parameters_schema])

      assert langchain.parameters_schema == bash.parameters

      assert {:ok, "exit code: 0\nstdout:\n1\n"} =
               langchain.function.(%{"command" => "echo 1"}, %{})

      req = Tool.to_req_llm(bash)
      assert req[:parameter_schema] == bash.parameters
      assert {:error, _} = req[:callback].(%{})

      jido = Tool.to_jido(t["edit_file"])
      assert Keyword.keys(jido.schema) == [:new_string, :old_string, :path, :replace_all]

      assert jido.schema[:replace_all] == [
               type: :boolean,
               doc: "Replace every occurrence instead of exactly one."
             ]

      assert {:error, _} = jido.run.(%{path: "/nope", old_string: "a", new_string: "b"}, %{})
      assert Tool.to_jido(t["read_file"]).schema[:offset][:type] == :pos_integer

      assert %{"type" => "function", "function" => function} = Tool.to_openai(bash)

      assert function == %{
               "name" => "bash",
               "description" => bash.description,
               "parameters" => bash.parameters
             }

      assert Tool.to_openai(bash, api: :responses) == Map.put(function, "type", "function")

      assert Tool.to_anthropic(bash) == %{
               "name" => "bash",
               "description" => bash.description,
               "input_schema" => bash.parameters
             }

      assert_raise ArgumentError, ~r/:api/, fn -> Tool.to_openai(bash, api: :legacy) end
    end
  end

  describe "options" do
    test "bad input raises ArgumentError naming the option", %{session: session} do
      assert_raise ArgumentError, ~r/:max_output_bytes/, fn ->
        Tool.bash(session, max_output_bytes: 0)
      end

      assert_raise ArgumentError, ~r/:name/, fn -> Tool.bash(session, name: "has space") end

      assert_raise ArgumentError, ~r/:description/, fn ->
        Tool.read_file(session, description: "")
      end

      assert_raise ArgumentError, ~r/:timeout_ms/, fn -> Tool.bash(session, timeout_ms: -1) end

      assert_raise ArgumentError, ~r/unknown option :bogus/, fn ->
        Tool.list_dir(session, bogus: 1)
      end

      assert_raise ArgumentError, ~r/target must be/, fn -> Tool.bash("not a session") end
      assert_raise ArgumentError, ~r/:peer/, fn -> Tool.elixir(peer: [timeout: 5]) end
      assert_raise ArgumentError, ~r/:name/, fn -> Tool.all(session, name: "x") end

      assert %Tool{name: "sh", description: "Runs sh."} =
               Tool.bash(session, name: "sh", description: "Runs sh.")
    end
  end

  describe "grep and glob" do
    setup do
      files = %{
        "/src/a.ex" => "defmodule A do\n  # TODO fix\nend\n",
        "/src/lib/b.ex" => "todo: lower\nTODO: " <> String.duplicate("x", 1_000) <> "\n",
        "/src/notes.md" => "TODO in markdown\n",
        "/src/blob.bin" => <<0, 1, 2, "TODO">>,
        "/src/it's here.ex" => "TODO quoted\n"
      }

      %{session: Session.new(files: files)}
    end

    test "matches as path:line:text, with include, exclude and ignore_case", %{session: session} do
      grep = Tool.grep(session)

      assert {:ok, text} =
               Tool.call(grep, %{"pattern" => "TODO", "path" => "/src", "include" => "*.ex"})

      assert text =~ "/src/a.ex:2:  # TODO fix"
      assert text =~ "/src/it's here.ex:1:TODO quoted"
      refute text =~ "notes.md"
      refute text =~ "blob.bin"

      assert {:ok, text} =
               Tool.call(grep, %{
                 "pattern" => "todo",
                 "path" => "/src",
                 "ignore_case" => true,
                 "exclude" => "*.md"
               })

      assert text =~ "/src/lib/b.ex:1:todo: lower"
      refute text =~ "notes.md"

      assert {:ok, "No matches for \"nothing here\" in /src."} =
               Tool.call(grep, %{"pattern" => "nothing here", "path" => "/src"})
    end

    test "caps the matches and the line length, and says so", %{session: session} do
      grep = Tool.grep(session)

      assert {:ok, text} =
               Tool.call(grep, %{
                 "pattern" => "TODO",
                 "path" => "/src",
                 "max_matches" => 2,
                 "max_line_bytes" => 40
               })

      assert text =~ ~r/more matches/
      assert [_ | lines] = text |> String.split("\n", trim: true) |> Enum.take(3)
      assert length(Enum.filter(lines, &String.starts_with?(&1, "/src"))) == 2

      assert {:ok, long} =
               Tool.call(grep, %{"pattern" => "xxxx", "path" => "/src", "max_line_bytes" => 40})

      assert long =~ "more bytes)"
    end

    test "a bad pattern is an error the model can act on", %{session: session} do
      assert {:error, message} =
               Tool.call(Tool.grep(session), %{"pattern" => "([", "path" => "/src"})

      assert message =~ "grep failed"
    end

    test "glob: ** at any depth, quoting what is not a pattern", %{session: session} do
      glob = Tool.glob(session)

      assert {:ok, "3 paths:\na.ex\nit's here.ex\nlib/b.ex\n"} =
               Tool.call(glob, %{"pattern" => "**/*.ex", "path" => "/src"})

      assert {:ok, "1 paths:\nit's here.ex\n"} =
               Tool.call(glob, %{"pattern" => "it's*", "path" => "/src"})

      assert {:ok, "No paths match" <> _} =
               Tool.call(glob, %{"pattern" => "*.rs", "path" => "/src"})

      assert {:ok, capped} =
               Tool.call(glob, %{"pattern" => "**", "path" => "/src", "max_results" => 2})

      assert capped =~ "more paths"
    end
  end

  describe "the tools as an API for the model" do
    defp api_tools do
      [
        Tool.new(
          name: "orders.list",
          description: "The orders of a customer.",
          parameters: %{
            "type" => "object",
            "properties" => %{
              "customer" => %{"type" => "string", "description" => "the customer's id"},
              "status" => %{"enum" => ["open", "paid"]},
              "limit" => %{"type" => ["integer", "null"]}
            },
            "required" => ["customer"]
          },
          function: fn args -> {:ok, [%{"id" => 1, "customer" => args["customer"]}]} end
        ),
        Tool.new(
          name: "ping",
          description: "Answers pong.",
          parameters: %{"type" => "object", "properties" => %{}},
          function: fn _ -> {:ok, "pong"} end
        )
      ]
    end

    test "the TypeScript declarations parse, and a program written against them runs" do
      tools = api_tools()
      declarations = Tool.typescript(tools)
      assert declarations =~ "limit?: number | null;"
      assert declarations =~ "ping(args?: {\n"
      assert declarations =~ "* the customer's id"

      program = """
      const orders: Array<{ id: number }> = await tools.orders.list({ customer: "acme", status: "open" });
      console.log(orders.length, await tools.ping());
      """

      session = ExBashkit.Session.new(javascript: true, isolation: :process, tools: tools)
      :ok = ExBashkit.Session.write_file(session, "/program.mts", declarations <> program)

      assert {:ok, %{stdout: "1 pong\n", exit_code: 0}} =
               ExBashkit.Session.exec(session, "node /program.mts")
    end

    test "the Python stubs are valid Python" do
      stubs = Tool.python(api_tools())
      assert stubs =~ "class orders:"
      assert stubs =~ ~s(status: Literal["open", "paid"] | None = None)

      {_, status} =
        System.cmd("python3", ["-c", "import ast, sys; ast.parse(sys.argv[1])", stubs],
          stderr_to_stdout: true
        )

      assert status == 0
    end
  end
end
