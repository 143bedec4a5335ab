defmodule ExBashkit.Server do
  @moduledoc """
  A session owned by a process: supervised, found by id, hibernating
  when idle, persisted to a store, and movable across an Erlang cluster.

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

  ## Hibernation and persistence

  After `:idle_after` milliseconds without calls, the server snapshots
  its session (sealed with its key), writes it to its `:store` if it has
  one (or keeps the snapshot, off its heap, if not), frees the
  interpreter and hibernates. The next call restores it first: files,
  variables, working directory, functions and aliases are back, the
  capabilities (builtins, mounts, limits) are rebuilt from `:session`.

  With a `:store`, a server that starts finds its session's last record
  there: after a crash, a VM restart, or on another node. It loses what
  happened after that record was written: with `persist: :after_exec`,
  nothing a finished call did; with `:on_hibernate`, everything since the
  last hibernation or graceful stop; with `{:every, ms}`, at most `ms`.

  ## Supervision

  `start/1` and `get_or_start/2` place servers under
  `ExBashkit.Server.Supervisor` (a `DynamicSupervisor` on every node that
  runs this library); `child_spec/1` places one in your own tree. Servers
  are `:transient`: a server that crashes is restarted with the options
  it was started with — from its store's last record if it has one,
  afresh if not — while one stopped with `stop/2` stays stopped.

  ## Callbacks and nodes

  A session's builtins and virtual_fs backends run where its server
  runs. A server that may be rebuilt somewhere else (one with a `:store`,
  a `:node` other than this one, or `isolation: :node`) refuses anonymous
  functions as capabilities: give a module, `{module, arg}`,
  `{module, function, args}` or `&Module.function/1`, which every node
  running the same code can call (see `ExBashkit.Builtin`).
  """

  use GenServer

  alias ExBashkit.{Result, Session, Store, Telemetry}
  alias ExBashkit.Server.Options

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

  # How long a server that moved keeps forwarding calls sent to its pid.
  @linger_ms 5_000
  @record_version 1

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
    GenServer.start_link(__MODULE__, init_arg(opts, nil), name: opts.name)
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

    with {:ok, target} <- placement(opts) do
      # A server on this node registers here, under whatever name this node
      # has then: it may not be distributed yet, and `node()` would go stale.
      {registrar, opts} =
        if target == node(),
          do: {:here, opts},
          else: {node(), %{opts | store: Store.pin(opts.store)}}

      start_on(target, init_arg(opts, registrar))
    end
  end

  defp start_on(target, init_arg) do
    spec = %{
      id: __MODULE__,
      start: {__MODULE__, :start_child_link, [init_arg]},
      restart: :transient
    }

    DynamicSupervisor.start_child({ExBashkit.Server.Supervisor, target}, spec)
  catch
    :exit, reason -> {:error, "cannot start a server on #{target}: #{down(reason)}"}
  end

  defp placement(%{isolation: :node}), do: ExBashkit.SandboxNode.node()
  defp placement(%{node: nil}), do: {:ok, node()}

  defp placement(%{node: nodes}) do
    connected = [node() | Node.list([:visible, :hidden])]

    case Enum.find(nodes, &(&1 in connected)) do
      nil -> {:error, "none of the nodes #{inspect(nodes)} is connected"}
      target -> {:ok, target}
    end
  end

  @doc """
  The server of session `id`, started (with `opts`) if none runs.

  The server is registered cluster-wide, as `{:global, {ExBashkit.Server,
  id}}`: any connected node finds it. Started, it first looks for the
  session's record in its `:store`; a session that was persisted (before a
  crash, a VM restart, or on a node that is gone) comes back from there,
  with the `:session` options given now or, if none are, those it was
  persisted with.

      iex> {:ok, a} = ExBashkit.Server.get_or_start({:user, 7})
      iex> ExBashkit.Server.whereis({:user, 7}) == a
      true
      iex> ExBashkit.Server.stop(a)
      :ok
  """
  @spec get_or_start(term(), [option()]) :: {:ok, pid()} | {:error, term()}
  def get_or_start(id, opts \\ []) do
    case whereis(id) do
      nil ->
        opts = Keyword.merge(opts, id: id, name: {:global, {__MODULE__, id}})

        case start(opts) do
          {:error, {:already_started, pid}} -> {:ok, pid}
          other -> other
        end

      pid ->
        {:ok, pid}
    end
  end

  @doc """
  The pid of the server `get_or_start/2` registered for `id`, or `nil`.

      iex> ExBashkit.Server.whereis("nobody")
      nil
  """
  @spec whereis(term()) :: pid() | nil
  def whereis(id) do
    case :global.whereis_name({__MODULE__, id}) do
      :undefined -> nil
      pid -> pid
    end
  end

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

  @doc """
  Runs `script` in the server's session: `ExBashkit.Session.exec/3`, with
  the same options. `:stream_to` receives chunks from wherever the server
  runs; `:into` collects on the server's node.
  """
  @spec exec(server(), String.t(), keyword()) ::
          {:ok, Result.t()} | {:error, String.t() | ExBashkit.Error.t()}
  def exec(server, script, opts \\ []), do: call(server, {:run, :exec, [script, opts]})

  @doc """
  Stops the script running in the server's session
  (`ExBashkit.Session.cancel/1`): `:ok`, or `:idle` when none runs.
  """
  @spec cancel(server()) :: :ok | :idle | {:error, String.t()}
  def cancel(server), do: call(server, :cancel)

  @doc "`ExBashkit.Session.read_file/2` on the server's session."
  @spec read_file(server(), Path.t()) :: {:ok, binary()} | {:error, String.t()}
  def read_file(server, path), do: call(server, {:run, :read_file, [path]})

  @doc "`ExBashkit.Session.write_file/3` on the server's session."
  @spec write_file(server(), Path.t(), iodata()) :: :ok | {:error, String.t()}
  def write_file(server, path, content),
    do: call(server, {:run, :write_file, [path, content]})

  @doc "`ExBashkit.Session.list_dir/2` on the server's session."
  @spec list_dir(server(), Path.t()) ::
          {:ok, [{String.t(), Session.fs_type()}]} | {:error, String.t()}
  def list_dir(server, path), do: call(server, {:run, :list_dir, [path]})

  @doc "`ExBashkit.Session.mkdir/3` on the server's session."
  @spec mkdir(server(), Path.t(), parents: boolean()) :: :ok | {:error, String.t()}
  def mkdir(server, path, opts \\ []), do: call(server, {:run, :mkdir, [path, opts]})

  @doc "`ExBashkit.Session.remove/3` on the server's session."
  @spec remove(server(), Path.t(), recursive: boolean()) :: :ok | {:error, String.t()}
  def remove(server, path, opts \\ []), do: call(server, {:run, :remove, [path, opts]})

  @doc "`ExBashkit.Session.rename/3` on the server's session."
  @spec rename(server(), Path.t(), Path.t()) :: :ok | {:error, String.t()}
  def rename(server, from, to), do: call(server, {:run, :rename, [from, to]})

  @doc "`ExBashkit.Session.stat/2` on the server's session."
  @spec stat(server(), Path.t()) :: {:ok, map()} | {:error, String.t()}
  def stat(server, path), do: call(server, {:run, :stat, [path]})

  @doc "`ExBashkit.Session.snapshot/2` of the server's session."
  @spec snapshot(server(), keyword()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(server, opts \\ []), do: call(server, {:run, :snapshot, [opts]})

  @doc """
  `ExBashkit.Session.restore/3` into the server's session: `:ok` or
  `{:error, message}`.
  """
  @spec restore(server(), binary(), keyword()) :: :ok | {:error, String.t()}
  def restore(server, snapshot, opts \\ []) do
    with {:ok, _session} <- call(server, {:run, :restore, [snapshot, opts]}), do: :ok
  end

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
  What the server is: `%{id:, node:, state: :awake | :hibernated,
  running:, memory:}` (`memory` is the server process's, in bytes;
  a hibernated session's snapshot is held off that heap or in the store).
  """
  @spec info(server()) :: map() | {:error, String.t()}
  def info(server), do: call(server, :info)

  @doc """
  Moves the server to `node`: the session is snapshotted, restored by a
  new server there, and the name (`{:global, _}`, as `get_or_start/2`
  registers) re-pointed at it. Calls made meanwhile wait and are served
  by the new server; the old pid forwards calls for a few seconds, then
  stops. Returns `{:ok, new_pid}` or `{:error, message}` (the server then
  stays where it was).
  """
  @spec move(server(), node()) :: {:ok, pid()} | {:error, String.t()}
  def move(server, node) when is_atom(node), do: call(server, {:move, node})

  def move(_server, node),
    do: raise(ArgumentError, "ExBashkit.Server.move/2 expects a node, got: #{inspect(node)}")

  # Every call waits as long as the server needs (each operation bounds its
  # own time); a server that is gone is an error, not an exit.
  defp call(server, request) do
    case GenServer.call(server, request, :infinity) do
      # What the session function raised (a bad option), raised here.
      {:raise, kind, reason, stacktrace} -> :erlang.raise(kind, reason, stacktrace)
      reply -> reply
    end
  catch
    :exit, {reason, {GenServer, :call, _}} ->
      {:error, "session server #{inspect(server)} is not available: #{down(reason)}"}
  end

  defp down({:nodedown, node}), do: "its node #{node} is down"
  defp down(:noconnection), do: "its node went down"
  defp down(:noproc), do: "no such process"
  defp down(reason), do: "it exited (#{inspect(reason, limit: 5)})"

  ## The process

  defp init_arg(opts, registrar) do
    opts |> Map.drop([:node, :isolation]) |> Map.put(:registrar, registrar)
  end

  @impl true
  def init(%{} = arg) do
    Process.flag(:trap_exit, true)

    # start_link/1 registered the name already; servers started elsewhere
    # on request register here.
    registration =
      if arg.registrar, do: register(arg.name, arg.registrar, Map.get(arg, :takeover)), else: :ok

    with :ok <- registration do
      state = %{
        id: arg.id,
        name: arg.name,
        spec: arg.session,
        given_spec?: arg.session != [],
        store: arg.store,
        persist: arg.persist,
        key: arg.key || :crypto.strong_rand_bytes(32),
        registrar: arg.registrar,
        idle_after: arg.idle_after,
        session: nil,
        snapshot: nil,
        loaded?: false,
        dirty?: false,
        running: %{},
        waiting: [],
        idle_timer: nil,
        last_call: now(),
        forward_to: nil
      }

      schedule_persist(state)
      {:ok, state}
    end
  end

  defp register(nil, _registrar, _takeover), do: :ok

  defp register({:global, name}, registrar, takeover) when registrar not in [:here, node()] do
    :erpc.call(registrar, __MODULE__, :register_global, [name, self(), takeover])
  catch
    kind, reason -> {:stop, {:registration_failed, {kind, reason}}}
  end

  defp register({:global, name}, _registrar, takeover),
    do: register_global(name, self(), takeover)

  defp register({:via, module, name}, _registrar, _takeover) do
    case module.register_name(name, self()) do
      :yes -> :ok
      :no -> {:stop, {:already_started, module.whereis_name(name)}}
    end
  end

  defp register(name, _registrar, _takeover) when is_atom(name) do
    Process.register(self(), name)
    :ok
  rescue
    ArgumentError -> {:stop, {:already_started, Process.whereis(name)}}
  end

  @doc false
  # Registers `pid` globally, from the node that started it: a sandbox
  # node is hidden, and its own :global would keep the name to itself.
  # A server that takes over from one that moved re-points the name.
  def register_global(name, pid, takeover) do
    case :global.whereis_name(name) do
      ^takeover when is_pid(takeover) ->
        :global.re_register_name(name, pid)
        :ok

      _ ->
        case :global.register_name(name, pid) do
          :yes -> :ok
          :no -> {:stop, {:already_started, :global.whereis_name(name)}}
        end
    end
  end

  # A server that moved forwards everything to its successor.
  @impl true
  def handle_call(request, from, %{forward_to: successor} = state) when successor != nil do
    send(successor, {:"$gen_call", from, request})
    {:noreply, state}
  end

  # While a move waits for running calls to finish, new ones wait too.
  def handle_call(request, from, %{waiting: [_ | _]} = state) when request != :cancel do
    if request == :info do
      {:reply, describe(state), state}
    else
      {:noreply, %{state | waiting: state.waiting ++ [{request, from}]}}
    end
  end

  # Neither wakes a hibernated server, nor leaves it awake.
  def handle_call(:cancel, _from, %{session: nil} = state), do: {:reply, :idle, state, :hibernate}
  def handle_call(:cancel, _from, state), do: {:reply, Session.cancel(state.session), state}

  def handle_call(:info, _from, %{session: nil} = state),
    do: {:reply, describe(state), state, :hibernate}

  def handle_call(:info, _from, state), do: {:reply, describe(state), state}

  def handle_call({:run, operation, args}, from, state) do
    case wake(state) do
      {:ok, state} ->
        {:noreply, spawn_run(state, from, operation, args)}

      {:error, message, state} ->
        {:reply, {:error, message}, state}
    end
  end

  def handle_call(request, from, %{running: running} = state)
      when map_size(running) > 0 and request != :cancel do
    # hibernate, move and stop wait for the calls running to finish.
    {:noreply, %{state | waiting: [{request, from}]}}
  end

  def handle_call(:hibernate, _from, state) do
    case do_hibernate(state) do
      {:ok, state} -> {:reply, :ok, state, :hibernate}
      {:error, message, state} -> {:reply, {:error, message}, state}
    end
  end

  def handle_call({:stop, delete?}, _from, state) do
    state = if delete?, do: forget(state), else: state
    {:stop, :normal, :ok, state}
  end

  def handle_call({:move, target}, _from, state) do
    case do_move(state, target) do
      {:ok, successor, state} -> {:reply, {:ok, successor}, state}
      {:error, message, state} -> {:reply, {:error, message}, state}
    end
  end

  # The snapshot a moving server hands over.
  def handle_call({:adopt, snapshot}, _from, state) do
    state = %{state | snapshot: snapshot, loaded?: true}

    case wake(state) do
      {:ok, state} -> {:reply, :ok, %{state | dirty?: true}}
      {:error, message, state} -> {:reply, {:error, message}, state}
    end
  end

  # A runner is done: with `persist: :after_exec`, its changes are written
  # before its caller hears back, so that nothing it was told is lost.
  @impl true
  def handle_info({:ran, runner, reply}, %{running: running} = state)
      when is_map_key(running, runner) do
    {{from, writes?}, running} = Map.pop(running, runner)
    state = %{state | running: running, dirty?: state.dirty? or writes?, last_call: now()}
    state = if map_size(running) == 0, do: recover(state), else: state
    state = if state.persist == :after_exec, do: persist(state, :exec), else: state
    GenServer.reply(from, reply)
    if map_size(running) == 0, do: idle(state), else: {:noreply, state}
  end

  # A runner killed before it answered (it cannot fail otherwise).
  def handle_info({:EXIT, runner, reason}, %{running: running} = state)
      when is_map_key(running, runner) and reason != :normal do
    send(self(), {:ran, runner, {:error, "the call's process exited: #{inspect(reason)}"}})
    {:noreply, state}
  end

  # Runners are the only processes linked to a server besides its parent,
  # whose exit gen_server handles itself.
  def handle_info({:EXIT, _pid, _reason}, state), do: {:noreply, state}

  def handle_info(:idle_check, %{running: running} = state) when map_size(running) > 0,
    do: {:noreply, %{state | idle_timer: nil}}

  def handle_info(:idle_check, %{session: nil} = state),
    do: {:noreply, %{state | idle_timer: nil}}

  def handle_info(:idle_check, state) do
    state = %{state | idle_timer: nil}
    remaining = state.last_call + state.idle_after - now()

    cond do
      state.forward_to != nil ->
        {:noreply, state}

      remaining > 0 ->
        {:noreply, arm_idle(state, remaining)}

      true ->
        case do_hibernate(state) do
          {:ok, state} -> {:noreply, state, :hibernate}
          {:error, _message, state} -> {:noreply, arm_idle(state, state.idle_after)}
        end
    end
  end

  def handle_info(:persist_tick, state) do
    schedule_persist(state)

    if map_size(state.running) == 0 and state.forward_to == nil,
      do: {:noreply, persist(state, :tick)},
      else: {:noreply, state}
  end

  def handle_info(:retire, state), do: {:stop, :normal, state}
  def handle_info(_message, state), do: {:noreply, state}

  # A graceful stop (stop/2, the supervisor, the VM) keeps the session.
  @impl true
  def terminate(_reason, %{forward_to: nil, store: store} = state) when store != nil do
    if state.session, do: persist(%{state | persist: :after_exec}, :stop)
    :ok
  end

  def terminate(_reason, _state), do: :ok

  ## Running operations

  @writes [:exec, :write_file, :mkdir, :remove, :rename, :restore]

  # Each operation runs in a process of its own, linked to the server, so
  # that the server answers cancel/1 and reads while a script runs.
  defp spawn_run(state, from, operation, args) do
    session = state.session
    server = self()

    runner =
      spawn_link(fn ->
        reply =
          try do
            apply(Session, operation, [session | listen_here(operation, args)])
          catch
            kind, reason -> {:raise, kind, reason, __STACKTRACE__}
          end

        send(server, {:ran, self(), reply})
      end)

    writes? = operation in @writes
    %{state | running: Map.put(state.running, runner, {from, writes?}), last_call: now()}
  end

  # A `:stream_to` listener on another node: the session streams to a
  # local relay (sessions send to local pids only), which forwards in order.
  defp listen_here(:exec, [script, opts]) do
    case Keyword.keyword?(opts) && Keyword.get(opts, :stream_to) do
      {pid, tag} when is_pid(pid) and node(pid) != node() ->
        [script, Keyword.put(opts, :stream_to, {relay(pid), tag})]

      pid when is_pid(pid) and node(pid) != node() ->
        [script, Keyword.put(opts, :stream_to, relay(pid))]

      _local_or_none ->
        [script, opts]
    end
  end

  defp listen_here(_operation, args), do: args

  defp relay(listener) do
    runner = self()
    spawn(fn -> forward(listener, Process.monitor(runner)) end)
  end

  # Until the outcome is forwarded, or the runner is gone and nothing is
  # left to forward.
  defp forward(listener, runner) do
    receive do
      {:ex_bashkit, _tag, {:exit, _outcome}} = last ->
        send(listener, last)

      {:ex_bashkit, _tag, _chunk} = message ->
        send(listener, message)
        forward(listener, runner)

      {:DOWN, ^runner, :process, _, _} ->
        receive do
          {:ex_bashkit, _tag, _} = message -> send(listener, message) && forward(listener, runner)
        after
          0 -> :ok
        end
    end
  end

  # Nothing runs: serve what waited (a move, hibernate or stop, and the
  # calls that came after it), or hibernate later.
  defp idle(%{waiting: waiting} = state), do: serve_waiting(%{state | waiting: []}, waiting)

  defp serve_waiting(state, []) do
    if map_size(state.running) == 0 and state.waiting == [],
      do: {:noreply, arm_idle(state, state.idle_after)},
      else: {:noreply, state}
  end

  # Calls that waited behind a move go to the successor.
  defp serve_waiting(%{forward_to: successor} = state, waiting) when successor != nil do
    for {request, from} <- waiting, do: send(successor, {:"$gen_call", from, request})
    {:noreply, state}
  end

  defp serve_waiting(state, [{request, from} | rest]) do
    case handle_call(request, from, state) do
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

  defp arm_idle(%{idle_after: :infinity} = state, _ms), do: state
  defp arm_idle(%{idle_timer: timer} = state, _ms) when timer != nil, do: state

  defp arm_idle(state, ms),
    do: %{state | idle_timer: Process.send_after(self(), :idle_check, ms)}

  defp schedule_persist(%{persist: {:every, ms}, store: store}) when store != nil,
    do: Process.send_after(self(), :persist_tick, ms)

  defp schedule_persist(_state), do: :ok

  ## Waking, hibernating, persisting

  # A session whose worker process was killed (a script past its deadline
  # or memory cap) can run nothing more. With a store, the next call wakes
  # it from the last record; without one, it stays and answers errors.
  defp recover(%{session: %Session{resource: %ExBashkit.Worker{}} = session} = state)
       when state.store != nil do
    if Session.info(session).os_pid == nil,
      do: %{state | session: nil, snapshot: nil, loaded?: false, dirty?: false},
      else: state
  end

  defp recover(state), do: state

  defp wake(%{session: session} = state) when session != nil, do: {:ok, state}

  defp wake(state) do
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

  defp load(state) do
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

  defp do_hibernate(%{session: nil} = state), do: {:ok, state}

  defp do_hibernate(state) do
    started = System.monotonic_time()

    with {:ok, snapshot} <- take_snapshot(state),
         {:ok, state} <- keep(state, snapshot) do
      store = with {module, _opts} <- state.store, do: module

      observe(:hibernate, started, %{snapshot_bytes: byte_size(snapshot)}, %{
        id: state.id,
        store: store
      })

      {:ok, %{state | session: nil}}
    else
      {:error, message} -> {:error, message, state}
    end
  end

  # Without a store the snapshot stays here, off-heap. A store that refuses
  # the record keeps the session awake: hibernating would leave the only
  # copy of it somewhere the caller did not ask for.
  defp keep(%{store: nil} = state, snapshot), do: {:ok, %{state | snapshot: snapshot}}

  defp keep(state, snapshot) do
    case Store.put(state.store, state.id, encode(state, snapshot)) do
      # The next wake reads it back from there.
      :ok -> {:ok, %{state | snapshot: nil, dirty?: false, loaded?: false}}
      {:error, message} -> {:error, "cannot hibernate: #{message}"}
    end
  end

  defp take_snapshot(state), do: Session.snapshot(state.session, key: state.key)

  # Writes the session to the store when it changed since the last time.
  defp persist(%{store: nil} = state, _why), do: state
  defp persist(%{session: nil} = state, _why), do: state
  defp persist(%{dirty?: false} = state, why) when why != :stop, do: state

  defp persist(state, _why) do
    with {:ok, snapshot} <- take_snapshot(state),
         :ok <- Store.put(state.store, state.id, encode(state, snapshot)) do
      %{state | dirty?: false}
    else
      {:error, _message} -> state
    end
  end

  defp forget(%{store: nil} = state), do: state

  defp forget(state) do
    Store.delete(state.store, state.id)
    %{state | store: nil}
  end

  defp encode(state, snapshot) do
    :erlang.term_to_binary({__MODULE__, @record_version, state.spec, state.key, snapshot})
  end

  defp decode(record) do
    case :erlang.binary_to_term(record) do
      {__MODULE__, @record_version, spec, key, snapshot} -> {:ok, spec, key, snapshot}
      _ -> :error
    end
  rescue
    ArgumentError -> :error
  end

  # `[:ex_bashkit, :server, event]`, timed from `started`.
  defp observe(event, started, measurements, metadata) do
    duration = System.monotonic_time() - started

    Telemetry.execute(
      [:ex_bashkit, :server, event],
      Map.put(measurements, :duration, duration),
      metadata
    )
  end

  ## Moving

  defp do_move(state, target) when target == node(), do: {:ok, self(), state}

  defp do_move(%{name: name} = state, _target) when name != nil and not is_tuple(name) do
    {:error, "a server registered under a local name (#{inspect(name)}) cannot move", state}
  end

  defp do_move(%{name: {:via, _, _}} = state, _target),
    do: {:error, "a server registered through :via cannot move", state}

  defp do_move(state, target) do
    started = System.monotonic_time()

    with {:ok, state} <- wake(state),
         {:ok, snapshot} <- take_snapshot(state),
         {:ok, successor} <- start_successor(state, target),
         :ok <- adopt(successor, snapshot) do
      observe(:move, started, %{snapshot_bytes: byte_size(snapshot)}, %{
        id: state.id,
        from: node(),
        to: target
      })

      Process.send_after(self(), :retire, @linger_ms)
      {:ok, successor, %{state | session: nil, snapshot: nil, forward_to: successor}}
    else
      {:error, message, state} -> {:error, message, state}
      {:error, message} -> {:error, "cannot move to #{target}: #{message}", state}
    end
  end

  defp start_successor(state, target) do
    init_arg = %{
      id: state.id,
      name: state.name,
      session: state.spec,
      idle_after: state.idle_after,
      store: Store.pin(state.store),
      persist: state.persist,
      key: state.key,
      registrar: if(state.registrar in [nil, :here], do: node(), else: state.registrar),
      takeover: self()
    }

    case start_on(target, init_arg) do
      {:ok, pid} -> {:ok, pid}
      {:error, reason} when is_binary(reason) -> {:error, reason}
      {:error, reason} -> {:error, inspect(reason)}
    end
  end

  defp adopt(successor, snapshot) do
    case GenServer.call(successor, {:adopt, snapshot}, :infinity) do
      :ok ->
        :ok

      {:error, message} ->
        GenServer.stop(successor)
        {:error, message}
    end
  end

  defp describe(state) do
    {:memory, memory} = Process.info(self(), :memory)

    %{
      id: state.id,
      node: node(),
      state: if(state.session, do: :awake, else: :hibernated),
      running: map_size(state.running),
      memory: memory
    }
  end

  defp now, do: System.monotonic_time(:millisecond)
end
