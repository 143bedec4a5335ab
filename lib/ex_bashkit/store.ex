defmodule ExBashkit.Store do
  @moduledoc """
  Where `ExBashkit.Server` keeps the sessions it persists.

  A store holds one record per session id: an opaque binary the server
  writes (its session options and a snapshot) and reads back when it
  wakes, restarts, or is started again after the VM restarted. A store is
  given as `{module, opts}`; every callback receives those `opts`, so a
  store needs no process of its own unless it wants one.

  Two stores ship with the library:

    * `ExBashkit.Store.Memory` — an ETS table on one node; fast, gone with
      that node.
    * `ExBashkit.Store.Disk` — one file per session, written atomically,
      sealed with a key; survives a VM restart.

  ## Writing a store

  Three callbacks. Records are opaque binaries up to the size of a
  session's snapshot; a store must return exactly the bytes it was given
  and must not return bytes someone else could have written, or it
  should seal them (as `ExBashkit.Store.Disk` does). A store for a
  database table `sandboxes(id text primary key, record bytea)`, with
  whatever client the application already uses:

      defmodule MyApp.SandboxStore do
        @behaviour ExBashkit.Store

        @impl true
        def put(opts, id, record) do
          MyApp.Repo.query!(
            "INSERT INTO sandboxes (id, record) VALUES ($1, $2) " <>
              "ON CONFLICT (id) DO UPDATE SET record = $2",
            [id, record], opts)
          :ok
        end

        @impl true
        def fetch(opts, id) do
          case MyApp.Repo.query!("SELECT record FROM sandboxes WHERE id = $1", [id], opts) do
            %{rows: [[record]]} -> {:ok, record}
            %{rows: []} -> :error
          end
        end

        @impl true
        def delete(opts, id) do
          MyApp.Repo.query!("DELETE FROM sandboxes WHERE id = $1", [id], opts)
          :ok
        end
      end

      ExBashkit.Server.get_or_start("conversation-42", store: {MyApp.SandboxStore, []})

  A callback that raises or returns `{:error, reason}` fails the
  operation that needed it (a wake, a persist) with `{:error, message}`;
  the server stays up.

  ## Fencing: one writer per session across a partition

  Two more callbacks, optional, let a store refuse the writes of a server
  that is no longer the session's owner (two halves of a partitioned
  cluster may each start a server of one id). `c:claim/2` raises the
  session's epoch by one and answers it, atomically; a server claims
  once, when it first reads its record. `c:put/4` writes only if the
  stored epoch is not newer than the writer's, and answers
  `{:error, :stale}` otherwise: the older server then stops without
  writing, and what it ran since its last save is lost (the newer one
  goes on from the record). In SQL, an `epoch` column and
  `UPDATE sandboxes SET record = $2, epoch = $3 WHERE id = $1 AND
  epoch <= $3`. Both stores that ship implement them; a store without
  them is written by whichever server saves last.
  """

  @typedoc "A session id: any term the application names conversations by."
  @type id :: term()

  @typedoc "A store and the options its callbacks receive."
  @type t :: {module(), keyword()}

  @doc "Saves `record` under `id`, replacing what was there."
  @callback put(opts :: keyword(), id(), record :: binary()) :: :ok | {:error, term()}

  @doc "The record saved under `id`, or `:error` when there is none."
  @callback fetch(opts :: keyword(), id()) :: {:ok, binary()} | :error | {:error, term()}

  @doc "Forgets `id`; deleting what is not there is `:ok`."
  @callback delete(opts :: keyword(), id()) :: :ok | {:error, term()}

  @doc "Raises the epoch of `id` by one (from 0 when it has none) and answers it."
  @callback claim(opts :: keyword(), id()) :: {:ok, pos_integer()} | {:error, term()}

  @doc """
  Saves `record` under `id` for a writer that claimed `epoch`, unless the
  stored epoch is newer: then `{:error, :stale}` and nothing written.
  """
  @callback put(opts :: keyword(), id(), record :: binary(), epoch :: pos_integer()) ::
              :ok | {:error, :stale} | {:error, term()}

  @optional_callbacks claim: 2, put: 4

  @doc false
  # A `:store` option checked, with the stores' own options normalized
  # (each store may define `validate!/1`).
  @spec validate!(term()) :: t() | nil
  def validate!(nil), do: nil
  def validate!(module) when is_atom(module), do: validate!({module, []})

  def validate!({module, opts}) when is_atom(module) and is_list(opts) do
    unless Code.ensure_loaded?(module) and function_exported?(module, :fetch, 2) do
      raise ArgumentError, ":store #{inspect(module)} does not implement ExBashkit.Store"
    end

    if function_exported?(module, :validate!, 1),
      do: {module, module.validate!(opts)},
      else: {module, opts}
  end

  def validate!(other) do
    raise ArgumentError,
          ":store must be a module implementing ExBashkit.Store or {module, opts}, " <>
            "got: #{inspect(other)}"
  end

  @doc false
  # The store as a server leaving this node must see it: a store may fix
  # what "this node" meant in its options (`pin/1`, optional), once the
  # node has the name it will be reached by.
  @spec pin(t() | nil) :: t() | nil
  def pin({module, opts}) do
    if function_exported?(module, :pin, 1), do: {module, module.pin(opts)}, else: {module, opts}
  end

  def pin(nil), do: nil

  @doc false
  # The callbacks, with a store's failure (a raise, an exit, an error) as
  # `{:error, message}`.
  @spec put(t(), id(), binary()) :: :ok | {:error, String.t()}
  def put({module, opts}, id, record), do: guard(module, :put, [opts, id, record])

  @doc false
  # A fenced write (`put/4`) when the writer claimed an epoch and the store
  # fences; `:stale` when a newer writer claimed the session.
  @spec put(t(), id(), binary(), pos_integer() | nil) :: :ok | :stale | {:error, String.t()}
  def put(store, id, record, nil), do: put(store, id, record)

  def put({module, opts}, id, record, epoch) do
    if function_exported?(module, :put, 4),
      do: guard(module, :put, [opts, id, record, epoch]),
      else: put({module, opts}, id, record)
  end

  @doc false
  # The writer's epoch, or `nil` from a store that does not fence.
  @spec claim(t(), id()) :: {:ok, pos_integer() | nil} | {:error, String.t()}
  def claim({module, opts}, id) do
    if function_exported?(module, :claim, 2),
      do: guard(module, :claim, [opts, id]),
      else: {:ok, nil}
  end

  @doc false
  @spec fetch(t(), id()) :: {:ok, binary()} | :error | {:error, String.t()}
  def fetch({module, opts}, id), do: guard(module, :fetch, [opts, id])

  @doc false
  @spec delete(t(), id()) :: :ok | {:error, String.t()}
  def delete({module, opts}, id), do: guard(module, :delete, [opts, id])

  defp guard(module, callback, args) do
    case apply(module, callback, args) do
      :ok -> :ok
      :error when callback == :fetch -> :error
      {:ok, record} when callback == :fetch and is_binary(record) -> {:ok, record}
      {:ok, epoch} when callback == :claim and is_integer(epoch) and epoch > 0 -> {:ok, epoch}
      {:error, :stale} when callback == :put and length(args) == 4 -> :stale
      {:error, reason} -> {:error, "#{inspect(module)}.#{callback} failed: #{message(reason)}"}
      other -> {:error, "#{inspect(module)}.#{callback} returned #{inspect(other)}"}
    end
  catch
    kind, reason ->
      {:error,
       "#{inspect(module)}.#{callback} failed: " <>
         Exception.format_banner(kind, reason, __STACKTRACE__)}
  end

  defp message(reason) when is_binary(reason), do: reason
  defp message(reason), do: inspect(reason)
end
