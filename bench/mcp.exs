# What the MCP server adds to a tool call (issue 30): `echo hi` through the
# bash tool called directly, through `ExBashkit.MCP.handle/2` (decoded
# messages), through `handle_json/2` (JSON text in and out), and over stdio
# to `mix ex_bashkit.mcp` (a line written to its stdin until the reply's
# line is read from its stdout), with the session in the VM and in a
# worker process.
#
#   mix run bench/mcp.exs
#
# Rounds alternate the ways; each figure is the median of the rounds' p50s,
# with their spread (min–max), in µs per call.

Code.require_file("support.exs", __DIR__)

defmodule MCPBench do
  alias ExBashkit.{MCP, Session, Tool}

  @rounds 5
  @calls 300
  @arguments %{"command" => "echo hi"}

  def run do
    IO.puts("""
    ## A bash tool call through MCP (µs per call; median of #{@rounds} rounds' p50, min–max)
    | session | `Tool.call/2` | `MCP.handle/2` | `MCP.handle_json/2` | stdio, `mix ex_bashkit.mcp` |
    |---|---|---|---|---|\
    """)

    for isolation <- [:none, :process] do
      session = Session.new(isolation: isolation)
      [bash | _] = Tool.all(session)
      mcp = ready(MCP.new(session))
      message = call_message(1)
      json = ExBashkit.JSON.encode!(message)
      server = start_server(isolation)

      ways = [
        fn -> {:ok, _} = Tool.call(bash, @arguments) end,
        fn -> {%{"result" => %{"isError" => false}}, _} = MCP.handle(mcp, message) end,
        fn -> {"{" <> _, _} = MCP.handle_json(mcp, json) end,
        fn -> round_trip(server, json) end
      ]

      rounds = for _ <- 1..@rounds, do: Enum.map(ways, &BenchSupport.p50_us(@calls, &1))
      columns = rounds |> Enum.zip() |> Enum.map(&Tuple.to_list/1)
      Port.close(server)
      IO.puts("| #{isolation} | #{Enum.map_join(columns, " | ", &BenchSupport.spread/1)} |")
    end
  end

  defp ready(mcp) do
    {_, mcp} = MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 0, "method" => "initialize"})
    mcp
  end

  defp call_message(id) do
    %{
      "jsonrpc" => "2.0",
      "id" => id,
      "method" => "tools/call",
      "params" => %{"name" => "bash", "arguments" => @arguments}
    }
  end

  defp start_server(isolation) do
    port =
      Port.open({:spawn_executable, System.find_executable("mix")}, [
        :binary,
        {:line, 1_000_000},
        args: ["ex_bashkit.mcp", "--isolation", to_string(isolation)],
        env: [{~c"MIX_ENV", to_charlist(Mix.env())}]
      ])

    round_trip(port, ~s({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}))
    Port.command(port, ~s({"jsonrpc":"2.0","method":"notifications/initialized"}\n))
    port
  end

  defp round_trip(port, json) do
    Port.command(port, [json, ?\n])

    receive do
      {^port, {:data, {:eol, "{" <> _}}} -> :ok
    after
      60_000 -> raise "no reply from mix ex_bashkit.mcp"
    end
  end
end

BenchSupport.publish(__ENV__.file, &MCPBench.run/0)
