defmodule ExBashkit.Code.Config do
  @moduledoc false
  # The options of ExBashkit.Code.run/2 and validate/2, checked before any
  # worker starts: every problem is an ArgumentError naming the option.
  # The sandbox's own options (:files, :env, :mounts, :allow_net) are
  # checked again, in full, by ExBashkit.Session.new/1.

  alias ExBashkit.Options

  @grants [:fetch, :read_files, :crypto, :commands]

  @schema [
    language: [
      type: {:in, [:javascript, :typescript, :python, :monty, :bash, :elixir]},
      default: :javascript,
      doc:
        "`:javascript`, `:typescript` (run as JavaScript with its types stripped), `:python` " <>
          "(CPython), `:monty` (a subset of Python that can call `:tools`), `:bash`, or " <>
          "`:elixir` (trusted code only: see above)."
    ],
    input: [
      type: :any,
      default: nil,
      doc:
        "the argument of `execute`: any JSON-encodable term (maps, lists, strings, numbers, booleans, `nil`)."
    ],
    timeout_ms: [type: :pos_integer, default: 5_000, doc: "the run's deadline."],
    memory_mb: [
      type: :pos_integer,
      default: 128,
      doc:
        "the language's heap cap (JavaScript's engine, CPython's, bash's variables); 64 to 1024 for Python."
    ],
    files: [
      type: :any,
      default: [],
      doc:
        "`path => content` to put in the run's filesystem, as `ExBashkit.Session.new/1` takes them."
    ],
    mounts: [
      type: :any,
      default: [],
      doc: "host directories, as `ExBashkit.Session.new/1` takes them."
    ],
    env: [
      type: :env,
      default: [],
      doc: "environment variables (Python, bash and Elixir see them)."
    ],
    allow: [
      type: {:custom, &__MODULE__.allow!/1},
      default: [],
      doc:
        "what the code may use beyond computing: any of `:fetch`, `:read_files`, `:crypto`, " <>
          "`:commands` (JavaScript and TypeScript)."
    ],
    allow_net: [
      type: :any,
      default: nil,
      doc:
        "the URL patterns `fetch` may reach (with `allow: [:fetch]`), as `ExBashkit.Session.new/1` takes them."
    ],
    tools: [
      type: :any,
      default: [],
      doc:
        "`ExBashkit.Tool.new/1` tools the code may call: `await tools.orders.list({...})` in " <>
          "JavaScript, `orders list --customer acme` in bash (see \"Code mode\" in `guides/code.md`)."
    ],
    block_private_ips: [
      type: :boolean,
      default: true,
      doc: "refuse `fetch` to private and loopback addresses, as `ExBashkit.Session.new/1` does."
    ],
    trusted: [
      type: :boolean,
      default: false,
      doc: "must be `true` for `language: :elixir`, which is not sandboxed."
    ]
  ]

  @doc false
  def schema, do: @schema

  @doc """
  The checked options of a run, as a map; for `:validate` only the
  options' own types (nothing will run).
  """
  def new!(opts, context, purpose \\ :run) do
    config = Options.validate!(opts, @schema, context)

    cond do
      purpose == :validate ->
        config

      config.language == :elixir and not config.trusted ->
        raise ArgumentError,
              "#{context}: language: :elixir runs unsandboxed on a peer node; " <>
                "pass trusted: true if the code is yours"

      :fetch in config.allow and config.allow_net in [nil, []] ->
        raise ArgumentError,
              "#{context}: allow: [:fetch] needs :allow_net, the URL patterns it may reach"

      :fetch not in config.allow and config.allow_net not in [nil, []] ->
        raise ArgumentError, "#{context}: :allow_net is only used with allow: [:fetch]"

      :read_files in config.allow and config.files in [[], %{}] and config.mounts == [] ->
        raise ArgumentError, "#{context}: allow: [:read_files] needs :files or :mounts to read"

      :commands in config.allow and config.language not in [:javascript, :typescript] ->
        raise ArgumentError,
              "#{context}: allow: [:commands] is for JavaScript and TypeScript " <>
                "(a bash run runs commands already)"

      config.language == :python and config.tools != [] ->
        raise ArgumentError,
              "#{context}: language: :python runs CPython, which cannot call :tools; " <>
                "language: :monty runs a subset of Python that can"

      config.language in [:python, :monty] and config.memory_mb not in 64..1024 ->
        raise ArgumentError,
              "#{context}: :memory_mb must be between 64 and 1024 for Python, got: #{config.memory_mb}"

      true ->
        %{config | files: files(config.files), input: json!(config.input, context)}
    end
  end

  @doc false
  def allow!(allow) when is_list(allow) do
    case allow -- @grants do
      [] ->
        Enum.uniq(allow)

      unknown ->
        raise ArgumentError,
              ":allow takes #{Enum.map_join(@grants, ", ", &inspect/1)}, got: #{inspect(unknown)}"
    end
  end

  def allow!(other), do: raise(ArgumentError, ":allow must be a list, got: #{inspect(other)}")

  defp files(files) when is_map(files), do: Map.to_list(files)
  defp files(files), do: files

  # The input crosses as JSON: a term JSON cannot carry is the caller's
  # mistake, said now rather than as a failure of the run.
  defp json!(input, context) do
    case ExBashkit.JSON.encode(input) do
      {:ok, _} -> input
      {:error, why} -> raise ArgumentError, "#{context}: :input must be JSON-encodable: #{why}"
    end
  end
end
