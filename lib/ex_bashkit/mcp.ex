defmodule ExBashkit.MCP do
  @moduledoc """
  A [Model Context Protocol](https://modelcontextprotocol.io) server
  (revision 2025-06-18) for a sandbox, over any transport: it takes one
  decoded JSON-RPC message at a time and gives the answer to send back.
  Any MCP client — Claude Desktop, Claude Code, Cursor, an agent
  framework — can then run commands and edit files in the sandbox through
  the tools of `ExBashkit.Tool` (bash, read_file, write_file, edit_file,
  list_dir).

  `mix ex_bashkit.mcp` serves it over stdio (`ExBashkit.MCP.Stdio`); an
  application can serve it over its own transport, such as Streamable
  HTTP from a Phoenix endpoint (see "MCP" in `guides/agent_tools.md`).

      iex> mcp = ExBashkit.MCP.new(ExBashkit.Session.new())
      iex> {reply, mcp} =
      ...>   ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 1, "method" => "initialize",
      ...>     "params" => %{"protocolVersion" => "2025-06-18", "capabilities" => %{},
      ...>                   "clientInfo" => %{"name" => "doc", "version" => "1"}}})
      iex> reply["result"]["protocolVersion"]
      "2025-06-18"
      iex> {nil, mcp} = ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "method" => "notifications/initialized"})
      iex> {reply, _mcp} =
      ...>   ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 2, "method" => "tools/call",
      ...>     "params" => %{"name" => "bash", "arguments" => %{"command" => "echo hi"}}})
      iex> reply
      %{"jsonrpc" => "2.0", "id" => 2,
        "result" => %{"content" => [%{"type" => "text", "text" => "exit code: 0\\nstdout:\\nhi\\n"}],
                      "isError" => false}}

  ## What it answers

    * `initialize` — the protocol revision (2025-06-18, or the older
      2025-03-26 or 2024-11-05 when the client asks for one of them), the
      `tools` capability and the server's name and version. Every other
      request but `ping` before it is refused (-32600).
    * `ping` — an empty result.
    * `tools/list` — the tools, with their JSON schemas.
    * `tools/call` — runs one tool. A failure of the tool (a command that
      exits non-zero is not one; a missing file, a bad argument value or a
      script over its time limit are) is a result with `"isError": true`
      and text the model can act on, as revision 2025-11-25 asks for input
      errors too; an unknown tool or params that are not
      `{"name": string, "arguments": object}` are errors -32602.
    * any other method is -32601; a message that is not a JSON-RPC 2.0
      request or notification is -32600; text that is not JSON, -32700
      (from `handle_json/2`). Notifications get no answer, and neither do
      responses (this server sends no requests).

  A `tools/call` leaves the state as it was, so a transport may run it
  apart (a task) while it answers other messages, as
  `ExBashkit.MCP.Stdio` does to serve `ping` and
  `notifications/cancelled` during a long script.
  """

  alias ExBashkit.{JSON, Options, Sandbox, Tool}

  @protocol_versions ["2025-06-18", "2025-03-26", "2024-11-05"]
  @latest_version hd(@protocol_versions)

  @parse_error -32_700
  @invalid_request -32_600
  @method_not_found -32_601
  @invalid_params -32_602

  defstruct tools: [],
            sandbox: nil,
            server_info: %{},
            instructions: nil,
            phase: :new,
            protocol_version: nil

  @typedoc """
  A server's state: its tools, the sandbox they run in (nil when built
  from a list of tools) and where the protocol's lifecycle stands.
  """
  @type t :: %__MODULE__{
          tools: [Tool.t()],
          sandbox: Sandbox.t() | nil,
          server_info: map(),
          instructions: String.t() | nil,
          phase: :new | :initialized | :ready,
          protocol_version: String.t() | nil
        }

  @typedoc "A decoded JSON-RPC message: a map with string keys."
  @type message :: map()

  @default_instructions """
  The tools run in one sandboxed, persistent bash session: files, \
  environment variables and the working directory persist between calls. \
  It is not the user's machine; its filesystem is virtual.\
  """

  @schema [
    tool_options: [
      type: {:custom, &__MODULE__.keyword!/1},
      default: [],
      doc:
        "options for `ExBashkit.Tool.all/2` (e.g. `max_output_bytes: 8_192`), with a session or server."
    ],
    run_code: [
      type: {:or, [:boolean, {:custom, &__MODULE__.run_code!/1}]},
      default: false,
      doc:
        "adds the `run_code` tool (`ExBashkit.Tool.run_code/1`: a program run once in a " <>
          "fresh sandbox): `true`, or the tool's options."
    ],
    name: [
      type: {:custom, &__MODULE__.name!/1},
      default: "ex_bashkit",
      doc: "the server's name, as `initialize` says it."
    ],
    version: [
      type: {:or, [{:in, [nil]}, {:custom, &__MODULE__.version!/1}]},
      default: nil,
      doc: "the server's version, as `initialize` says it (default: the library's)."
    ],
    instructions: [
      type: {:or, [{:in, [nil]}, {:custom, &__MODULE__.instructions!/1}]},
      default: @default_instructions,
      doc: "text for the model about the tools; `nil` sends none."
    ]
  ]

  @doc """
  A server whose tools run in `target`: a session (`ExBashkit.Session`)
  or a session server (`ExBashkit.Server`), for which it offers the tools
  of `ExBashkit.Tool.all/2`, or a list of `ExBashkit.Tool` structs of your
  own choosing.

      iex> mcp = ExBashkit.MCP.new(ExBashkit.Session.new(), name: "sandbox")
      iex> Enum.map(mcp.tools, & &1.name)
      ["bash", "read_file", "write_file", "edit_file", "list_dir", "grep", "glob"]
      iex> ExBashkit.MCP.new(ExBashkit.Session.new(), run_code: [languages: [:javascript]]).tools
      ...> |> List.last() |> Map.fetch!(:name)
      "run_code"

  ## Options

  #{Options.docs(@schema)}
  """
  @spec new(Sandbox.t() | [Tool.t()], keyword()) :: t()
  def new(target, opts \\ []) do
    config = Options.validate!(opts, @schema, "ExBashkit.MCP.new/2")
    {tools, sandbox} = tools!(target, config.tool_options)

    tools =
      case config.run_code do
        false -> tools
        true -> tools ++ [Tool.run_code()]
        opts -> tools ++ [Tool.run_code(opts)]
      end

    %__MODULE__{
      tools: tools,
      sandbox: sandbox,
      server_info: %{"name" => config.name, "version" => config.version || version()},
      instructions: config.instructions
    }
  end

  @doc """
  Handles one decoded message: `{reply, mcp}`, where `reply` is the
  response to send (a map, to encode as JSON) or `nil` when there is none
  to send (a notification, a response).

      iex> mcp = ExBashkit.MCP.new(ExBashkit.Session.new())
      iex> {reply, mcp} = ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 7, "method" => "ping"})
      iex> reply
      %{"jsonrpc" => "2.0", "id" => 7, "result" => %{}}
      iex> {reply, _mcp} = ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 8, "method" => "tools/list"})
      iex> reply["error"]
      %{"code" => -32600, "message" => "Invalid Request: send initialize first"}
      iex> {_reply, mcp} = ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 9, "method" => "initialize"})
      iex> {reply, _mcp} = ExBashkit.MCP.handle(mcp, %{"jsonrpc" => "2.0", "id" => 10, "method" => "resources/list"})
      iex> reply["error"]
      %{"code" => -32601, "message" => "Method not found: resources/list"}
  """
  @spec handle(t(), message() | term()) :: {message() | nil, t()}
  def handle(%__MODULE__{} = mcp, message) do
    case classify(message) do
      {:request, id, method, params} -> request(mcp, id, method, params)
      {:notification, method, _params} -> {nil, notification(mcp, method)}
      :response -> {nil, mcp}
      {:invalid, id, why} -> {error(id, @invalid_request, "Invalid Request: " <> why), mcp}
    end
  end

  @doc """
  `handle/2` on one JSON text, for transports that carry text: the JSON
  reply, or `nil`. Text that is not JSON is answered with a parse error.

      iex> mcp = ExBashkit.MCP.new(ExBashkit.Session.new())
      iex> {reply, _mcp} = ExBashkit.MCP.handle_json(mcp, "{not json")
      iex> reply =~ ~s("code":-32700)
      true
  """
  @spec handle_json(t(), binary()) :: {binary() | nil, t()}
  def handle_json(%__MODULE__{} = mcp, text) when is_binary(text) do
    {reply, mcp} =
      case JSON.decode(text) do
        {:ok, message} -> handle(mcp, message)
        {:error, why} -> {error(nil, @parse_error, "Parse error: " <> why), mcp}
      end

    {reply && encode_reply(reply), mcp}
  end

  @doc """
  What a message is: a request (with its id), a notification, a response,
  or not a valid JSON-RPC 2.0 message (with the id to answer, if any).
  Transports use it to route a message before `handle/2`.

      iex> ExBashkit.MCP.classify(%{"jsonrpc" => "2.0", "id" => 3, "method" => "tools/call", "params" => %{}})
      {:request, 3, "tools/call", %{}}
      iex> ExBashkit.MCP.classify([])
      {:invalid, nil, "a message is a JSON object (batches are not part of revision 2025-06-18)"}
  """
  @spec classify(term()) ::
          {:request, String.t() | integer(), String.t(), map()}
          | {:notification, String.t(), map()}
          | :response
          | {:invalid, String.t() | integer() | nil, String.t()}
  def classify(%{"jsonrpc" => "2.0", "method" => method} = message) when is_binary(method) do
    params = Map.get(message, "params", %{})

    cond do
      not is_map(params) -> {:invalid, valid_id(message), "params must be an object"}
      not Map.has_key?(message, "id") -> {:notification, method, params}
      valid_id(message) -> {:request, message["id"], method, params}
      true -> {:invalid, nil, "id must be a string or an integer"}
    end
  end

  def classify(%{"jsonrpc" => "2.0", "id" => _} = message)
      when is_map_key(message, "result") or is_map_key(message, "error"),
      do: :response

  def classify(%{} = message),
    do: {:invalid, valid_id(message), ~s(not a JSON-RPC 2.0 request: "jsonrpc" or "method")}

  def classify(_other),
    do:
      {:invalid, nil,
       "a message is a JSON object (batches are not part of revision #{@latest_version})"}

  @doc false
  # The JSON of a reply; a reply that cannot be encoded (it always can: our
  # texts are valid UTF-8) becomes an internal error rather than a crash.
  @spec encode_reply(message()) :: binary()
  def encode_reply(reply) do
    case JSON.encode(reply) do
      {:ok, json} -> json
      {:error, why} -> JSON.encode!(error(reply["id"], -32_603, "Internal error: " <> why))
    end
  end

  @doc false
  @spec error(String.t() | integer() | nil, integer(), String.t()) :: message()
  def error(id, code, message),
    do: %{"jsonrpc" => "2.0", "id" => id, "error" => %{"code" => code, "message" => message}}

  # ---- requests ---------------------------------------------------------------

  defp request(mcp, id, "initialize", params) do
    if mcp.phase == :new do
      version = negotiate(params["protocolVersion"])

      {result(id, initialize_result(mcp, version)),
       %{mcp | phase: :initialized, protocol_version: version}}
    else
      {error(id, @invalid_request, "Invalid Request: the session is already initialized"), mcp}
    end
  end

  defp request(mcp, id, "ping", _params), do: {result(id, %{}), mcp}

  defp request(%{phase: :new} = mcp, id, _method, _params),
    do: {error(id, @invalid_request, "Invalid Request: send initialize first"), mcp}

  defp request(mcp, id, "tools/list", _params),
    do: {result(id, %{"tools" => Enum.map(mcp.tools, &tool_entry/1)}), mcp}

  defp request(mcp, id, "tools/call", %{"name" => name} = params) when is_binary(name) do
    arguments = Map.get(params, "arguments", %{})

    cond do
      not is_map(arguments) ->
        {error(id, @invalid_params, "Invalid params: arguments must be an object"), mcp}

      tool = Enum.find(mcp.tools, &(name in [&1.name, Tool.provider_name(&1)])) ->
        {result(id, call_result(tool, arguments)), mcp}

      true ->
        {error(id, @invalid_params, "Unknown tool: #{name}. The tools are: #{tool_names(mcp)}."),
         mcp}
    end
  end

  defp request(mcp, id, "tools/call", _params),
    do: {error(id, @invalid_params, ~s(Invalid params: tools/call needs a "name" string)), mcp}

  defp request(mcp, id, method, _params),
    do: {error(id, @method_not_found, "Method not found: #{method}"), mcp}

  defp notification(%{phase: :initialized} = mcp, "notifications/initialized"),
    do: %{mcp | phase: :ready}

  # Cancellation is the transport's to act on (it knows what runs); any
  # other notification needs nothing from us.
  defp notification(mcp, _method), do: mcp

  defp initialize_result(mcp, version) do
    %{
      "protocolVersion" => version,
      "capabilities" => %{"tools" => %{"listChanged" => false}},
      "serverInfo" => mcp.server_info
    }
    |> then(&if mcp.instructions, do: Map.put(&1, "instructions", mcp.instructions), else: &1)
  end

  # The client's revision when we speak it, else ours; the client then
  # decides whether it can go on.
  defp negotiate(version) when version in @protocol_versions, do: version
  defp negotiate(_version), do: @latest_version

  defp tool_entry(%Tool{} = tool),
    do: %{
      "name" => Tool.provider_name(tool),
      "description" => tool.description,
      "inputSchema" => tool.parameters
    }

  defp call_result(tool, arguments) do
    {is_error, text} =
      try do
        case Tool.call(tool, arguments) do
          {:ok, text} -> {false, text}
          {:error, text} -> {true, text}
        end
      catch
        :exit, reason -> {true, "The #{tool.name} tool failed: #{Exception.format_exit(reason)}"}
      end

    %{"content" => [%{"type" => "text", "text" => text}], "isError" => is_error}
  end

  defp result(id, result), do: %{"jsonrpc" => "2.0", "id" => id, "result" => result}

  defp valid_id(%{"id" => id}) when is_binary(id) or is_integer(id), do: id
  defp valid_id(_message), do: nil

  defp tool_names(mcp), do: Enum.map_join(mcp.tools, ", ", &Tool.provider_name/1)

  # ---- options ----------------------------------------------------------------

  defp tools!(tools, _tool_options) when is_list(tools) do
    unless Enum.all?(tools, &is_struct(&1, Tool)) do
      raise ArgumentError,
            "ExBashkit.MCP.new/2 takes a session, a server or a list of ExBashkit.Tool " <>
              "structs, got: #{inspect(tools)}"
    end

    {tools, nil}
  end

  defp tools!(target, tool_options) do
    sandbox = Sandbox.Target.validate!(target, "the target of ExBashkit.MCP.new/2")
    {Tool.all(sandbox, tool_options), sandbox}
  end

  @doc false
  def run_code!(opts) do
    if Keyword.keyword?(opts),
      do: opts,
      else:
        raise(
          ArgumentError,
          ":run_code must be a boolean or a keyword list, got: #{inspect(opts)}"
        )
  end

  @doc false
  def keyword!(opts) do
    if Keyword.keyword?(opts),
      do: opts,
      else: raise(ArgumentError, ":tool_options must be a keyword list, got: #{inspect(opts)}")
  end

  @doc false
  def name!(text), do: text!(text, :name)
  @doc false
  def version!(text), do: text!(text, :version)
  @doc false
  def instructions!(text), do: text!(text, :instructions)

  defp text!(text, _option) when is_binary(text) and text != "", do: text

  defp text!(other, option),
    do:
      raise(
        ArgumentError,
        "#{inspect(option)} must be a non-empty string, got: #{inspect(other)}"
      )

  defp version, do: to_string(Application.spec(:ex_bashkit, :vsn) || "0.0.0")
end
