defmodule ExBashkit.Server.Options do
  @moduledoc false
  # The options of ExBashkit.Server: their schema (and the docs its
  # moduledoc shows), and the check that a session rebuilt elsewhere can
  # get the same capabilities.

  alias ExBashkit.Options

  @schema [
    id: [
      type: :any,
      default: nil,
      doc:
        "the session's id (any term; a conversation id, say). It names the session's " <>
          "record in the `:store`, and `get_or_start/2` finds the server by it."
    ],
    name: [
      type: {:custom, &__MODULE__.name!/1},
      default: nil,
      doc:
        "a `t:GenServer.name/0` to register the server under: an atom, " <>
          "`{:global, term}` or `{:via, module, term}`."
    ],
    session: [
      type: {:custom, &__MODULE__.session!/1},
      default: [],
      doc: "the options of `ExBashkit.Session.new/1` the session is built with."
    ],
    idle_after: [
      type: {:or, [:pos_integer, {:in, [:infinity]}]},
      default: :infinity,
      doc:
        "milliseconds without calls after which the server snapshots its session, " <>
          "frees the interpreter and hibernates; the next call wakes it."
    ],
    store: [
      type: {:custom, &ExBashkit.Store.validate!/1},
      default: nil,
      doc:
        "where the session is persisted: an `ExBashkit.Store` as `{module, opts}`; " <>
          "by default `config :ex_bashkit, :store`, or none."
    ],
    persist: [
      type: {:custom, &__MODULE__.persist!/1},
      default: nil,
      doc:
        "when the session is written to the `:store`: `:on_hibernate`, `:after_exec` " <>
          "(once no call is running), or `{:every, ms}`. A server that stops " <>
          "gracefully always writes it. Default: `:on_hibernate`, or `:after_exec` " <>
          "with `isolation: :node`."
    ],
    key: [
      type: {:custom, &ExBashkit.Session.Snapshot.key!/1},
      default: nil,
      doc:
        "the secret the server's snapshots are sealed with; by default a random " <>
          "key of the server's own, kept with its record."
    ],
    node: [
      type: {:custom, &__MODULE__.node!/1},
      default: nil,
      doc:
        "where `start/1` places the server: a node, or a list tried in order (the " <>
          "first one connected is used). Default: this node. `get_or_start/2` places " <>
          "the server of an id on the id's owner and takes no `:node`."
    ],
    recover: [
      type: {:in, [:on_use, :eager]},
      default: :on_use,
      doc:
        "when the server of an id (`get_or_start/2`) with a `:store` starts again after " <>
          "its node died: `:on_use`, on its next `get_or_start/2` or call by name, or " <>
          "`:eager`, as soon as the death is noticed, on the id's new owner."
    ],
    isolation: [
      type: {:in, [:none, :node, :process]},
      default: :none,
      doc:
        "`:node` places the server on a sandbox node (`ExBashkit.SandboxNode`), a VM " <>
          "of its own under an OS memory limit, instead of `:node`. `:process` keeps " <>
          "the server here and its session in a worker process (`isolation: :process` " <>
          "of `ExBashkit.Session.new/1`); a worker killed over a deadline or its " <>
          "memory cap brings the session back from the `:store`'s last record on the " <>
          "next call, or, without a store, leaves it answering errors."
    ]
  ]

  @doc false
  def docs, do: Options.docs(@schema)

  @doc false
  @spec validate!(term(), String.t()) :: map()
  def validate!(opts, context) do
    opts = Options.validate!(opts, @schema, context)
    opts = %{opts | store: opts.store || default_store(opts.isolation)}
    opts = %{opts | persist: opts.persist || default_persist(opts.isolation)}

    opts =
      if opts.isolation == :process,
        do: %{opts | session: Keyword.put(opts.session, :isolation, :process)},
        else: opts

    if opts.store != nil or opts.isolation == :node or remote?(opts.node) do
      portable!(opts.session)
    end

    opts
  end

  # A session on a sandbox node is kept where that node's death cannot
  # reach it: in this node's memory.
  defp default_store(isolation) do
    case {Application.get_env(:ex_bashkit, :store), isolation} do
      {nil, isolation} when isolation in [:none, :process] -> nil
      {nil, :node} -> ExBashkit.Store.validate!(ExBashkit.Store.Memory)
      {store, _} -> ExBashkit.Store.validate!(store)
    end
  end

  defp default_persist(:none), do: :on_hibernate
  # What a killed worker's session comes back from.
  defp default_persist(isolation) when isolation in [:node, :process], do: :after_exec

  defp remote?(nil), do: false
  defp remote?(nodes), do: Enum.any?(nodes, &(&1 != node()))

  @doc false
  def name!(nil), do: nil
  def name!(name) when is_atom(name), do: name
  def name!({:global, _} = name), do: name
  def name!({:via, module, _} = name) when is_atom(module), do: name

  def name!(other) do
    raise ArgumentError,
          ":name must be an atom, {:global, term} or {:via, module, term}, got: #{inspect(other)}"
  end

  @doc false
  # Checked in full here, so that a bad option raises in the caller rather
  # than crash the server; the server keeps the options as given.
  def session!(opts) do
    ExBashkit.Session.Options.validate!(opts)
    opts
  end

  @doc false
  def persist!(when_) when when_ in [nil, :on_hibernate, :after_exec], do: when_
  def persist!({:every, ms} = when_) when is_integer(ms) and ms > 0, do: when_

  def persist!(other) do
    raise ArgumentError,
          ":persist must be :on_hibernate, :after_exec or {:every, milliseconds}, " <>
            "got: #{inspect(other)}"
  end

  @doc false
  def node!(nil), do: nil
  def node!(node) when is_atom(node), do: [node]

  def node!(nodes) when is_list(nodes) and nodes != [] do
    if Enum.all?(nodes, &is_atom/1), do: nodes, else: node!(:bad)
  end

  def node!(other) do
    raise ArgumentError,
          ":node must be a node or a non-empty list of nodes, got: #{inspect(other)}"
  end

  @doc false
  # Capabilities that must be rebuilt from data (after a restart, on another
  # node, from a stored record) cannot be closures.
  def portable!(session) do
    for option <- [:builtins, :virtual_fs],
        {name, capability} <- Keyword.get(session, option, []),
        is_function(capability) and Function.info(capability, :type) == {:type, :local} do
      raise ArgumentError,
            "#{inspect(option)} entry #{inspect(name)} is an anonymous function, which cannot " <>
              "be rebuilt after a restart, on another node or from a :store; give a module, " <>
              "{module, arg}, {module, function, args} (builtins) or &Module.function/1"
    end

    :ok
  end
end
