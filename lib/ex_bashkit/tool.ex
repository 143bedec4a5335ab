# Over 500 lines for its documentation: 240 are code, the rest the docs
# and doctests of the public API (the work lives in tool/).
defmodule ExBashkit.Tool do
  @moduledoc """
  Ready-made tools for LLM agents: bash, file tools and Elixir, as plain
  data any agent library can take.

  A tool has a `:name`, a `:description` written for a model, a JSON
  schema of its `:parameters` (string keys, as a provider's API wants
  them), and a `:function` that runs one call from the model's decoded
  arguments and answers `{:ok, text}` or `{:error, text}`: text the
  model can read, with the exit code, stdout and stderr cut to a byte
  budget (head and tail kept, the number of dropped bytes said), bytes
  that are not UTF-8 shown as `\\xNN`, and failures explained in words
  the model can act on.

      iex> session = ExBashkit.Session.new()
      iex> [bash | _] = tools = ExBashkit.Tool.all(session)
      iex> Enum.map(tools, & &1.name)
      ["bash", "read_file", "write_file", "edit_file", "list_dir", "grep", "glob"]
      iex> ExBashkit.Tool.call(bash, %{"command" => "cd /tmp && echo hi > a.txt && ls"})
      {:ok, "exit code: 0\\nstdout:\\na.txt\\n"}
      iex> ExBashkit.Tool.run(tools, "read_file", %{"path" => "a.txt"})
      {:ok, "     1\\thi\\n"}
      iex> ExBashkit.Tool.call(bash, %{"command" => "exit 3", "timeout_ms" => "soon"})
      {:error, ~s(Argument "timeout_ms" must be an integer ≥ 1; got "soon".)}

  The tools take a session (`ExBashkit.Session`) or a session server
  (`ExBashkit.Server`, a pid or a name, on any node): one per
  conversation, so the model's files, variables and working directory
  persist from call to call. Relative paths in the file tools are
  resolved against the shell's working directory, as `cd` left it.

  ## Adapters

  Agent libraries each want a tool in their own shape. These functions
  build that shape as plain data, without depending on the library:

    * LangChain — `to_langchain/1` gives the map `LangChain.Function.new!/1`
      takes:

          tools = Enum.map(ExBashkit.Tool.all(session), fn tool ->
            tool |> ExBashkit.Tool.to_langchain() |> LangChain.Function.new!()
          end)

    * ReqLLM — `to_req_llm/1` gives the options of `ReqLLM.tool/1`:

          tools = Enum.map(ExBashkit.Tool.all(session), &ReqLLM.tool(ExBashkit.Tool.to_req_llm(&1)))

    * Jido — `to_jido/1` gives an action's `name`, `description` and
      NimbleOptions `schema`, plus `run/2` answering `{:ok, %{output: text}}`:

          defmodule MyApp.Actions.Bash do
            use Jido.Action,
              name: "bash",
              description: "Runs a bash script in the conversation's sandbox.",
              schema: [command: [type: :string, required: true], timeout_ms: [type: :pos_integer]]

            @impl true
            def run(params, %{session: session}) do
              ExBashkit.Tool.to_jido(ExBashkit.Tool.bash(session)).run.(params, %{})
            end
          end

    * OpenAI and Anthropic APIs — `to_openai/2` and `to_anthropic/1` give
      the entries of a request's `"tools"` list; `run/3` answers the
      model's tool call by name:

          body = %{"model" => model, "messages" => messages,
                   "tools" => Enum.map(tools, &ExBashkit.Tool.to_openai/1)}
          # for each tool call in the answer:
          {_, text} = ExBashkit.Tool.run(tools, call["function"]["name"],
                                         JSON.decode!(call["function"]["arguments"]))

  `examples/agent.exs` runs a whole agent loop with these tools.
  """

  alias ExBashkit.{Options, Sandbox}
  alias ExBashkit.Tool.{Arguments, Declarations, Files, Runs, Schema, Search}

  @enforce_keys [:name, :description, :parameters, :function]
  defstruct [:name, :description, :parameters, :function, call: nil, approve: nil]

  @typedoc "What a tool call answers: text for the model, marked as success or failure."
  @type answer :: {:ok, String.t()} | {:error, String.t()}

  @type t :: %__MODULE__{
          name: String.t(),
          description: String.t(),
          parameters: map(),
          function: (%{String.t() => term()} -> answer()),
          call: (%{String.t() => term()} -> {:ok, term()} | {:error, String.t()}) | nil,
          approve: (%{String.t() => term()} -> :ok | {:deny, String.t()}) | nil
        }

  @doc """
  A tool of your application, defined once for every surface (see "Code
  mode" in `guides/code.md`): the model's tool list and the MCP server
  (`call/2`, the adapters), a bash command in the sessions given it as
  `:tools` (`orders list --customer acme`, or the arguments as JSON on
  stdin), and a function in their JavaScript
  (`await tools.orders.list({customer: "acme"})`).

  `:function` gets the arguments (string keys, already checked against
  `:parameters`) and answers `{:ok, value}`, a JSON-encodable value, or
  `{:error, message}`. On every surface the same steps run: the
  arguments' check, `:approve`, the function, and a telemetry span
  `[:ex_bashkit, :tool, …]`.

      iex> lookup = ExBashkit.Tool.new(
      ...>   name: "orders.get",
      ...>   description: "One order by its id.",
      ...>   parameters: %{"type" => "object", "properties" => %{"id" => %{"type" => "integer"}},
      ...>                 "required" => ["id"]},
      ...>   function: fn %{"id" => id} -> {:ok, %{id: id, total: 42}} end
      ...> )
      iex> ExBashkit.Tool.call(lookup, %{"id" => 7})
      {:ok, ~s({"id":7,"total":42})}
      iex> session = ExBashkit.Session.new(tools: [lookup])
      iex> {:ok, result} = ExBashkit.Session.exec(session, "orders get --id 7 | jq .total")
      iex> result.stdout
      "42\\n"

  ## Options

  #{Options.docs(Schema.options(:new))}
  """
  @spec new(keyword()) :: t()
  def new(opts) do
    config = Options.validate!(opts, Schema.options(:new), "ExBashkit.Tool.new/1")

    tool = %__MODULE__{
      name: config.name,
      description: config.description,
      parameters: config.parameters,
      call: config.function,
      approve: config.approve,
      function: nil
    }

    %{tool | function: &answer_model(tool, &1)}
  end

  defp answer_model(tool, args) do
    case ExBashkit.Tool.Call.execute(tool, args, :model) do
      {:ok, value} when is_binary(value) -> {:ok, value}
      {:ok, value} -> {:ok, ExBashkit.JSON.encode!(value)}
      {:error, _} = error -> error
    end
  end

  @doc """
  The bash tool: runs a command in `target` (a session or a server).

  Its arguments: `command` (required) and `timeout_ms`, which is clamped
  to the session's own `:timeout_ms`.

      iex> bash = ExBashkit.Tool.bash(ExBashkit.Session.new(), timeout_ms: 5_000)
      iex> ExBashkit.Tool.call(bash, %{"command" => "echo $((2 ** 10))"})
      {:ok, "exit code: 0\\nstdout:\\n1024\\n"}

  ## Options

  #{Options.docs(Schema.options(:bash))}
  """
  @spec bash(Sandbox.t(), keyword()) :: t()
  def bash(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:bash), "ExBashkit.Tool.bash/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:bash, config, &Runs.bash(target, &1, config))
  end

  @doc """
  The read_file tool: a file's lines, numbered, optionally a range of them.

  Its arguments: `path` (required), `offset` (first line, from 1) and
  `limit` (how many lines; 2000 when not given).

      iex> session = ExBashkit.Session.new(files: %{"/abc.txt" => "a\\nb\\nc\\n"})
      iex> ExBashkit.Tool.call(ExBashkit.Tool.read_file(session), %{"path" => "/abc.txt", "offset" => 3})
      {:ok, "[/abc.txt: lines 3-3 of 3; pass offset and limit to read others]\\n     3\\tc\\n"}

  ## Options

  #{Options.docs(Schema.options(:read_file))}
  """
  @spec read_file(Sandbox.t(), keyword()) :: t()
  def read_file(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:read_file), "ExBashkit.Tool.read_file/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:read_file, config, &Files.read(target, &1, config.max_output_bytes))
  end

  @doc """
  The write_file tool: creates or overwrites a file, with its parent
  directories.

  Its arguments: `path` and `content`, both required.

      iex> session = ExBashkit.Session.new()
      iex> ExBashkit.Tool.call(ExBashkit.Tool.write_file(session), %{"path" => "/new/dir/f.txt", "content" => "hi"})
      {:ok, "Wrote 2 bytes to /new/dir/f.txt."}

  ## Options

  #{Options.docs(Schema.options(:read_file))}
  """
  @spec write_file(Sandbox.t(), keyword()) :: t()
  def write_file(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:write_file), "ExBashkit.Tool.write_file/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:write_file, config, &Files.write(target, &1))
  end

  @doc """
  The edit_file tool: replaces an exact piece of text in a file.

  Its arguments: `path`, `old_string` and `new_string` (required), and
  `replace_all`. Without `replace_all`, `old_string` must occur exactly
  once.

      iex> session = ExBashkit.Session.new(files: %{"/f.txt" => "a = 1\\nb = 1\\n"})
      iex> edit = ExBashkit.Tool.edit_file(session)
      iex> ExBashkit.Tool.call(edit, %{"path" => "/f.txt", "old_string" => "= 1", "new_string" => "= 2"})
      {:error, "old_string occurs 2 times in /f.txt. Include more of the surrounding text to make it unique, or set replace_all to true to replace every one."}
      iex> ExBashkit.Tool.call(edit, %{"path" => "/f.txt", "old_string" => "b = 1", "new_string" => "b = 2"})
      {:ok, "Replaced 1 occurrence in /f.txt."}

  ## Options

  #{Options.docs(Schema.options(:read_file))}
  """
  @spec edit_file(Sandbox.t(), keyword()) :: t()
  def edit_file(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:edit_file), "ExBashkit.Tool.edit_file/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:edit_file, config, &Files.edit(target, &1))
  end

  @doc """
  The list_dir tool: a directory's entries, directories marked with `/`
  and symbolic links with `@`.

  Its argument: `path` (the working directory when not given).

      iex> session = ExBashkit.Session.new(files: %{"/p/a.txt" => "", "/p/sub/b.txt" => ""})
      iex> ExBashkit.Tool.call(ExBashkit.Tool.list_dir(session), %{"path" => "/p"})
      {:ok, "/p:\\na.txt\\nsub/\\n"}

  ## Options

  #{Options.docs(Schema.options(:read_file))}
  """
  @spec list_dir(Sandbox.t(), keyword()) :: t()
  def list_dir(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:list_dir), "ExBashkit.Tool.list_dir/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:list_dir, config, &Files.list(target, &1, config.max_output_bytes))
  end

  @doc """
  The grep tool: searches the contents of the sandbox's files for a
  regular expression (bashkit's `grep -r`), answering `path:line:text`
  lines, at most `max_matches` of them, each cut to `max_line_bytes`.

  Its arguments: `pattern` (required), `path`, `include` and `exclude`
  (globs on file names), `ignore_case`, `max_matches`, `max_line_bytes`.

      iex> session = ExBashkit.Session.new(files: %{"/src/a.ex" => "# TODO one\\n", "/src/b.md" => "TODO two\\n"})
      iex> ExBashkit.Tool.call(ExBashkit.Tool.grep(session), %{"pattern" => "TODO", "path" => "/src", "include" => "*.ex"})
      {:ok, "1 matches:\\n/src/a.ex:1:# TODO one\\n"}

  ## Options

  #{Options.docs(Schema.options(:grep))}
  """
  @spec grep(Sandbox.t(), keyword()) :: t()
  def grep(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:grep), "ExBashkit.Tool.grep/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:grep, config, &Search.grep(target, &1, config.max_output_bytes))
  end

  @doc """
  The glob tool: the sandbox's paths that match a glob pattern, `**`
  matching any number of directories.

  Its arguments: `pattern` (required), `path` (where to start) and
  `max_results`.

      iex> session = ExBashkit.Session.new(files: %{"/src/a.ex" => "", "/src/lib/b.ex" => "", "/src/c.md" => ""})
      iex> ExBashkit.Tool.call(ExBashkit.Tool.glob(session), %{"pattern" => "**/*.ex", "path" => "/src"})
      {:ok, "2 paths:\\na.ex\\nlib/b.ex\\n"}

  ## Options

  #{Options.docs(Schema.options(:glob))}
  """
  @spec glob(Sandbox.t(), keyword()) :: t()
  def glob(target, opts \\ []) do
    config = Options.validate!(opts, Schema.options(:glob), "ExBashkit.Tool.glob/2")
    target = Sandbox.Target.validate!(target, :target)
    build(:glob, config, &Search.glob(target, &1, config.max_output_bytes))
  end

  @doc """
  The elixir tool: evaluates Elixir code on a fresh peer node with
  `ExBashkit.Peer.run/2`, answering what it printed and its value.

  Its arguments: `code` (required) and `timeout_ms`.

      iex> elixir = ExBashkit.Tool.elixir()
      iex> ExBashkit.Tool.call(elixir, %{"code" => ~S|IO.puts("hi"); Enum.sum(1..4)|})
      {:ok, "output:\\nhi\\n\\nresult: 10\\n"}

  ## Options

  #{Options.docs(Schema.options(:elixir))}
  """
  @spec elixir(keyword()) :: t()
  def elixir(opts \\ []) do
    config = Options.validate!(opts, Schema.options(:elixir), "ExBashkit.Tool.elixir/1")
    build(:elixir, config, &Runs.elixir(&1, config))
  end

  @doc """
  The run_code tool: runs a program the model writes once, in a fresh
  sandbox, with `ExBashkit.Code.run/2`, answering the value it returns
  (as JSON) and what it printed.

  Its arguments: `code` (required), `language` (one of `:languages`; the
  first when not given), `input` (any JSON value) and `timeout_ms`.

      iex> tool = ExBashkit.Tool.run_code()
      iex> ExBashkit.Tool.call(tool, %{"code" => "function execute(n) { return [n, n * n]; }", "input" => 7})
      {:ok, "output: [7,49]\\n"}
      iex> ExBashkit.Tool.call(tool, %{"code" => "print(1)", "language" => "ruby"})
      {:error, ~s(Argument "language" must be one of "javascript", "python", "bash"; got "ruby".)}

  ## Options

  #{Options.docs(Schema.options(:run_code))}
  """
  @spec run_code(keyword()) :: t()
  def run_code(opts \\ []) do
    config = Options.validate!(opts, Schema.options(:run_code), "ExBashkit.Tool.run_code/1")
    {name, description, parameters} = Schema.definition(:run_code, config.languages)

    %__MODULE__{
      name: config.name || name,
      description: config.description || description,
      parameters: parameters,
      function: &Runs.run_code(&1, config)
    }
  end

  @doc """
  The bash tool, the file tools and the search tools (grep, glob), all on `target`, with the same
  options.

      iex> ExBashkit.Session.new() |> ExBashkit.Tool.all(max_output_bytes: 4096) |> length()
      7
  """
  @spec all(Sandbox.t(), keyword()) :: [t()]
  def all(target, opts \\ []) do
    if Keyword.has_key?(opts, :name) or Keyword.has_key?(opts, :description) do
      raise ArgumentError,
            "ExBashkit.Tool.all/2 builds seven tools, so it takes no :name or :description; " <>
              "build the tool to rename with its own function"
    end

    bash = bash(target, opts)
    file_opts = Keyword.drop(opts, [:timeout_ms, :stats])

    [
      bash
      | Enum.map(
          [:read_file, :write_file, :edit_file, :list_dir, :grep, :glob],
          &apply(__MODULE__, &1, [target, file_opts])
        )
    ]
  end

  @doc """
  Runs one call of `tool` with the model's decoded arguments (string or
  atom keys). Arguments that do not match the tool's schema come back as
  `{:error, text}` saying what is wrong, and so does an exception raised
  inside the tool.

      iex> tool = ExBashkit.Tool.bash(ExBashkit.Session.new())
      iex> ExBashkit.Tool.call(tool, %{command: "echo out; echo err >&2; exit 4"})
      {:ok, "exit code: 4\\nstdout:\\nout\\nstderr:\\nerr\\n"}
      iex> ExBashkit.Tool.call(tool, %{})
      {:error, ~s(Missing required argument "command".)}
  """
  @spec call(t(), map()) :: answer()
  def call(%__MODULE__{} = tool, args) do
    with {:ok, args} <- Arguments.validate(tool.parameters, args) do
      try do
        tool.function.(args)
      rescue
        exception -> {:error, "The #{tool.name} tool failed: #{Exception.message(exception)}"}
      end
    end
  end

  @doc """
  Runs the call of the tool named `name` among `tools`, as a model asked
  for it; an unknown name is `{:error, text}` listing the tools there are.

      iex> tools = ExBashkit.Tool.all(ExBashkit.Session.new())
      iex> ExBashkit.Tool.run(tools, "python", %{})
      {:error, ~s(There is no tool "python". The tools are: bash, read_file, write_file, edit_file, list_dir, grep, glob.)}
  """
  @spec run([t()], String.t(), map()) :: answer()
  def run(tools, name, args) do
    case Enum.find(tools, &(name in [&1.name, provider_name(&1)])) do
      nil ->
        {:error,
         "There is no tool #{inspect(name)}. The tools are: #{Enum.map_join(tools, ", ", &provider_name/1)}."}

      tool ->
        call(tool, args)
    end
  end

  @doc """
  The name a provider's API sees: `name` with its dots as underscores
  (`orders.list` is `orders_list`), as their name patterns want.

      iex> ExBashkit.Tool.provider_name(%{name: "orders.list"})
      "orders_list"
  """
  @spec provider_name(t() | %{name: String.t()}) :: String.t()
  def provider_name(%{name: name}), do: String.replace(name, ".", "_")

  @doc """
  `text` cut to `budget` bytes for a model: itself when it fits, otherwise
  its first and last bytes, `budget` of them in all (half each, less where
  a cut would split a UTF-8 character), joined by a notice of how many
  bytes were dropped. A model that runs `make` wants the first error and
  the last lines; the middle of a long log is what can go.

      iex> ExBashkit.Tool.truncate("short", 5)
      "short"
      iex> ExBashkit.Tool.truncate("0123456789", 6)
      "012\\n[... 4 bytes dropped ...]\\n789"
      iex> ExBashkit.Tool.truncate("héllo wörld", 4)
      "h\\n[... 10 bytes dropped ...]\\nld"
  """
  @spec truncate(binary(), non_neg_integer()) :: binary()
  defdelegate truncate(text, budget), to: ExBashkit.Tool.Output

  @doc """
  `bytes` as valid UTF-8, safe to put in a prompt: each byte that is not
  part of a valid character becomes the four characters `\\xNN`.

      iex> ExBashkit.Tool.printable("plain text")
      "plain text"
      iex> ExBashkit.Tool.printable(<<"ok ", 0xFF, 0xFE>>)
      "ok \\\\xFF\\\\xFE"
  """
  @spec printable(binary()) :: String.t()
  defdelegate printable(bytes), to: ExBashkit.Tool.Output

  @doc """
  The map `LangChain.Function.new!/1` takes: `:name`, `:description`,
  `:parameters_schema` and a 2-arity `:function` (arguments, context).

      iex> tool = ExBashkit.Tool.bash(ExBashkit.Session.new())
      iex> function = ExBashkit.Tool.to_langchain(tool)
      iex> {function.name, function.parameters_schema["required"]}
      {"bash", ["command"]}
      iex> function.function.(%{"command" => "echo hi"}, %{})
      {:ok, "exit code: 0\\nstdout:\\nhi\\n"}
  """
  @spec to_langchain(t()) :: %{
          name: String.t(),
          description: String.t(),
          parameters_schema: map(),
          function: (map(), term() -> answer())
        }
  def to_langchain(%__MODULE__{} = tool) do
    %{
      name: provider_name(tool),
      description: tool.description,
      parameters_schema: tool.parameters,
      function: fn args, _context -> call(tool, args) end
    }
  end

  @doc """
  The options `ReqLLM.tool/1` takes: `:name`, `:description`,
  `:parameter_schema` (the JSON schema) and a 1-arity `:callback`.

      iex> tool = ExBashkit.Tool.list_dir(ExBashkit.Session.new())
      iex> opts = ExBashkit.Tool.to_req_llm(tool)
      iex> Keyword.keys(opts)
      [:name, :description, :parameter_schema, :callback]
      iex> opts[:callback].(%{"path" => "/tmp"})
      {:ok, "/tmp is empty."}
  """
  @spec to_req_llm(t()) :: keyword()
  def to_req_llm(%__MODULE__{} = tool) do
    [
      name: provider_name(tool),
      description: tool.description,
      parameter_schema: tool.parameters,
      callback: &call(tool, &1)
    ]
  end

  @doc """
  Jido action data: `:name`, `:description`, a NimbleOptions `:schema`
  (what `use Jido.Action` takes) and `:run`, a 2-arity function (params,
  context) answering `{:ok, %{output: text}}` or `{:error, text}`.

      iex> action = ExBashkit.Tool.to_jido(ExBashkit.Tool.bash(ExBashkit.Session.new()))
      iex> action.schema
      [
        command: [type: :string, required: true, doc: "The bash script to run; may span several lines."],
        timeout_ms: [type: :pos_integer, doc: "Time limit for this call in milliseconds (optional)."]
      ]
      iex> action.run.(%{command: "echo hi"}, %{})
      {:ok, %{output: "exit code: 0\\nstdout:\\nhi\\n"}}
  """
  @spec to_jido(t()) :: %{
          name: String.t(),
          description: String.t(),
          schema: keyword(),
          run: (map(), map() -> {:ok, %{output: String.t()}} | {:error, String.t()})
        }
  def to_jido(%__MODULE__{} = tool) do
    required = tool.parameters["required"]

    schema =
      for {key, spec} <- Enum.sort_by(tool.parameters["properties"], &elem(&1, 0)) do
        type = nimble_type(spec)

        {String.to_atom(key),
         [type: type] ++
           if(key in required, do: [required: true], else: []) ++ [doc: spec["description"]]}
      end

    %{
      name: provider_name(tool),
      description: tool.description,
      schema: schema,
      run: fn params, _context ->
        with {:ok, text} <- call(tool, params), do: {:ok, %{output: text}}
      end
    }
  end

  defp nimble_type(%{"type" => "integer", "minimum" => 1}), do: :pos_integer
  defp nimble_type(%{"type" => "integer"}), do: :integer
  defp nimble_type(%{"type" => "string"}), do: :string
  defp nimble_type(%{"type" => "boolean"}), do: :boolean

  @doc """
  An entry of OpenAI's `"tools"` list. `api: :chat` (the default) gives
  the Chat Completions shape, `api: :responses` the Responses API's.

      iex> tool = ExBashkit.Tool.bash(ExBashkit.Session.new())
      iex> %{"type" => "function", "function" => %{"name" => "bash", "parameters" => %{"type" => "object"}}} =
      ...>   ExBashkit.Tool.to_openai(tool)
      iex> %{"type" => "function", "name" => "bash", "parameters" => _} =
      ...>   ExBashkit.Tool.to_openai(tool, api: :responses)
  """
  @spec to_openai(t(), api: :chat | :responses) :: map()
  def to_openai(%__MODULE__{} = tool, opts \\ []) do
    %{api: api} =
      Options.validate!(
        opts,
        [api: [type: {:in, [:chat, :responses]}, default: :chat]],
        "ExBashkit.Tool.to_openai/2"
      )

    function = %{
      "name" => provider_name(tool),
      "description" => tool.description,
      "parameters" => tool.parameters
    }

    case api do
      :chat -> %{"type" => "function", "function" => function}
      :responses -> Map.put(function, "type", "function")
    end
  end

  @doc """
  An entry of Anthropic's Messages API `"tools"` list.

      iex> tool = ExBashkit.Tool.bash(ExBashkit.Session.new())
      iex> ExBashkit.Tool.to_anthropic(tool) |> Map.keys()
      ["description", "input_schema", "name"]
  """
  @spec to_anthropic(t()) :: map()
  def to_anthropic(%__MODULE__{} = tool),
    do: %{
      "name" => provider_name(tool),
      "description" => tool.description,
      "input_schema" => tool.parameters
    }

  defp build(kind, config, function) do
    {name, description, parameters} = Schema.definition(kind)

    %__MODULE__{
      name: config.name || name,
      description: config.description || description,
      parameters: parameters,
      function: function
    }
  end

  @doc """
  The tools as TypeScript declarations of the `tools` object a program
  calls them on (`ExBashkit.Code.run/2`, `node` in a session given
  `tools:`), for the model's prompt: each tool a function under its dotted
  name, its arguments typed from its JSON schema, its description and
  its arguments' descriptions as doc comments. The calls answer promises
  of the tool's JSON value.

      iex> orders = ExBashkit.Tool.new(
      ...>   name: "orders.list",
      ...>   description: "The orders of a customer.",
      ...>   parameters: %{"type" => "object",
      ...>                 "properties" => %{"customer" => %{"type" => "string"},
      ...>                                   "status" => %{"enum" => ["open", "paid"]}},
      ...>                 "required" => ["customer"]},
      ...>   function: fn _ -> {:ok, []} end)
      iex> ExBashkit.Tool.typescript([orders]) == \"""
      ...> declare const tools: {
      ...>   orders: {
      ...>     /**
      ...>      * The orders of a customer.
      ...>      */
      ...>     list(args: {
      ...>       customer: string;
      ...>       status?: "open" | "paid";
      ...>     }): Promise<unknown>;
      ...>   };
      ...> };
      ...> \"""
      true
  """
  @spec typescript([t()]) :: String.t()
  def typescript(tools) when is_list(tools), do: Declarations.typescript(tools)

  @doc """
  The tools as Python stubs of the `tools` object (the Python a program
  writes calls them with keyword arguments), for the model's prompt.

      iex> orders = ExBashkit.Tool.new(
      ...>   name: "orders.list",
      ...>   description: "The orders of a customer.",
      ...>   parameters: %{"type" => "object",
      ...>                 "properties" => %{"customer" => %{"type" => "string"},
      ...>                                   "limit" => %{"type" => "integer"}},
      ...>                 "required" => ["customer"]},
      ...>   function: fn _ -> {:ok, []} end)
      iex> ExBashkit.Tool.python([orders]) =~ "def list(*, customer: str, limit: int | None = None) -> Any:"
      true
  """
  @spec python([t()]) :: String.t()
  def python(tools) when is_list(tools), do: Declarations.python(tools)
end
