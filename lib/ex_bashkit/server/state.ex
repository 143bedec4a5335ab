defmodule ExBashkit.Server.State do
  @moduledoc false
  # A server's state and what happens to it without regard to processes:
  # waking a session (from memory or its store's record), hibernating it,
  # persisting it, and the record's encoding. `ExBashkit.Server` holds one
  # and decides when each happens.

  alias ExBashkit.{Session, Store, Telemetry}

  # Records are tagged with the server's module name, as they always were
  # (written as an atom: this module does not depend on the server's).
  @record_tag :"Elixir.ExBashkit.Server"
  @record_version 1

  @enforce_keys [:id, :spec, :key, :idle_after]
  defstruct [
    :id,
    :name,
    :spec,
    :store,
    :key,
    :registrar,
    :idle_after,
    :session,
    :snapshot,
    :idle_timer,
    :forward_to,
    # The epoch this server claimed in its store (ExBashkit.Store's
    # fencing), or nil before its first wake or with a store that does
    # not fence; `fenced?` once the store refused it for a newer one.
    :epoch,
    # The options a backup node restarts it with (`recover: :eager`).
    :roster,
    fenced?: false,
    # A successor (a move or a handover) is registered before its
    # predecessor's snapshot arrives: it serves no call until it has it.
    adopting?: false,
    persist: :on_hibernate,
    given_spec?: false,
    loaded?: false,
    dirty?: false,
    # Calls running, by their task's monitor: {caller, writes?}.
    running: %{},
    # Calls that wait behind a move, hibernate or stop, in order.
    waiting: :queue.new(),
    last_call: 0,
    # When it started (monotonic ms), and where its session lives
    # ({session, isolation, os_pid}, learned when it wakes): Server.list/0.
    started_at: 0,
    placement: nil
  ]

  @type t :: %__MODULE__{}

  @doc "The state of a server started with `arg` (checked options)."
  @spec new(map()) :: t()
  def new(arg) do
    %__MODULE__{
      id: arg.id,
      name: arg.name,
      spec: arg.session,
      given_spec?: arg.session != [],
      store: arg.store,
      persist: arg.persist,
      key: arg.key || :crypto.strong_rand_bytes(32),
      registrar: arg.registrar,
      idle_after: arg.idle_after,
      # A server handed over keeps the claim of the one before it.
      epoch: Map.get(arg, :epoch),
      roster: Map.get(arg, :roster),
      adopting?: Map.get(arg, :takeover) != nil,
      last_call: now(),
      started_at: now()
    }
  end

  @doc "Whether the session is in memory."
  @spec awake?(t()) :: boolean()
  def awake?(%__MODULE__{session: session}), do: session != nil

  @doc "Whether calls are running."
  @spec busy?(t()) :: boolean()
  def busy?(%__MODULE__{running: running}), do: map_size(running) > 0

  @doc "Milliseconds since the monotonic epoch, as `last_call` counts."
  @spec now() :: integer()
  def now, do: System.monotonic_time(:millisecond)

  @doc """
  The session, in memory: restored from the snapshot kept here, or from
  the store's record on a server's first wake, or new.
  """
  @spec wake(t()) :: {:ok, t()} | {:error, String.t(), t()}
  def wake(%__MODULE__{session: session} = state) when session != nil, do: {:ok, state}

  def wake(state) do
    started = System.monotonic_time()
    from = if state.snapshot == nil and state.store != nil, do: :store, else: :memory

    with {:ok, state} <- load(state),
         {:ok, session} <- build(state.spec),
         {:ok, session} <- restore_into(session, state) do
      observe(:wake, started, %{}, %{id: state.id, from: from})
      {:ok, %{state | session: session, snapshot: nil}}
    else
      {:error, message} -> {:error, message, state}
      {:error, message, state} -> {:error, message, state}
    end
  end

  # A server's first wake reads its store's record, if it has one.
  defp load(%{loaded?: true} = state), do: {:ok, state}
  defp load(%{store: nil} = state), do: {:ok, %{state | loaded?: true}}

  defp load(%{epoch: nil} = state) do
    case Store.claim(state.store, state.id) do
      {:ok, nil} -> fetch(state)
      {:ok, epoch} -> fetch(%{state | epoch: epoch})
      {:error, message} -> {:error, message, state}
    end
  end

  defp load(state), do: fetch(state)

  defp fetch(state) do
    case Store.fetch(state.store, state.id) do
      :error ->
        {:ok, %{state | loaded?: true}}

      {:ok, record} ->
        case decode(record) do
          {:ok, spec, key, snapshot} ->
            spec = if state.given_spec?, do: state.spec, else: spec
            {:ok, %{state | loaded?: true, spec: spec, key: key, snapshot: snapshot}}

          :error ->
            {:error,
             "the stored record of session #{inspect(state.id)} is not one this " <>
               "version reads", state}
        end

      {:error, message} ->
        {:error, message, state}
    end
  end

  defp build(spec) do
    {:ok, Session.new(spec)}
  rescue
    exception in ArgumentError -> {:error, Exception.message(exception)}
  end

  defp restore_into(session, %{snapshot: nil}), do: {:ok, session}

  defp restore_into(session, state) do
    case Session.restore(session, state.snapshot, key: state.key) do
      {:ok, session} -> {:ok, session}
      {:error, message} -> {:error, "cannot restore session #{inspect(state.id)}: #{message}"}
    end
  end

  @doc """
  A session handed over by a server that moved: awake, and to be written
  to the store at the next chance.
  """
  @spec adopt(t(), binary()) :: {:ok, t()} | {:error, String.t(), t()}
  def adopt(state, snapshot) do
    with {:ok, state} <- wake(%{state | snapshot: snapshot, loaded?: true}),
         do: {:ok, %{state | dirty?: true, adopting?: false}}
  end

  @doc """
  The session out of memory: its snapshot kept here (off-heap) without a
  store, or written to the store. A store that refuses the record keeps
  the session awake: hibernating would leave the only copy of it
  somewhere the caller did not ask for.
  """
  @spec hibernate(t()) :: {:ok, t()} | {:error, String.t(), t()}
  def hibernate(%__MODULE__{session: nil} = state), do: {:ok, state}

  def hibernate(state) do
    started = System.monotonic_time()

    with {:ok, snapshot} <- snapshot(state),
         {:ok, state} <- keep(state, snapshot) do
      store = with {module, _opts} <- state.store, do: module

      observe(:hibernate, started, %{snapshot_bytes: byte_size(snapshot)}, %{
        id: state.id,
        store: store
      })

      # A hibernated server keeps no interpreter, nor a worker process.
      Session.close(state.session)
      {:ok, %{state | session: nil}}
    else
      {:error, message, state} -> {:error, message, state}
      {:error, message} -> {:error, message, state}
    end
  end

  defp keep(%{store: nil} = state, snapshot), do: {:ok, %{state | snapshot: snapshot}}

  defp keep(state, snapshot) do
    case Store.put(state.store, state.id, encode(state, snapshot), state.epoch) do
      # The next wake reads it back from there.
      :ok -> {:ok, %{state | snapshot: nil, dirty?: false, loaded?: false}}
      :stale -> {:error, stale(state), fence(state)}
      {:error, message} -> {:error, "cannot hibernate: #{message}"}
    end
  end

  @doc "Why a fenced server stops, in words."
  @spec stale(t()) :: String.t()
  def stale(state) do
    "session #{inspect(state.id)} has a newer server elsewhere (its store refused this " <>
      "one's write: epoch #{state.epoch} is stale); this server stops"
  end

  @doc """
  The server of a session that a newer server owns: it writes nothing
  more to the store, and stops.
  """
  @spec fence(t()) :: t()
  def fence(state), do: %{state | store: nil, fenced?: true}

  @doc "A sealed snapshot of the awake session."
  @spec snapshot(t()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(state), do: Session.snapshot(state.session, key: state.key)

  @doc """
  Writes the session to the store when it changed since the last write
  (on `:stop`, whether or not it did). A failed write keeps it dirty.
  """
  @spec persist(t(), :exec | :tick | :stop) :: t()
  def persist(%__MODULE__{store: nil} = state, _why), do: state
  def persist(%__MODULE__{session: nil} = state, _why), do: state
  def persist(%__MODULE__{dirty?: false} = state, why) when why != :stop, do: state

  def persist(state, _why) do
    with {:ok, snapshot} <- snapshot(state),
         :ok <- Store.put(state.store, state.id, encode(state, snapshot), state.epoch) do
      %{state | dirty?: false}
    else
      :stale -> fence(state)
      {:error, _message} -> state
    end
  end

  @doc "The session's record removed from the store: the conversation is over."
  @spec forget(t()) :: t()
  def forget(%__MODULE__{store: nil} = state), do: state

  def forget(state) do
    Store.delete(state.store, state.id)
    %{state | store: nil}
  end

  @doc """
  A session whose worker process was killed (a script past its deadline
  or memory cap) can run nothing more. With a store, it is dropped, and
  the next call wakes it from the last record; without one, it stays and
  answers errors.
  """
  @spec recover(t()) :: t()
  def recover(%__MODULE__{session: %Session{} = session} = state) when state.store != nil do
    case Session.info(session) do
      %{isolation: :process, os_pid: nil} ->
        %{state | session: nil, snapshot: nil, loaded?: false, dirty?: false}

      _alive_or_in_vm ->
        state
    end
  end

  def recover(state), do: state

  @doc "The record a store keeps: the session's options, key and snapshot."
  @spec encode(t(), binary()) :: binary()
  def encode(state, snapshot) do
    :erlang.term_to_binary({@record_tag, @record_version, state.spec, state.key, snapshot})
  end

  @doc "A record's options, key and snapshot, or `:error` for anything else."
  @spec decode(binary()) :: {:ok, keyword(), binary(), binary()} | :error
  def decode(record) do
    case :erlang.binary_to_term(record) do
      {@record_tag, @record_version, spec, key, snapshot} -> {:ok, spec, key, snapshot}
      _ -> :error
    end
  rescue
    ArgumentError -> :error
  end

  @doc "What `ExBashkit.Server.info/1` answers; `memory` is the caller's."
  @spec describe(t()) :: map()
  def describe(state) do
    {:memory, memory} = Process.info(self(), :memory)

    %{
      id: state.id,
      node: node(),
      state: if(awake?(state), do: :awake, else: :hibernated),
      running: map_size(state.running),
      memory: memory
    }
  end

  @doc "`[:ex_bashkit, :server, event]`, timed from `started`."
  @spec observe(atom(), integer(), map(), map()) :: :ok
  def observe(event, started, measurements, metadata) do
    duration = System.monotonic_time() - started

    Telemetry.execute(
      [:ex_bashkit, :server, event],
      Map.put(measurements, :duration, duration),
      metadata
    )
  end
end
