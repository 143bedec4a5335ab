defmodule ExBashkit.MCPStdioTest do
  # `mix ex_bashkit.mcp` as an MCP client starts it: a real VM, spoken to
  # over its stdin and stdout, by the official Python SDK (tagged
  # :mcp_client) and by hand.
  use ExUnit.Case, async: true

  import ExBashkit.Case, only: [host_dir!: 1]

  @moduletag timeout: 300_000

  defp mix!, do: System.find_executable("mix") || flunk("mix is not on PATH")

  defp env do
    %{
      "MIX_ENV" => "test",
      "LANG" => "C.UTF-8",
      "LC_ALL" => "C.UTF-8",
      "PATH" => System.get_env("PATH"),
      "HOME" => System.get_env("HOME"),
      "MIX_BUILD_ROOT" => System.get_env("MIX_BUILD_ROOT")
    }
    |> Enum.reject(fn {_, value} -> is_nil(value) end)
    |> Map.new()
  end

  @tag :mcp_client
  test "the official Python SDK: handshake, tools, a session that persists, cancellation" do
    # A directory the worker's user can read (a checkout may not be).
    dir = host_dir!("mcp")
    File.write!(Path.join(dir, "hello.txt"), "from the host\n")

    stderr = ExBashkit.Case.tmp_path("mcp_server") <> ".stderr"

    on_exit(fn -> File.rm(stderr) end)

    plan = %{
      "command" => mix!(),
      "args" => ["ex_bashkit.mcp", "--mount", "#{dir}:/data", "--timeout-ms", "600000"],
      "cwd" => File.cwd!(),
      "env" => env(),
      "stderr" => stderr,
      "steps" => [
        ["list_tools"],
        ["call_tool", "bash", %{"command" => "cd /tmp && cat /data/hello.txt > copy.txt && ls"}],
        ["call_tool", "read_file", %{"path" => "copy.txt"}],
        [
          "call_tool",
          "edit_file",
          %{"path" => "/tmp/copy.txt", "old_string" => "host", "new_string" => "sandbox"}
        ],
        ["call_tool", "write_file", %{"path" => "/tmp/new/note.md", "content" => "# hi\n"}],
        ["call_tool", "list_dir", %{"path" => "/tmp"}],
        ["ping"],
        # The SDK gives up after 3 s and sends notifications/cancelled.
        ["call_tool", "bash", %{"command" => "sleep 300"}, 3],
        ["call_tool", "bash", %{"command" => "cat /tmp/copy.txt; echo $(pwd)"}],
        ["call_tool", "bash", %{"command" => "echo > /data/hello.txt"}],
        ["call_tool", "bash", %{"command" => 5}],
        ["call_tool", "python", %{}]
      ]
    }

    {out, status} =
      System.cmd(
        Application.fetch_env!(:ex_bashkit, :test_mcp_python),
        [client(), ExBashkit.JSON.encode!(plan)],
        stderr_to_stdout: true
      )

    assert status == 0, out <> "\nserver stderr:\n" <> File.read!(stderr)
    {:ok, said} = ExBashkit.JSON.decode(out)

    assert said["protocol_version"] == "2025-06-18"
    assert said["server"]["name"] == "ex_bashkit"
    assert said["instructions"] =~ "sandboxed"

    [
      tools,
      ls,
      read,
      edit,
      write,
      list,
      ping,
      cancelled,
      after_cancel,
      read_only,
      bad_argument,
      unknown
    ] = said["steps"]

    assert Enum.map(tools["tools"], & &1["name"]) == [
             "bash",
             "read_file",
             "write_file",
             "edit_file",
             "list_dir",
             "grep",
             "glob"
           ]

    assert ls == %{"is_error" => false, "text" => "exit code: 0\nstdout:\ncopy.txt\n"}
    assert read == %{"is_error" => false, "text" => "     1\tfrom the host\n"}
    assert edit["is_error"] == false
    assert write["is_error"] == false
    assert list["text"] =~ "copy.txt" and list["text"] =~ "new/"
    assert ping == %{"pong" => true}
    assert cancelled["raised"] == "MCPError" and cancelled["message"] =~ "timed out"
    # Cancelled, the sleep did not hold the session: the next call ran.
    assert after_cancel == %{
             "is_error" => false,
             "text" => "exit code: 0\nstdout:\nfrom the sandbox\n/tmp\n"
           }

    # The mount is read-only, the host file untouched.
    assert read_only["text"] =~ "exit code: 1"
    assert File.read!(Path.join(dir, "hello.txt")) == "from the host\n"

    assert bad_argument == %{
             "is_error" => true,
             "text" => ~s(Argument "command" must be a string; got 5.)
           }

    assert unknown["raised"] == "MCPError" and unknown["message"] =~ "Unknown tool: python"
  end

  test "stdout carries JSON-RPC alone; the answers come in the order asked" do
    lines = [
      ~s({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
      ~s({"jsonrpc":"2.0","method":"notifications/initialized"}),
      ~s({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo to-stdout; echo to-stderr >&2"}}}),
      "this is not json",
      <<0xFF, 0xFE, ?\n>> |> binary_part(0, 2),
      ~s({"jsonrpc":"2.0","id":3,"method":"nope"}),
      ~s({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo still here"}}})
    ]

    {out, status} = run_server(lines, [])
    assert status == 0

    replies =
      for line <- String.split(out, "\n", trim: true) do
        case ExBashkit.JSON.decode(line) do
          {:ok, %{"jsonrpc" => "2.0"} = reply} -> reply
          _ -> flunk("not JSON-RPC on stdout: #{inspect(line)}\nall of stdout: #{inspect(out)}")
        end
      end

    # Tool calls run apart, in the order sent; other answers come at once.
    assert [%{"id" => 1, "result" => %{"protocolVersion" => "2025-06-18"}} | rest] = replies
    {calls, others} = Enum.split_with(rest, &(&1["id"] in [2, 4]))

    assert [
             %{"id" => nil, "error" => %{"code" => -32700}},
             %{"id" => nil, "error" => %{"code" => -32700}},
             %{"id" => 3, "error" => %{"code" => -32601}}
           ] = others

    assert [
             %{"id" => 2, "result" => %{"isError" => false, "content" => [%{"text" => text2}]}},
             %{
               "id" => 4,
               "result" => %{"content" => [%{"text" => "exit code: 0\nstdout:\nstill here\n"}]}
             }
           ] = calls

    assert text2 == "exit code: 0\nstdout:\nto-stdout\nstderr:\nto-stderr\n"
  end

  test "a bad flag: an error on stderr, nothing on stdout, a failing exit status" do
    for {flags, message} <- [
          {["--bogus"], "unknown or malformed flag --bogus"},
          {["--isolation", "vm"], "--isolation takes process or none"},
          {["--mount", "nocolon"], "--mount takes HOST:PATH"},
          {["--limit", "max_commands=-1"], "--limit takes KEY=NUMBER"},
          {["--limit", "max_bogus=5"], "max_bogus"}
        ] do
      {out, status, err} = run_server_split([], flags)
      assert status != 0, inspect(flags)
      assert out == "", inspect({flags, out})
      assert err =~ message, inspect({flags, err})
    end
  end

  test "the session's options from the flags" do
    opts = fn argv ->
      argv
      |> Mix.ExBashkit.Flags.parse!(
        Mix.ExBashkit.Flags.switches(timeout_ms: :integer, isolation: :string),
        "t"
      )
      |> Mix.Tasks.ExBashkit.Mcp.session_options()
    end

    assert opts.(~w(--isolation none --timeout-ms 5000 --limit max_commands=9 --python)) == [
             limits: [timeout_ms: 5000, max_commands: 9],
             isolation: :none,
             python: true
           ]

    assert opts.(~w(--allow-net http://127.0.0.1:4000/ --isolation process --env A=1)) == [
             isolation: :process,
             allow_net: ["http://127.0.0.1:4000/"],
             env: [{"A", "1"}]
           ]

    assert opts.(~w(--mount /tmp/in:/in:rw)) == [
             isolation: :process,
             mounts: [{"/in", "/tmp/in", :read_write}]
           ]

    assert Keyword.fetch!(opts.([]), :isolation) == :process
  end

  defp client, do: Path.expand("../../support/mcp_client.py", __DIR__)

  # Runs `mix ex_bashkit.mcp flags` with `lines` on its stdin (then closed):
  # {stdout, exit status}.
  defp run_server(lines, flags) do
    {out, status, _err} = run_server_split(lines, flags)
    {out, status}
  end

  defp run_server_split(lines, flags) do
    dir = ExBashkit.Case.tmp_path("mcp_stdio")

    File.mkdir_p!(dir)
    input = Path.join(dir, "in")
    File.write!(input, Enum.map(lines, &[&1, ?\n]))
    args = Enum.map_join(["ex_bashkit.mcp" | flags], " ", &shell_quote/1)

    script =
      "#{shell_quote(mix!())} #{args} < #{shell_quote(input)} 2> #{shell_quote(Path.join(dir, "err"))}"

    {out, status} = System.cmd("sh", ["-c", script], env: env(), cd: File.cwd!())
    err = File.read!(Path.join(dir, "err"))
    File.rm_rf!(dir)
    {out, status, err}
  end

  defp shell_quote(text), do: "'" <> String.replace(text, "'", "'\\''") <> "'"
end
