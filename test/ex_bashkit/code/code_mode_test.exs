defmodule ExBashkit.CodeModeTest do
  # One tool of the application, defined once (ExBashkit.Tool.new/1), on
  # every surface: the model's tool call, a bash command, a JavaScript
  # function in a session and in ExBashkit.Code.run/2. The same checks on
  # each: the schema, :approve, the builtin deadline, the command policy,
  # telemetry.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Code, Error, Tool}

  @parameters %{
    "type" => "object",
    "properties" => %{
      "customer" => %{"type" => "string", "description" => "The customer's id."},
      "limit" => %{"type" => "integer", "minimum" => 1},
      "open" => %{"type" => "boolean"}
    },
    "required" => ["customer"]
  }

  defp orders(opts \\ []) do
    test = self()

    Tool.new(
      [
        name: "orders.list",
        description: "The orders of a customer.",
        parameters: @parameters,
        function: fn args ->
          send(test, {:called, args})
          limit = Map.get(args, "limit", 2)

          {:ok,
           for(
             i <- 1..limit,
             do: %{"customer" => args["customer"], "id" => i, "open" => args["open"]}
           )}
        end
      ] ++ opts
    )
  end

  defp js_session(tools, opts \\ []),
    do: Session.new([isolation: :process, javascript: true, tools: tools] ++ opts)

  defp node(session, code), do: run(session, "node -e #{inspect(String.trim(code))}")

  describe "one definition, every surface" do
    test "Python in a session calls them as functions, in the VM and in a worker" do
      for isolation <- [:none, :process] do
        session = Session.new(isolation: isolation, python: true, tools: [orders()])

        code =
          "r = tools.orders.list(customer='acme', limit=3, open=False)\n" <>
            "print(len(r), r[2]['id'], r[0]['open'])"

        :ok = Session.write_file(session, "/t.py", code)
        assert %Result{stdout: "3 3 False\n"} = run(session, "python3 /t.py")
        assert_received {:called, %{"customer" => "acme", "limit" => 3, "open" => false}}
      end
    end

    test "the model, bash and JavaScript get the same answer" do
      tool = orders()
      session = js_session([tool])
      expected = [%{"customer" => "acme", "id" => 1, "open" => true}]

      assert {:ok, json} = Tool.call(tool, %{"customer" => "acme", "limit" => 1, "open" => true})
      assert {:ok, ^expected} = ExBashkit.JSON.decode(json)

      bash = run(session, "orders list --customer acme --limit=1 --open")
      assert {:ok, ^expected} = ExBashkit.JSON.decode(bash.stdout)

      piped =
        run(session, ~s(echo '{"customer": "acme", "limit": 1, "open": true}' | orders list))

      assert piped.stdout == bash.stdout

      js =
        node(session, """
        tools.orders.list({customer: "acme", limit: 1, open: true}).then((o) => console.log(JSON.stringify(o)))
        """)

      assert {:ok, ^expected} = ExBashkit.JSON.decode(js.stdout)

      for _ <- 1..4,
          do: assert_received({:called, %{"customer" => "acme", "limit" => 1, "open" => true}})
    end

    # tokio's cooperative budget once made the 129th call from one
    # JavaScript program wait for ever (core/src/sync.rs).
    test "a program may call a tool a thousand times" do
      count = Tool.new(name: "count", description: "Answers 1.", function: fn _ -> {:ok, 1} end)

      js = js_session([count])

      loop =
        "let n = 0; for (let i = 0; i < 1000; i++) tools.count().then((x) => { n += x; }); setTimeout(() => console.log(n));"

      assert %Result{stdout: "1000\n"} = node(js, loop)

      py = Session.new(isolation: :process, python: true, tools: [count])
      :ok = Session.write_file(py, "/count.py", "print(sum(tools.count() for i in range(1000)))")
      assert %Result{stdout: "1000\n"} = run(py, "python3 /count.py")
    end

    test "an MCP server offers it, by its provider name" do
      mcp = ExBashkit.MCP.new([orders()])

      {_, mcp} =
        ExBashkit.MCP.handle(mcp, %{
          "jsonrpc" => "2.0",
          "id" => 0,
          "method" => "initialize",
          "params" => %{
            "protocolVersion" => "2025-06-18",
            "capabilities" => %{},
            "clientInfo" => %{"name" => "t", "version" => "1"}
          }
        })

      {nil, mcp} =
        ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "method" => "notifications/initialized"})

      {list, _} =
        ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 1, "method" => "tools/list"})

      assert [%{"name" => "orders_list"}] = list["result"]["tools"]

      call = %{"name" => "orders_list", "arguments" => %{"customer" => "acme", "limit" => 1}}

      {reply, _} =
        ExBashkit.MCP.handle(mcp, %{
          "jsonrpc" => "2.0",
          "id" => 2,
          "method" => "tools/call",
          "params" => call
        })

      assert %{"isError" => false, "content" => [%{"text" => text}]} = reply["result"]
      assert {:ok, [%{"customer" => "acme", "id" => 1}]} = ExBashkit.JSON.decode(text)
    end

    test "providers see the name without dots, and calls find it either way" do
      tool = orders()
      assert %{"function" => %{"name" => "orders_list"}} = Tool.to_openai(tool)
      assert %{"name" => "orders_list"} = Tool.to_anthropic(tool)
      assert {:ok, _} = Tool.run([tool], "orders_list", %{"customer" => "a"})
      assert {:ok, _} = Tool.run([tool], "orders.list", %{"customer" => "a"})
    end

    test "a bad argument is an error the model can act on, the same on each surface" do
      tool = orders()
      session = js_session([tool])
      message = ~s(Argument "limit" must be an integer ≥ 1; got 0.)

      assert {:error, ^message} = Tool.call(tool, %{"customer" => "acme", "limit" => 0})

      bad = run(session, "orders list --customer acme --limit 0")
      assert {bad.exit_code, bad.stderr} == {1, "orders list: #{message}\n"}

      assert %Result{exit_code: 2, stderr: "orders list: --limit must be integer" <> _} =
               run(session, "orders list --customer acme --limit many")

      js =
        node(
          session,
          ~s|tools.orders.list({customer: "acme", limit: 0}).catch((e) => console.log(e.message))|
        )

      assert js.stdout == "orders list: #{message}\n"

      missing = node(session, ~s|tools.orders.list().catch((e) => console.log(e.message))|)
      assert missing.stdout == ~s(orders list: Missing required argument "customer".\n)
      refute_received {:called, _}
    end

    test ":approve is asked on every surface, before the function" do
      approve = fn
        %{"customer" => "blocked"} -> {:deny, "this customer is off limits"}
        _ -> :ok
      end

      tool = orders(approve: approve)
      session = js_session([tool])

      assert {:error, "denied: this customer is off limits"} =
               Tool.call(tool, %{"customer" => "blocked"})

      assert %Result{exit_code: 1, stderr: "orders list: denied: this customer is off limits\n"} =
               run(session, "orders list --customer blocked")

      js =
        node(
          session,
          ~s|tools.orders.list({customer: "blocked"}).catch((e) => console.log(e.message))|
        )

      assert js.stdout == "orders list: denied: this customer is off limits\n"
      refute_received {:called, _}

      python = Session.new(isolation: :process, python: true, tools: [tool])

      :ok =
        Session.write_file(
          python,
          "/a.py",
          "try:\n    tools.orders.list(customer='blocked')\nexcept RuntimeError as e:\n    print(e)"
        )

      assert %Result{stdout: "orders list: denied: this customer is off limits\n"} =
               run(python, "python3 /a.py")

      refute_received {:called, _}

      assert %Result{exit_code: 0} = run(session, "orders list --customer fine")
      assert_received {:called, %{"customer" => "fine"}}
    end

    test "a tool slower than :builtin_timeout_ms fails its call, and the session goes on" do
      slow =
        Tool.new(
          name: "slow",
          description: "Sleeps.",
          function: fn _ ->
            Process.sleep(5_000)
            {:ok, 1}
          end
        )

      session = js_session([slow], builtin_timeout_ms: 200)
      assert %Result{exit_code: 124, stderr: stderr} = run(session, "slow")
      assert stderr =~ "timed out"

      js = node(session, ~s|tools.slow().catch((e) => console.log("failed:", e.message))|)
      assert js.stdout =~ "failed:"
      assert js.stdout =~ "timed out"
      assert %Result{stdout: "alive\n"} = run(session, "echo alive")

      python =
        Session.new(isolation: :process, python: true, tools: [slow], builtin_timeout_ms: 200)

      :ok =
        Session.write_file(
          python,
          "/s.py",
          "try:\n    tools.slow()\nexcept RuntimeError as e:\n    print(e)"
        )

      assert %Result{stdout: "slow: timed out after 200 ms\n"} = run(python, "python3 /s.py")
    end

    test "a tool that raises or answers nonsense is an error, not a crash" do
      raising =
        Tool.new(name: "boom", description: "Raises.", function: fn _ -> raise "kaput" end)

      odd =
        Tool.new(
          name: "odd",
          description: "Answers a tuple.",
          function: fn _ -> {:ok, {:not, :json}} end
        )

      session = js_session([raising, odd])
      assert %Result{exit_code: 1, stderr: "boom: boom failed: kaput\n"} = run(session, "boom")

      assert %Result{exit_code: 1, stderr: "odd: odd returned a value JSON cannot carry" <> _} =
               run(session, "odd")

      assert {:error, "boom failed: kaput"} = Tool.call(raising, %{})
    end

    test "the command policy governs tools called from JavaScript and Python too, in one voice" do
      session = js_session([orders()], command_policy: {:deny, ["orders"]}, python: true)

      assert %Result{exit_code: 1} = run(session, "orders list --customer acme")

      js =
        node(
          session,
          ~s|tools.orders.list({customer: "acme"}).catch((e) => console.log(e.message))|
        )

      assert js.stdout =~ "orders"
      assert js.stdout =~ "denied"

      code =
        "try:\n    tools.orders.list(customer='acme')\nexcept RuntimeError as e:\n    print(e)\n"

      :ok = Session.write_file(session, "/t.py", code)
      python = run(session, "python3 /t.py")
      # One bridge: the same refusal, word for word.
      assert python.stdout == js.stdout
      refute_received {:called, _}
    end

    test "telemetry: one span per call, naming the tool and the surface" do
      forward_telemetry([[:ex_bashkit, :tool, :stop]])
      tool = orders()
      Tool.call(tool, %{"customer" => "a"})
      run(js_session([tool]), "orders list --customer a")

      for surface <- [:model, :command] do
        assert_receive {:telemetry, [:ex_bashkit, :tool, :stop], _,
                        %{name: "orders.list", surface: ^surface, status: :ok}}
      end
    end
  end

  describe "Code.run with tools" do
    test "one program calls three tools and returns a summary" do
      customers =
        Tool.new(
          name: "customers.find",
          description: "Finds a customer by name.",
          parameters: %{"type" => "object", "properties" => %{"name" => %{"type" => "string"}}},
          function: fn %{"name" => name} -> {:ok, %{"id" => String.downcase(name)}} end
        )

      refund =
        Tool.new(
          name: "refunds.total",
          description: "Sums refunds.",
          parameters: %{"type" => "object", "properties" => %{"ids" => %{"type" => "array"}}},
          function: fn %{"ids" => ids} -> {:ok, length(ids) * 5} end
        )

      code = """
      async function execute({name}) {
        const customer = await tools.customers.find({name});
        const orders = await tools.orders.list({customer: customer.id, limit: 3});
        const refunds = await tools.refunds.total({ids: orders.map((o) => o.id)});
        return {customer: customer.id, orders: orders.length, refunds};
      }
      """

      assert {:ok, %{output: %{"customer" => "acme", "orders" => 3, "refunds" => 15}}} =
               Code.run(code, input: %{name: "ACME"}, tools: [customers, orders(), refund])
    end

    test "a tool's failure is the program's exception to catch or not" do
      assert {:error, %Error{reason: :exception, message: "Error: orders list: " <> _}} =
               Code.run("async function execute() { return await tools.orders.list({}); }",
                 tools: [orders()]
               )

      assert {:ok, %{output: "caught"}} =
               Code.run(
                 "async function execute() { try { await tools.orders.list({}); } catch { return 'caught'; } }",
                 tools: [orders()]
               )
    end

    test "Python calls them as functions (language: :monty, the Python that can call out)" do
      code = """
      def execute(input):
          print("looking up", input["customer"])
          orders = tools.orders.list(customer=input["customer"], limit=2)
          try:
              tools.orders.list(limit=1)
          except RuntimeError as e:
              failed = str(e)
          return {"ids": [o["id"] for o in orders], "failed": failed}
      """

      assert {:ok, %{output: output, stdout: "looking up acme\n"}} =
               Code.run(code, language: :monty, input: %{customer: "acme"}, tools: [orders()])

      # CPython cannot call out: asked for, with tools, it refuses, never switches.
      assert_raise ArgumentError, ~r/language: :monty runs a subset of Python that can/, fn ->
        Code.run(code, language: :python, tools: [orders()])
      end

      assert output == %{
               "ids" => [1, 2],
               "failed" => ~s(orders list: Missing required argument "customer".)
             }

      assert {:error, %Error{reason: :exception, line: 2, message: "ZeroDivisionError" <> _}} =
               Code.run("def execute(input):\n    return 1 / 0\n",
                 language: :monty,
                 tools: [orders()]
               )
    end

    test "bash calls them as commands" do
      assert {:ok, %{output: 2}} =
               Code.run("orders list --customer acme | jq length",
                 language: :bash,
                 tools: [orders()]
               )
    end

    test "no tools, nothing to call" do
      assert {:error, %Error{reason: :exception, message: "Error: there is no tool orders" <> _}} =
               Code.run("async function execute() { return await tools.orders.list({}); }")
    end
  end

  describe "bad definitions raise, naming the option" do
    test "Tool.new/1 and :tools" do
      good = [name: "a.b", description: "x", function: fn _ -> {:ok, 1} end]

      for {opts, pattern} <- [
            {Keyword.delete(good, :name), ~r/:name is required/},
            {Keyword.put(good, :name, "a b"), ~r/:name/},
            {Keyword.put(good, :name, "a..b"), ~r/:name/},
            {Keyword.delete(good, :description), ~r/:description/},
            {Keyword.put(good, :function, fn -> 1 end), ~r/:function/},
            {Keyword.put(good, :parameters, %{"type" => "string"}), ~r/:parameters/},
            {Keyword.put(good, :approve, :yes), ~r/:approve/}
          ] do
        assert_raise ArgumentError, pattern, fn -> Tool.new(opts) end
      end

      tool = Tool.new(good)

      assert_raise ArgumentError, ~r/:tools takes tools made with/, fn ->
        Session.new(tools: [Tool.bash(Session.new())])
      end

      assert_raise ArgumentError, ~r/more than one tool named/, fn ->
        Session.new(tools: [tool, tool])
      end

      assert_raise ArgumentError, ~r/both define the command "a"/, fn ->
        Session.new(tools: [tool], builtins: %{"a" => fn _ -> {:ok, ""} end})
      end
    end
  end
end
