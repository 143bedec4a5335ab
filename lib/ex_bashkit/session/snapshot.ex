defmodule ExBashkit.Session.Snapshot do
  @moduledoc false
  # The bodies of `ExBashkit.Session.snapshot/2` and `restore/3`: their
  # options, and one interpreter call each, observed by telemetry.

  alias ExBashkit.{Caller, Interpreter, Telemetry}

  @take_options [
    key: [
      type: {:custom, &__MODULE__.key!/1},
      default: nil,
      doc:
        "a binary secret. The snapshot is sealed with HMAC-SHA256 under it, for bytes " <>
          "that cross a trust boundary (a database, the network). Without a key, a " <>
          "public SHA-256 tag detects accidental corruption only; anyone can forge it."
    ],
    exclude_filesystem: [
      type: :boolean,
      default: false,
      doc: "capture the shell state only."
    ],
    exclude_functions: [type: :boolean, default: false, doc: "leave shell functions out."]
  ]

  @restore_options [
    key: [
      type: {:custom, &__MODULE__.key!/1},
      default: nil,
      doc: "the secret the snapshot was taken with, if any."
    ]
  ]

  @doc "The documentation of `snapshot/2`'s options."
  @spec take_docs() :: String.t()
  def take_docs, do: ExBashkit.Options.docs(@take_options)

  @doc "The documentation of `restore/3`'s options."
  @spec restore_docs() :: String.t()
  def restore_docs, do: ExBashkit.Options.docs(@restore_options)

  @spec take(ExBashkit.Session.t(), term(), keyword()) :: {:ok, binary()} | {:error, String.t()}
  def take(session, resource, opts) do
    opts = ExBashkit.Options.validate!(opts, @take_options, "ExBashkit.Session.snapshot/2")
    options = Map.take(opts, [:exclude_filesystem, :exclude_functions])
    tag = make_ref()
    key = opts.key

    Telemetry.span(
      [:ex_bashkit, :snapshot],
      %{session: session},
      fn ->
        resource
        |> Interpreter.snapshot(options, key, self(), tag)
        |> Caller.reply(tag)
      end,
      fn
        {:ok, bytes} -> {%{bytes: byte_size(bytes)}, %{status: :ok}}
        {:error, _} -> {%{}, %{status: :error}}
      end
    )
  end

  @spec restore(ExBashkit.Session.t(), term(), binary(), keyword()) ::
          {:ok, ExBashkit.Session.t()} | {:error, String.t()}
  def restore(session, resource, snapshot, opts) do
    unless is_binary(snapshot) do
      raise ArgumentError, "snapshot must be a binary, got: #{inspect(snapshot)}"
    end

    key = ExBashkit.Options.validate!(opts, @restore_options, "ExBashkit.Session.restore/3").key
    tag = make_ref()

    Telemetry.span(
      [:ex_bashkit, :restore],
      %{bytes: byte_size(snapshot)},
      %{session: session},
      fn ->
        resource
        |> Interpreter.restore(snapshot, key, self(), tag)
        |> Caller.reply(tag)
      end,
      &{%{}, %{status: elem(&1, 0)}}
    )
    |> case do
      {:ok, :ok} -> {:ok, session}
      {:error, _} = error -> error
    end
  end

  @doc "A snapshot key: `nil` or a non-empty binary, or raises."
  @spec key!(term()) :: binary() | nil
  def key!(nil), do: nil
  def key!(key) when is_binary(key) and key != "", do: key

  def key!(other) do
    raise ArgumentError, ":key must be a non-empty binary, got: #{inspect(other)}"
  end
end
