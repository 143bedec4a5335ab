defmodule ExBashkit.Shell.Config do
  @moduledoc false
  # The options of `ExBashkit.Shell.start/1`.

  alias ExBashkit.{Options, Sandbox}

  @schema [
    attach: [
      type: {:custom, &__MODULE__.attach!/1},
      doc:
        "a running sandbox to use: an `ExBashkit.Session`, or an `ExBashkit.Server` " <>
          "(a pid or a GenServer name, on any connected node)."
    ],
    server: [
      type: :any,
      doc: "the id of a running `ExBashkit.Server` to use, found on any connected node."
    ],
    session: [
      type: {:custom, &__MODULE__.keyword!/1},
      default: [],
      doc:
        "options of the new session (`ExBashkit.Session.new/1`), when not attaching. " <>
          "It runs in a worker process (`isolation: :process`) unless they say otherwise."
    ],
    isolated: [
      type: :boolean,
      default: false,
      doc: "runs the new session on a sandbox node (`isolation: :node` of `ExBashkit.Server`)."
    ],
    snapshot: [
      type: {:custom, &__MODULE__.path!/1},
      doc:
        "a file: the session is restored from it at start when it exists, and saved to it on leaving."
    ],
    input: [
      type: {:in, [:auto, :terminal, :lines]},
      default: :auto,
      doc:
        "`:terminal` reads keys from the VM's terminal (needs `-noshell`, as under `mix`); " <>
          "`:lines` reads lines from the group leader (IEx, or any IO device); " <>
          "`:auto` picks the terminal when there is one and IEx is not running."
    ]
  ]

  @spec schema() :: Options.schema()
  def schema, do: @schema

  @spec validate!(keyword()) :: map()
  def validate!(opts) do
    config = Options.validate!(opts, @schema, "ExBashkit.Shell.start/1")

    case Enum.filter([:attach, :server], &(config[&1] != nil)) ++
           if(config.isolated, do: [:isolated], else: []) do
      [_, _ | _] = both ->
        raise ArgumentError, "ExBashkit.Shell.start/1 takes only one of #{inspect(both)}"

      _ ->
        config
    end
  end

  @doc false
  def attach!(nil), do: nil
  def attach!(target), do: Sandbox.Target.validate!(target, ":attach")

  @doc false
  def keyword!(opts) do
    if Keyword.keyword?(opts),
      do: opts,
      else:
        raise(
          ArgumentError,
          ":session must be a keyword list of session options, got: #{inspect(opts)}"
        )
  end

  @doc false
  def path!(nil), do: nil
  def path!(path) when is_binary(path) and path != "", do: path

  def path!(other),
    do: raise(ArgumentError, ":snapshot must be a file path, got: #{inspect(other)}")
end
