defmodule ExBashkit.Tool.Schema do
  @moduledoc false
  # What each tool tells a model — its default name, description and JSON
  # schema — and the options its constructor takes. The words are part of
  # the product: a model reads nothing else before it calls a tool.

  @path "Path of the file; relative paths start at the shell's working directory."
  @call_timeout "Time limit for this call in milliseconds (optional)."

  @common [
    name: [type: {:custom, &__MODULE__.name!/1}, doc: "the tool's name (default: its kind)."],
    description: [
      type: {:custom, &__MODULE__.text!/1},
      doc: "replaces the description the model reads."
    ],
    max_output_bytes: [
      type: :pos_integer,
      default: 16_384,
      doc: "the byte budget of each stream (or file excerpt) the model gets back."
    ]
  ]

  @run @common ++
         [
           timeout_ms: [
             type: {:or, [:pos_integer, {:in, [nil]}]},
             default: nil,
             doc:
               "the time limit of a call when the model gives none (default: the " <>
                 "session's; the elixir tool: `ExBashkit.Peer.run/2`'s)."
           ]
         ]

  @bash @run ++
          [
            stats: [
              type: :boolean,
              default: false,
              doc:
                "appends what each script cost to its output: wall and CPU time, peak memory " <>
                  "and commands run (`ExBashkit.Result.Stats`)."
            ]
          ]

  @elixir @run ++
            [
              peer: [
                type: {:custom, &__MODULE__.peer!/1},
                default: [],
                doc: "options for `ExBashkit.Peer.run/2` (`:setup`, `:env`, `:max_heap_size`)."
              ]
            ]

  @code @run ++
          [
            languages: [
              type: {:custom, &__MODULE__.languages!/1},
              default: [:javascript, :python, :bash],
              doc:
                "the languages the model may choose, of `:javascript`, `:typescript`, `:python`, " <>
                  "`:monty` (the Python that calls `:tools`) and `:bash`."
            ],
            code: [
              type: {:custom, &__MODULE__.code!/1},
              default: [],
              doc:
                "options for `ExBashkit.Code.run/2` (`:allow`, `:files`, `:memory_mb`, …) " <>
                  "other than `:language`, `:input` and `:timeout_ms`."
            ]
          ]

  @new [
    name: [
      type: {:custom, &__MODULE__.tool_name!/1},
      doc:
        "required: letters, digits, `_` and `-`, in segments joined by dots (`\"orders.list\"`); " <>
          "the first segment is the bash command, the rest its subcommands."
    ],
    description: [
      type: {:custom, &__MODULE__.required_text!/1},
      doc: "required: what the tool does, for a model."
    ],
    parameters: [
      type: {:custom, &__MODULE__.parameters!/1},
      default: %{"type" => "object", "properties" => %{}},
      doc: "the JSON schema of the arguments: an object schema with string keys."
    ],
    function: [
      type: {:custom, &__MODULE__.function!/1},
      doc: "required: `fn args -> {:ok, json_value} | {:error, message} end`."
    ],
    approve: [
      type: {:custom, &__MODULE__.approve!/1},
      default: nil,
      doc: "`fn args -> :ok | {:deny, reason} end`, asked before each call on every surface."
    ]
  ]

  @doc "The options schema of a tool's constructor."
  @spec options(atom()) :: keyword()
  def options(:bash), do: @bash
  def options(:elixir), do: @elixir
  def options(:run_code), do: @code
  def options(:new), do: @new
  def options(_file_tool), do: @common

  @doc """
  A tool's default name, description, and the JSON schema of its arguments
  (an object of `properties`, the `required` ones, nothing else allowed).
  """
  @spec definition(atom()) :: {String.t(), String.t(), map()}
  def definition(:bash) do
    define(
      "bash",
      """
      Runs a bash script in a sandboxed, persistent shell and returns its exit code, \
      stdout and stderr. Files, environment variables, functions and the working \
      directory persist between calls. The sandbox is a virtual machine with its own \
      filesystem, common Unix tools (grep, sed, awk, jq, find, sort, curl where allowed...) \
      and no access to the host. Long outputs are cut in the middle.\
      """,
      %{
        "command" => string("The bash script to run; may span several lines."),
        "timeout_ms" => integer(@call_timeout)
      },
      ["command"]
    )
  end

  def definition(:read_file) do
    define(
      "read_file",
      """
      Reads a text file from the sandbox and returns its lines numbered like `cat -n`. \
      For a large file, read it in parts with offset and limit.\
      """,
      %{
        "path" => string(@path),
        "offset" => integer("The first line to return, counting from 1.", 1),
        "limit" => integer("How many lines to return (default 2000).", 1)
      },
      ["path"]
    )
  end

  def definition(:write_file) do
    define(
      "write_file",
      """
      Writes a file in the sandbox, replacing it if it exists and creating missing \
      parent directories. To change part of an existing file, prefer edit_file.\
      """,
      %{"path" => string(@path), "content" => string("The file's whole new content.")},
      ["path", "content"]
    )
  end

  def definition(:edit_file) do
    define(
      "edit_file",
      """
      Edits a file in the sandbox by replacing an exact piece of its text. old_string \
      must match the file exactly, whitespace included, and occur once unless \
      replace_all is true. Read the file first.\
      """,
      %{
        "path" => string(@path),
        "old_string" => string("The exact text to replace."),
        "new_string" => string("The text to put in its place."),
        "replace_all" => boolean("Replace every occurrence instead of exactly one.")
      },
      ["path", "old_string", "new_string"]
    )
  end

  def definition(:list_dir) do
    define(
      "list_dir",
      """
      Lists a directory in the sandbox: one entry per line, directories end with / \
      and symbolic links with @.\
      """,
      %{"path" => string("The directory; the shell's working directory when not given.")},
      []
    )
  end

  def definition(:grep) do
    define(
      "grep",
      """
      Searches file contents in the sandbox for a regular expression, recursively, \
      and returns matching lines as path:line:text. Binary files are skipped. \
      Narrow it with include/exclude globs on file names.\
      """,
      %{
        "pattern" => string("The regular expression to search for."),
        "path" => string("The file or directory to search (default: the working directory)."),
        "include" => string("Search only files whose name matches this glob (e.g. *.ex)."),
        "exclude" => string("Skip files whose name matches this glob."),
        "ignore_case" => boolean("Match letters of either case."),
        "max_matches" => integer("The most matching lines to return (default 100)."),
        "max_line_bytes" => integer("The longest a returned line may be (default 400).", 20)
      },
      ["pattern"]
    )
  end

  def definition(:glob) do
    define(
      "glob",
      """
      Finds paths in the sandbox matching a glob pattern, ** matching any number of \
      directories (e.g. lib/**/*.ex), and returns them one per line.\
      """,
      %{
        "pattern" => string("The glob pattern, relative to path."),
        "path" => string("The directory to search from (default: the working directory)."),
        "max_results" => integer("The most paths to return (default 1000).")
      },
      ["pattern"]
    )
  end

  def definition(:elixir) do
    define(
      "elixir",
      """
      Evaluates Elixir code on a fresh, isolated Erlang node and returns what it \
      printed and the value of its last expression. Nothing persists between calls.\
      """,
      %{
        "code" => string("The Elixir code to evaluate."),
        "timeout_ms" => integer(@call_timeout)
      },
      ["code"]
    )
  end

  @doc "The run_code tool's definition for the languages it offers."
  @spec definition(:run_code, [atom()]) :: {String.t(), String.t(), map()}
  def definition(:run_code, languages) do
    names = Enum.map(languages, &Atom.to_string/1)

    define(
      "run_code",
      """
      Runs a program once in a fresh sandbox and returns the value it computes. \
      JavaScript and TypeScript define `function execute(input)` (may be async) and Python \
      `def execute(input)`; the value they return comes back as JSON. A bash script \
      reads the input as JSON on stdin and its output is what it prints. There is no \
      network, no require/import of modules and no state between calls; console.log \
      and print output is returned too.\
      """,
      %{
        "code" => string("The program."),
        "language" => %{
          "type" => "string",
          "enum" => names,
          "description" => "The language of the program (default #{hd(names)})."
        },
        "input" => %{"description" => "The argument of execute (any JSON value; optional)."},
        "timeout_ms" => integer(@call_timeout)
      },
      ["code"]
    )
  end

  defp define(name, description, properties, required) do
    {name, description,
     %{
       "type" => "object",
       "properties" => properties,
       "required" => required,
       "additionalProperties" => false
     }}
  end

  defp string(description), do: %{"type" => "string", "description" => description}
  defp boolean(description), do: %{"type" => "boolean", "description" => description}

  defp integer(description, minimum \\ 1),
    do: %{"type" => "integer", "minimum" => minimum, "description" => description}

  @doc false
  def name!(nil), do: nil

  def name!(name) do
    if is_binary(name) and Regex.match?(~r/^[a-zA-Z0-9_-]{1,64}$/, name) do
      name
    else
      raise ArgumentError,
            ":name must be 1 to 64 letters, digits, _ or - (what providers accept), got: #{inspect(name)}"
    end
  end

  @doc false
  def text!(nil), do: nil
  def text!(text) when is_binary(text) and text != "", do: text

  def text!(other),
    do: raise(ArgumentError, ":description must be a non-empty string, got: #{inspect(other)}")

  @doc false
  def tool_name!(name) do
    if is_binary(name) and Regex.match?(~r/^[a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*$/, name) and
         byte_size(name) <= 64 do
      name
    else
      raise ArgumentError,
            ":name is required: 1 to 64 letters, digits, _ or -, in segments joined by dots, " <>
              "got: #{inspect(name)}"
    end
  end

  @doc false
  def required_text!(text) when is_binary(text) and text != "", do: text

  def required_text!(other),
    do:
      raise(ArgumentError, ":description is required: a non-empty string, got: #{inspect(other)}")

  @doc false
  def parameters!(%{"type" => "object"} = schema) do
    case schema["properties"] || %{} do
      properties when is_map(properties) ->
        schema

      _ ->
        raise ArgumentError, ":parameters \"properties\" must be a map, got: #{inspect(schema)}"
    end
  end

  def parameters!(other),
    do:
      raise(
        ArgumentError,
        ~s(:parameters must be a JSON schema of an object, %{"type" => "object", ...}, got: #{inspect(other)})
      )

  @doc false
  def function!(fun) when is_function(fun, 1), do: fun

  def function!(other),
    do: raise(ArgumentError, ":function is required: a 1-arity function, got: #{inspect(other)}")

  @doc false
  def approve!(nil), do: nil
  def approve!(fun) when is_function(fun, 1), do: fun

  def approve!(other),
    do: raise(ArgumentError, ":approve must be a 1-arity function or nil, got: #{inspect(other)}")

  @doc false
  @run_code_languages [:javascript, :typescript, :python, :monty, :bash]

  def languages!(languages) do
    if is_list(languages) and languages != [] and
         Enum.all?(languages, &(&1 in @run_code_languages)) do
      Enum.uniq(languages)
    else
      raise ArgumentError,
            ":languages must be a non-empty list of " <>
              "#{Enum.map_join(@run_code_languages, ", ", &inspect/1)}, got: #{inspect(languages)}"
    end
  end

  @doc false
  def code!(opts) do
    if Keyword.keyword?(opts) and
         not Enum.any?([:language, :input, :timeout_ms], &Keyword.has_key?(opts, &1)) do
      opts
    else
      raise ArgumentError,
            ":code must be a keyword list of ExBashkit.Code.run/2 options other than " <>
              ":language, :input and :timeout_ms, got: #{inspect(opts)}"
    end
  end

  @doc false
  def peer!(opts) do
    if Keyword.keyword?(opts) and not Keyword.has_key?(opts, :timeout) and
         not Keyword.has_key?(opts, :max_output) do
      opts
    else
      raise ArgumentError,
            ":peer must be a keyword list of ExBashkit.Peer.run/2 options other than " <>
              ":timeout and :max_output (set by :timeout_ms and :max_output_bytes), got: #{inspect(opts)}"
    end
  end
end
