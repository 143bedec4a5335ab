# Over 500 lines: the client API with its docs (about 200) and the one
# GenServer that serves it; its state, runner, directory and placement
# live in server/.
defmodule ExBashkit.Server do
  @moduledoc """
  A session owned by a process: supervised, found by id anywhere in an
  Erlang cluster (on the node that owns the id), hibernating when idle,
  persisted to a store, handed over when nodes join and restarted from
  its store when its node dies.

  One server per agent conversation is the intended shape (see
  `guides/sandbox_per_conversation.md`). Look it up by the conversation's
  id, starting it on first use:

      iex> {:ok, server} = ExBashkit.Server.get_or_start("doc-conversation")
      iex> {:ok, _} = ExBashkit.Server.exec(server, "cd /tmp && export STEP=1")
      iex> {:ok, result} = ExBashkit.Server.exec(server, "echo $STEP $(pwd)")
      iex> result.stdout
      "1 /tmp\\n"
      iex> {:ok, ^server} = ExBashkit.Server.get_or_start("doc-conversation")
      iex> ExBashkit.Server.stop(server)
      :ok

  Every function of `ExBashkit.Session` has its counterpart here, taking
  a server (a pid or any `t:GenServer.name/0`) instead of a session, with
  the same options and answers. Calls run concurrently with the server:
  `cancel/1`, `read_file/2` and `stat/2` answer while a script runs. A
  server that is gone, or whose node is, answers `{:error, message}`.

  ## Options

  #{ExBashkit.Server.Options.docs()}

  ## Hibernation, persistence, supervision

  After `:idle_after` milliseconds without calls, a server snapshots its
  session (sealed with its key) into its `:store`, or off its heap, frees
  the interpreter and hibernates; the next call restores it. With a
  `:store`, a server that starts (after a crash, a restart, or on another
  node) comes back from its session's last record, losing what `:persist`
  says it may. Servers started by `start/1` and `get_or_start/2` live
  under `ExBashkit.Server.Supervisor` and are `:transient`. A server that
  may be rebuilt elsewhere refuses anonymous functions as capabilities
  (see `ExBashkit.Builtin`). The guide `guides/sandbox_per_conversation.md`
  tells each in full.
  """

  use GenServer

  alias ExBashkit.{Session, Store}
  alias ExBashkit.Sandbox.Contract
  alias ExBashkit.Server.{Directory, Options, Owned, Placement, Roster, Runner, State}

  @typedoc "A server: its pid, or the name it was registered under."
  @type server :: GenServer.server()

  @typedoc "An option of `start_link/1`, `start/1` and `get_or_start/2`."
  @type option ::
          {:id, term()}
          | {:name, GenServer.name()}
          | {:session, [Session.option()]}
          | {:idle_after, pos_integer() | :infinity}
          | {:store, Store.t() | module()}
          | {:persist, :on_hibernate | :after_exec | {:every, pos_integer()}}
          | {:key, binary()}
          | {:node, node() | [node()]}
          | {:isolation, :none | :node | :process}

  ## Starting and finding

  @doc """
  Starts a server linked to the caller (for your own supervision tree).
  See the module documentation for the options; `:node` and `:isolation`
  belong to `start/1`.

      iex> {:ok, pid} = ExBashkit.Server.start_link(session: [env: %{"WHO" => "ada"}])
      iex> {:ok, result} = ExBashkit.Server.exec(pid, "echo $WHO")
      iex> result.stdout
      "ada\\n"
      iex> ExBashkit.Server.stop(pid)
      :ok
  """
  @spec start_link([option()]) :: GenServer.on_start()
  def start_link(opts) do
    opts = Options.validate!(opts, "ExBashkit.Server.start_link/1")
    init_arg = opts |> Map.drop([:node, :isolation]) |> Map.put(:registrar, nil)
    GenServer.start_link(__MODULE__, init_arg, name: opts.name)
  end

  @doc false
  # What a supervisor starts: options already checked, possibly elsewhere.
  def start_child_link(init_arg), do: GenServer.start_link(__MODULE__, init_arg)

  @doc """
  A child specification for `start_link/1`; its id is `{ExBashkit.Server, id}`.

      iex> spec = ExBashkit.Server.child_spec(id: "c-1")
      iex> {spec.id, spec.restart}
      {{ExBashkit.Server, "c-1"}, :transient}
  """
  @spec child_spec([option()]) :: Supervisor.child_spec()
  def child_spec(opts) do
    %{
      id: {__MODULE__, Keyword.get(opts, :id)},
      start: {__MODULE__, :start_link, [opts]},
      restart: :transient
    }
  end

  @doc """
  Starts a server under `ExBashkit.Server.Supervisor` on the node chosen
  by `:node` or `:isolation`. Returns `{:ok, pid}`, or `{:error, reason}`
  (`{:already_started, pid}` when its `:name` is taken).

      iex> {:ok, pid} = ExBashkit.Server.start(idle_after: 60_000)
      iex> node(pid) == node()
      true
      iex> ExBashkit.Server.stop(pid)
      :ok
  """
  @spec start([option()]) :: {:ok, pid()} | {:error, term()}
  def start(opts \\ []) do
    opts = Options.validate!(opts, "ExBashkit.Server.start/1")

    with {:ok, target} <- Placement.target(opts),
         do: Placement.start_on(target, __MODULE__, Placement.init_arg(opts, target))
  end

  @doc """
  The server of session `id`, started (with `opts`) if none runs.

  In a cluster, the server of an id runs on the id's owner: the node that
  ranks first for it among the nodes running ex_bashkit (rendezvous
  hashing over a `:pg` group; no lock, no cluster-wide registration).
  Any node finds it, asking the owner when it is another node. When
  nodes join, the servers whose ids a new node now owns are handed over
  to it with their sessions; when a node dies, its servers with a
  `:store` start again on their new owners from their last saved state
  on first use (see "A cluster" in `guides/sandbox_per_conversation.md`).
  `:node` is refused here: the owner places the server.

  Started, the server first looks for the session's record in its
  `:store`; a session that was persisted (before a crash, a VM restart,
  or on a node that is gone) comes back from there, with the `:session`
  options given now or, if none are, those it was persisted with.

      iex> {:ok, a} = ExBashkit.Server.get_or_start({:user, 7})
      iex> ExBashkit.Server.whereis({:user, 7}) == a
      true
      iex> {:ok, %{stdout: "hi\\n"}} = ExBashkit.Server.exec(ExBashkit.Server.name({:user, 7}), "echo hi")
      iex> ExBashkit.Server.stop(a)
      :ok
  """
  @spec get_or_start(term(), [option()]) :: {:ok, pid()} | {:error, term()}
  def get_or_start(id, opts \\ []) do
    if Keyword.keyword?(opts) and Keyword.has_key?(opts, :node) do
      raise ArgumentError,
            "ExBashkit.Server.get_or_start/2 places a server on its id's owner and takes " <>
              "no :node; start/1 starts a server on a chosen node"
    end

    opts = Options.validate!(opts, "ExBashkit.Server.get_or_start/2")
    Owned.get_or_start(id, opts, __MODULE__)
  end

  @doc """
  The pid of the server `get_or_start/2` started for `id`, or `nil`.

      iex> ExBashkit.Server.whereis("nobody")
      nil
  """
  @spec whereis(term()) :: pid() | nil
  def whereis(id), do: Owned.whereis(id)

  @doc """
  A name for the server of `id`, for this module's functions, any
  `GenServer` function, or wherever a sandbox is taken: each use finds
  the server where it runs now. `{:global, {ExBashkit.Server, id}}`, the
  name of earlier versions, still works with this module's functions.

      iex> ExBashkit.Server.name("conversation-42")
      {:via, ExBashkit.Server.Owned, "conversation-42"}
  """
  @spec name(term()) :: GenServer.name()
  defdelegate name(id), to: Owned

  @doc """
  Stops the server, after writing its session to its store (if it has
  one). `delete: true` removes the session's record from the store
  instead: the conversation is over.
  """
  @spec stop(server(), delete: boolean()) :: :ok
  def stop(server, opts \\ []) do
    delete = Keyword.get(opts, :delete, false)

    unless is_boolean(delete) and Keyword.keys(opts) -- [:delete] == [] do
      raise ArgumentError, "ExBashkit.Server.stop/2 takes only delete: boolean"
    end

    case call(server, {:stop, delete}) do
      :ok -> :ok
      {:error, _} -> :ok
    end
  end

  ## The session API

  # Each function of the sandbox contract, as ExBashkit.Session's with a
  # server in place of the session. `cancel/1` is answered by the server
  # itself; `restore` answers `:ok`, since the server keeps its session.
  @docs %{
    exec: """
    Runs `script` in the server's session: `ExBashkit.Session.exec/3`, with
    the same options. `:stream_to` receives chunks from wherever the server
    runs; `:into` collects on the server's node.
    """,
    restore: """
    `ExBashkit.Session.restore/3` into the server's session: `:ok` or
    `{:error, message}`.
    """
  }

  for {name, arguments} <- Contract.operations(), name != :cancel do
    variables = Contract.variables(arguments)
    types = Enum.map(arguments, &Contract.argument_type/1)
    answer = Contract.answer_type(name)

    # A trailing `opts` may be left out, as in Session.
    parameters =
      case Enum.split(variables, -1) do
        {given, [{:opts, _, _} = opts]} -> given ++ [quote(do: unquote(opts) \\ [])]
        _ -> variables
      end

    @doc Map.get(
           @docs,
           name,
           "`ExBashkit.Session.#{name}/#{length(arguments) + 1}` on the server's session."
         )
    @spec unquote(name)(server(), unquote_splicing(types)) :: unquote(answer)
    def unquote(name)(server, unquote_splicing(parameters)),
      do: run(server, unquote(name), unquote(variables))
  end

  @doc """
  Stops the script running in the server's session
  (`ExBashkit.Session.cancel/1`): `:ok`, or `:idle` when none runs.
  """
  @spec cancel(server()) :: :ok | :idle | {:error, String.t()}
  def cancel(server), do: call(server, :cancel)

  defp run(server, :restore, args) do
    with {:ok, _session} <- call(server, {:run, :restore, args}), do: :ok
  end

  defp run(server, operation, args), do: call(server, {:run, operation, args})

  ## Lifecycle

  @doc """
  Hibernates the server now, as `:idle_after` would: `:ok`, or
  `{:error, message}` if the snapshot could not be taken or stored (the
  session then stays awake, nothing lost). Calls running finish first.

      iex> {:ok, pid} = ExBashkit.Server.start()
      iex> {:ok, _} = ExBashkit.Server.exec(pid, "x=1")
      iex> ExBashkit.Server.hibernate(pid)
      :ok
      iex> ExBashkit.Server.info(pid).state
      :hibernated
      iex> {:ok, %{stdout: "1\\n"}} = ExBashkit.Server.exec(pid, "echo $x")
      iex> ExBashkit.Server.info(pid).state
      :awake
      iex> ExBashkit.Server.stop(pid)
      :ok
  """
  @spec hibernate(server()) :: :ok | {:error, String.t()}
  def hibernate(server), do: call(server, :hibernate)

  @doc """
  The live servers of the cluster (this node and those connected to it),
  or of `node` alone: for each, its `:id`, `:pid`, `:node`, `:isolation`,
  `:state` (`:running` while a call runs, `:idle`, or `:hibernated` when
  no interpreter is in memory), `:age_ms`, the time of its `:last_call`
  (a `DateTime`), and for a session in a worker process its `:os_pid`
  and `:memory` (the worker's resident set, in bytes; `nil` otherwise).

  It reads a table each server keeps its own row in, and asks no server:
  cheap enough to poll (`bench/server.exs`). A node that does not answer
  within 5 seconds is left out.

      iex> {:ok, pid} = ExBashkit.Server.get_or_start("listed-in-the-docs")
      iex> {:ok, _} = ExBashkit.Server.exec(pid, "true")
      iex> [server] = Enum.filter(ExBashkit.Server.list(), &(&1.id == "listed-in-the-docs"))
      iex> {server.pid == pid, server.state, server.node == node()}
      {true, :idle, true}
      iex> ExBashkit.Server.stop(pid)
      :ok
  """
  @spec list() :: [map()]
  def list do
    remote =
      case Node.list() do
        [] ->
          []

        nodes ->
          nodes |> :erpc.multicall(Directory, :local, [], 5_000) |> Enum.flat_map(&listed/1)
      end

    Directory.local() ++ remote
  end

  @doc """
  The sandbox nodes running now: the VMs servers started with
  `isolation: :node` run on (see "Sandbox nodes" in
  `guides/sandbox_per_conversation.md`). None until such a server starts.

      iex> is_list(ExBashkit.Server.sandbox_nodes())
      true
  """
  @spec sandbox_nodes() :: [node()]
  defdelegate sandbox_nodes(), to: ExBashkit.SandboxNode, as: :nodes

  @doc "The live servers of `node`; see `list/0`."
  @spec list(node()) :: [map()]
  def list(node) when node == node(), do: Directory.local()

  def list(node) when is_atom(node) do
    listed(:erpc.call(node, Directory, :local, [], 5_000))
  catch
    _kind, _reason -> []
  end

  defp listed({:ok, servers}) when is_list(servers), do: servers
  defp listed(servers) when is_list(servers), do: servers
  defp listed(_failed), do: []

  @doc """
  What the server is: `%{id:, node:, state: :awake | :hibernated,
  running:, memory:}` (`memory` is the server process's, in bytes;
  a hibernated session's snapshot is held off that heap or in the store).
  """
  @spec info(server()) :: map() | {:error, String.t()}
  def info(server), do: call(server, :info)

  @doc """
  Moves the server to `node`: the session is snapshotted, restored by a
  new server there, and its `{:global, _}` name re-pointed at it. The
  server of an id (`get_or_start/2`'s) runs on the id's owner and is not
  moved by hand: it answers `{:error, message}`. Calls made meanwhile wait and are served
  by the new server; the old pid forwards calls for a few seconds, then
  stops. Returns `{:ok, new_pid}` or `{:error, message}` (the server then
  stays where it was).
  """
  @spec move(server(), node()) :: {:ok, pid()} | {:error, String.t()}
  def move(server, node) when is_atom(node), do: call(server, {:move, node})

  def move(_server, node),
    do: raise(ArgumentError, "ExBashkit.Server.move/2 expects a node, got: #{inspect(node)}")

  # Every call waits as long as the server needs (each operation bounds its
  # own time); a server that is gone is an error, not an exit. The name of
  # earlier versions finds the server of an id where it runs now.
  defp call({:global, {__MODULE__, id}}, request), do: call(Owned.name(id), request)

  defp call(server, request) do
    case GenServer.call(server, request, :infinity) do
      # What the session function raised (a bad option), raised here.
      {:raise, kind, reason, stacktrace} -> :erlang.raise(kind, reason, stacktrace)
      reply -> reply
    end
  catch
    :exit, {reason, {GenServer, :call, _}} ->
      {:error, "session server #{inspect(server)} is not available: #{Placement.down(reason)}"}
  end

  ## The process

  # The operations that change the session, and make it worth persisting.
  @writes [:exec, :write_file, :mkdir, :remove, :rename, :chmod, :restore]

  @impl true
  def init(%{} = arg) do
    Process.flag(:trap_exit, true)

    with :ok <- Placement.register(arg.name, arg.registrar, Map.get(arg, :takeover)) do
      state = State.new(arg)
      schedule_persist(state)
      enlist(state)
      {:ok, published(state)}
    end
  end

  # A server that recovers eagerly is known to its id's backup node.
  defp enlist(%State{roster: nil}), do: :ok
  defp enlist(state), do: Roster.enlist(state.id, state.roster, __MODULE__)

  defp delist(%State{roster: nil}), do: :ok
  defp delist(state), do: Roster.delist(state.id)

  @impl true
  def handle_call(request, from, %State{forward_to: nil} = state), do: route(request, from, state)

  # A server that moved forwards everything to its successor.
  def handle_call(request, from, state) do
    send(state.forward_to, {:"$gen_call", from, request})
    {:noreply, state}
  end

  # Where a call goes: `info` and `cancel` are answered at once (neither
  # wakes a hibernated server); the others queue behind a move, hibernate
  # or stop that waits for running calls, and are served otherwise.
  defp route(:info, _from, state), do: reply(State.describe(state), state)

  # The ring asks, to keep one of two servers of an id (a healed partition).
  defp route(:epoch, _from, state), do: reply(state.epoch || 0, state)
  defp route(:fence, _from, state), do: delist(state) && {:stop, :normal, :ok, State.fence(state)}

  defp route(:cancel, _from, state) do
    if State.awake?(state),
      do: {:reply, Session.cancel(state.session), state},
      else: reply(:idle, state)
  end

  # A successor takes its predecessor's session before anything else; the
  # calls that reached it first wait for it (served fresh, they would
  # answer from an empty session, and the adoption would be lost).
  defp route({:adopt, _snapshot} = request, from, state), do: serve(request, from, state)

  defp route(request, from, %State{adopting?: true} = state),
    do: {:noreply, %{state | waiting: :queue.in({request, from}, state.waiting)}}

  defp route(request, from, state) do
    if :queue.is_empty(state.waiting),
      do: serve(request, from, state),
      else: {:noreply, %{state | waiting: :queue.in({request, from}, state.waiting)}}
  end

  # A hibernated server stays hibernated after a call that did not wake it.
  defp reply(reply, state) do
    if State.awake?(state), do: {:reply, reply, state}, else: {:reply, reply, state, :hibernate}
  end

  defp serve({:run, operation, args}, from, state) do
    case State.wake(state) do
      {:ok, state} ->
        # The row says running before anything of the call (its first
        # output) can reach anyone who then lists the servers.
        state = published(%{state | last_call: State.now()}, :running)
        ref = Runner.start(state.session, operation, args)
        writes? = operation in @writes
        {:noreply, %{state | running: Map.put(state.running, ref, {from, writes?})}}

      {:error, message, state} ->
        {:reply, {:error, message}, state}
    end
  end

  # hibernate, move and stop wait for the calls running to finish, and
  # the calls after them wait with them.
  defp serve(request, from, state) when map_size(state.running) > 0,
    do: {:noreply, %{state | waiting: :queue.in({request, from}, state.waiting)}}

  defp serve(:hibernate, _from, state) do
    case State.hibernate(state) do
      {:ok, state} ->
        {:reply, :ok, published(state), :hibernate}

      {:error, message, %State{fenced?: true} = state} ->
        {:stop, :normal, {:error, message}, state}

      {:error, message, state} ->
        {:reply, {:error, message}, state}
    end
  end

  defp serve({:stop, delete?}, _from, state) do
    delist(state)
    state = if delete?, do: State.forget(state), else: state
    {:stop, :normal, :ok, state}
  end

  defp serve({:move, target}, _from, state),
    do: relocated(Placement.move(state, target, __MODULE__))

  # The ring hands an id's server over to the id's new owner.
  defp serve({:handover, target}, _from, state),
    do: relocated(Placement.handover(state, target, __MODULE__))

  # The snapshot a moving server hands over.
  defp serve({:adopt, snapshot}, from, state) do
    case State.adopt(state, snapshot) do
      {:ok, state} -> GenServer.reply(from, :ok) && idle(state)
      {:error, message, state} -> {:reply, {:error, message}, state}
    end
  end

  defp relocated({:ok, successor, state}), do: {:reply, {:ok, successor}, state}
  defp relocated({:error, message, state}), do: {:reply, {:error, message}, state}

  # A call is done: with `persist: :after_exec`, its changes are written
  # before its caller hears back, so that nothing it was told is lost.
  @impl true
  def handle_info({ref, reply}, state) when is_map_key(state.running, ref) do
    Process.demonitor(ref, [:flush])
    {{from, writes?}, running} = Map.pop(state.running, ref)
    state = %{state | running: running, dirty?: state.dirty? or writes?, last_call: State.now()}
    state = if running == %{}, do: State.recover(state), else: state
    state = if state.persist == :after_exec, do: State.persist(state, :exec), else: state

    if state.fenced? do
      # A newer server of this session claimed its store: what this call
      # changed is not kept, and this server stops.
      GenServer.reply(from, {:error, State.stale(state)})
      {:stop, :normal, state}
    else
      # The row is right before the caller hears back and may list.
      state = published(state)
      GenServer.reply(from, reply)
      if running == %{}, do: idle(state), else: {:noreply, state}
    end
  end

  # A call's task killed before it answered (it cannot fail otherwise).
  def handle_info({:DOWN, ref, :process, _pid, reason}, state)
      when is_map_key(state.running, ref) do
    handle_info({ref, {:error, "the call's process exited: #{inspect(reason)}"}}, state)
  end

  # Tasks are the only processes linked to a server besides its parent,
  # whose exit gen_server handles itself.
  def handle_info({:EXIT, _pid, _reason}, state), do: {:noreply, state}

  def handle_info(:idle_check, state) do
    state = %{state | idle_timer: nil}
    remaining = state.last_call + state.idle_after - State.now()

    cond do
      State.busy?(state) or not State.awake?(state) or state.forward_to != nil ->
        {:noreply, state}

      remaining > 0 ->
        {:noreply, arm_idle(state, remaining)}

      true ->
        case State.hibernate(state) do
          {:ok, state} -> {:noreply, published(state), :hibernate}
          {:error, _message, %State{fenced?: true} = state} -> {:stop, :normal, state}
          {:error, _message, state} -> {:noreply, arm_idle(state, state.idle_after)}
        end
    end
  end

  def handle_info(:persist_tick, state) do
    schedule_persist(state)

    if State.busy?(state) or state.forward_to != nil do
      {:noreply, state}
    else
      state = State.persist(state, :tick)
      if state.fenced?, do: {:stop, :normal, state}, else: {:noreply, state}
    end
  end

  def handle_info(:retire, state), do: {:stop, :normal, state}

  # The members changed: the backup of this id may have.
  def handle_info(:enlist, %State{forward_to: nil} = state),
    do: enlist(state) && {:noreply, state}

  def handle_info(_message, state), do: {:noreply, state}

  # A graceful stop (stop/2, the supervisor, the VM) keeps the session.
  @impl true
  def terminate(_reason, %State{forward_to: nil, store: store} = state) when store != nil do
    Directory.withdraw()
    if State.awake?(state), do: State.persist(%{state | persist: :after_exec}, :stop)
    close(state)
  end

  def terminate(_reason, state) do
    Directory.withdraw()
    close(state)
  end

  # The server's row in the directory of live servers, as it is now.
  # Where its session lives is learned once per session it wakes with (a
  # call in the VM would otherwise ask again on every call).
  defp published(state, status \\ nil) do
    state =
      case state.placement do
        {session, _isolation, _os_pid} when session == state.session ->
          state

        _ when state.session != nil ->
          info = Session.info(state.session)
          %{state | placement: {state.session, info.isolation, info.os_pid}}

        _ ->
          state
      end

    {isolation, os_pid} =
      case state.placement do
        {session, isolation, os_pid} when session == state.session -> {isolation, os_pid}
        {_gone, isolation, _os_pid} -> {isolation, nil}
        nil -> {Keyword.get(state.spec, :isolation, :none), nil}
      end

    status =
      cond do
        status != nil -> status
        not State.awake?(state) -> :hibernated
        State.busy?(state) -> :running
        true -> :idle
      end

    Directory.publish(state.id, isolation, status, state.started_at, state.last_call, os_pid)
    state
  end

  # A stopped server's worker process goes with it, not when its session
  # is collected.
  defp close(%State{session: %ExBashkit.Session{} = session}),
    do: ExBashkit.Session.close(session)

  defp close(_state), do: :ok

  # Nothing runs: serve what waited (a move, hibernate or stop, and the
  # calls that came after it), or hibernate later.
  defp idle(state) do
    {waiting, state} = {state.waiting, %{state | waiting: :queue.new()}}
    serve_waiting(state, :queue.to_list(waiting))
  end

  defp serve_waiting(state, []) do
    if State.busy?(state) or not :queue.is_empty(state.waiting),
      do: {:noreply, state},
      else: {:noreply, arm_idle(state, state.idle_after)}
  end

  # Calls that waited behind a move go to the successor.
  defp serve_waiting(%State{forward_to: successor} = state, waiting) when successor != nil do
    for {request, from} <- waiting, do: send(successor, {:"$gen_call", from, request})
    {:noreply, state}
  end

  defp serve_waiting(state, [{request, from} | rest]) do
    case route(request, from, state) do
      {:reply, reply, state} ->
        GenServer.reply(from, reply) && serve_waiting(state, rest)

      {:reply, reply, state, :hibernate} ->
        GenServer.reply(from, reply) && serve_waiting(state, rest)

      {:noreply, state} ->
        serve_waiting(state, rest)

      # Calls behind a stop see the server gone, as calls after it would.
      {:stop, reason, reply, state} ->
        GenServer.reply(from, reply) && {:stop, reason, state}
    end
  end

  defp arm_idle(%State{idle_after: :infinity} = state, _ms), do: state
  defp arm_idle(%State{idle_timer: timer} = state, _ms) when timer != nil, do: state

  defp arm_idle(state, ms),
    do: %{state | idle_timer: Process.send_after(self(), :idle_check, ms)}

  defp schedule_persist(%State{persist: {:every, ms}, store: store}) when store != nil,
    do: Process.send_after(self(), :persist_tick, ms)

  defp schedule_persist(_state), do: :ok
end
