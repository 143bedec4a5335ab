defmodule ExBashkit.Peer.Pool do
  @moduledoc false
  # Keeps spare peer VMs booted for `ExBashkit.Peer.run/2` (its moduledoc,
  # "The pool", says how users size and place it): each spare serves one
  # run and is then stopped. Callers wait in line for the next VM rather
  # than boot their own; while any waits, no spares are booted. Every VM is
  # owned by the pool from the moment it starts booting.

  # Without this library's supervisor (inside a peer node, where a nested
  # run/2 comes from), a run gets a pool of its own that boots its one VM
  # and stops when the run is over or its caller is gone.

  use GenServer

  @boot_timeout 30_000

  @typedoc false
  # A booted peer: its controlling process and its node name.
  @type peer :: {pid(), node()}

  @type option :: {:size, non_neg_integer()}

  @options [
    size: [
      type: {:or, [:non_neg_integer, {:in, [nil]}]},
      default: nil,
      doc:
        "the number of spare VMs kept booted; by default " <>
          "`config :ex_bashkit, peer_pool_size`, or `2`."
    ]
  ]

  @doc """
  Starts the pool, registered as `ExBashkit.Peer.Pool`.

  ## Options

  #{ExBashkit.Options.docs(@options)}
  """
  @spec start_link([option()]) :: GenServer.on_start()
  def start_link(opts \\ []) do
    %{size: size} =
      ExBashkit.Options.validate!(opts, @options, "ExBashkit.Peer.Pool.start_link/1")

    size = size || Application.get_env(:ex_bashkit, :peer_pool_size, 2)
    GenServer.start_link(__MODULE__, {:named, size}, name: __MODULE__)
  end

  @doc false
  # A fresh, never used peer for the calling process, within `timeout`
  # milliseconds, and the pool to release it to.
  @spec checkout(timeout()) :: {:ok, pid(), peer()} | {:error, term()}
  def checkout(timeout) do
    pool = pool() || ephemeral()
    ref = make_ref()

    try do
      GenServer.call(pool, {:checkout, ref}, timeout)
    catch
      :exit, {:timeout, _} ->
        # The pool may have lent a peer just now: it stops it.
        GenServer.cast(pool, {:cancel, ref})
        {:error, :timeout}

      :exit, {reason, _} ->
        {:error, reason}
    else
      {:ok, peer} -> {:ok, pool, peer}
      {:error, _} = error -> error
    end
  end

  @doc false
  # Stops a peer after its run; returns once the node is down.
  @spec release(pid(), peer()) :: :ok
  def release(pool, {_controller, node} = peer) do
    GenServer.cast(pool, {:forget, node})
    stop(peer)
  end

  @doc false
  # The node names of the idle spares.
  @spec spares() :: [node()]
  def spares, do: info().spares

  @doc false
  # What the pool holds: spares (node names), VMs booting, VMs lent out.
  @spec info() :: %{spares: [node()], booting: non_neg_integer(), lent: non_neg_integer()}
  def info, do: GenServer.call(pool!(), :info)

  @doc false
  # Changes the number of spares kept; extra spares are stopped.
  @spec resize(non_neg_integer()) :: :ok
  def resize(size), do: GenServer.call(pool!(), {:resize, size}, @boot_timeout)

  # The registered pool; started under our supervisor on first use, unless
  # the user placed one. nil where this library's application is not running.
  defp pool, do: ExBashkit.Children.started(__MODULE__)

  defp pool! do
    pool() ||
      raise "ExBashkit.Peer.Pool is not running (the :ex_bashkit application is not started)"
  end

  defp ephemeral do
    {:ok, pid} = GenServer.start(__MODULE__, {:ephemeral, self()})
    pid
  end

  @impl true
  def init(kind) do
    Process.flag(:trap_exit, true)

    state = %{
      size: 0,
      spares: [],
      booting: 0,
      used: false,
      lent: %{},
      waiting: :queue.new(),
      # An ephemeral pool's monitor of the caller it was started for.
      owner: nil
    }

    case kind do
      {:named, size} -> {:ok, %{state | size: size}}
      {:ephemeral, caller} -> {:ok, %{state | owner: Process.monitor(caller)}}
    end
  end

  @impl true
  def handle_call({:checkout, ref}, {caller, _} = from, state) do
    state = %{state | used: true}

    case state.spares do
      [peer | spares] ->
        state = lend(%{state | spares: spares}, peer, caller, ref)
        {:reply, {:ok, peer}, refill(state)}

      [] ->
        waiter = {from, ref, Process.monitor(caller)}
        {:noreply, refill(%{state | waiting: :queue.in(waiter, state.waiting)})}
    end
  end

  def handle_call(:info, _from, state) do
    spares = Enum.map(state.spares, &elem(&1, 1))
    {:reply, %{spares: spares, booting: state.booting, lent: map_size(state.lent)}, state}
  end

  def handle_call({:resize, size}, _from, state) do
    {keep, extra} = Enum.split(state.spares, size)
    Enum.each(extra, &stop/1)
    {:reply, :ok, refill(%{state | size: size, spares: keep})}
  end

  @impl true
  def handle_cast({:forget, node}, state) do
    case Map.pop(state.lent, node) do
      {{_controller, monitor, _ref}, lent} ->
        Process.demonitor(monitor, [:flush])
        continue(%{state | lent: lent})

      {nil, _} ->
        continue(state)
    end
  end

  def handle_cast({:cancel, ref}, state) do
    state
    |> drop_waiter(fn {_, r, _} -> r == ref end)
    |> reclaim(fn {_, _, r} -> r == ref end)
    |> continue()
  end

  @impl true
  def handle_info({:booted, booter, {:ok, {controller, _} = peer}}, state) do
    Process.link(controller)
    send(booter, :adopted)
    state = %{state | booting: state.booting - 1}

    case :queue.out(state.waiting) do
      {{:value, {{caller, _} = from, ref, monitor}}, waiting} ->
        Process.demonitor(monitor, [:flush])
        GenServer.reply(from, {:ok, peer})
        continue(refill(lend(%{state | waiting: waiting}, peer, caller, ref)))

      {:empty, _} when length(state.spares) < state.size ->
        continue(%{state | spares: state.spares ++ [peer]})

      {:empty, _} ->
        Task.Supervisor.start_child(ExBashkit.TaskSupervisor, fn -> stop(peer) end)
        continue(state)
    end
  end

  # A boot that failed fails the longest waiting caller, so that callers
  # never wait forever on boots that cannot succeed.
  def handle_info({:booted, _booter, {:error, reason}}, state) do
    state = %{state | booting: state.booting - 1}

    case :queue.out(state.waiting) do
      {{:value, {from, _ref, monitor}}, waiting} ->
        Process.demonitor(monitor, [:flush])
        GenServer.reply(from, {:error, reason})
        continue(refill(%{state | waiting: waiting}))

      {:empty, _} ->
        continue(state)
    end
  end

  # The caller an ephemeral pool was started for is gone.
  def handle_info({:DOWN, monitor, :process, _caller, _reason}, %{owner: monitor} = state) do
    continue(%{state | owner: :gone})
  end

  # A caller died: waiting in line, it leaves the line; holding a peer,
  # the peer goes with it.
  def handle_info({:DOWN, monitor, :process, _caller, _reason}, state) do
    state
    |> drop_waiter(fn {_, _, m} -> m == monitor end)
    |> reclaim(fn {_, m, _} -> m == monitor end)
    |> continue()
  end

  # A booter that crashed, or a spare's controller that exited.
  def handle_info({:EXIT, pid, _reason}, state) do
    continue(%{state | spares: Enum.reject(state.spares, &(elem(&1, 0) == pid))})
  end

  def handle_info(_message, state), do: {:noreply, state}

  @impl true
  def terminate(_reason, state) do
    Enum.each(state.spares, &stop/1)
    Enum.each(state.lent, fn {node, {controller, _, _}} -> stop({controller, node}) end)
  end

  # An ephemeral pool stops once its run is over (or its caller is gone)
  # and no VM of its is still booting or lent.
  defp continue(%{owner: owner} = state) when owner != nil do
    idle? = state.booting == 0 and state.lent == %{} and :queue.is_empty(state.waiting)

    if idle? and (state.used or owner == :gone),
      do: {:stop, :normal, state},
      else: {:noreply, state}
  end

  defp continue(state), do: {:noreply, state}

  defp lend(state, {controller, node}, caller, ref) do
    monitor = Process.monitor(caller)
    %{state | lent: Map.put(state.lent, node, {controller, monitor, ref})}
  end

  defp drop_waiter(state, match?) do
    {dropped, kept} = Enum.split_with(:queue.to_list(state.waiting), match?)
    Enum.each(dropped, fn {_, _, monitor} -> Process.demonitor(monitor, [:flush]) end)
    %{state | waiting: :queue.from_list(kept)}
  end

  # Stops the lent peers whose `{controller, monitor, ref}` matches.
  defp reclaim(state, match?) do
    {reclaimed, lent} = Enum.split_with(state.lent, fn {_node, entry} -> match?.(entry) end)

    for {node, {controller, monitor, _ref}} <- reclaimed do
      Process.demonitor(monitor, [:flush])
      Task.Supervisor.start_child(ExBashkit.TaskSupervisor, fn -> stop({controller, node}) end)
    end

    %{state | lent: Map.new(lent)}
  end

  # Boots what the waiting callers need, one VM each; spares only while no
  # caller waits, so that under load every boot in flight is one a caller
  # is waiting for and none competes with it for the cores.
  defp refill(%{used: true} = state) do
    in_flight =
      case :queue.len(state.waiting) do
        0 -> state.size - length(state.spares)
        waiting -> waiting
      end

    missing = max(in_flight - state.booting, 0)
    pool = self()

    for _ <- 1..missing//1 do
      spawn_link(fn -> boot_for(pool) end)
    end

    %{state | booting: state.booting + missing}
  end

  defp refill(state), do: state

  # Runs in a process linked to the pool, which owns the VM from the start:
  # if the pool goes, so does this process and, linked to it, the VM.
  defp boot_for(pool) do
    send(pool, {:booted, self(), boot()})

    receive do
      :adopted -> :ok
    end
  end

  @doc false
  # Boots a VM ready to evaluate code. `extra` may name the node (`:prefix`),
  # add to its environment (`:env`) and wrap its command (`:exec`, see
  # ExBashkit.SandboxNode).
  @spec boot(map()) :: {:ok, peer()} | {:error, term()}
  def boot(extra \\ %{}) do
    name = :peer.random_name(Map.get(extra, :prefix, ~c"ex_bashkit_peer"))
    env = env() ++ Map.get(extra, :env, [])

    options =
      %{name: name, args: args(), env: env, wait_boot: @boot_timeout}
      |> Map.merge(naming())
      |> Map.merge(Map.take(extra, [:exec]))

    with {:ok, controller, node} <- :peer.start(options) do
      try do
        boot = [controller, Enum.filter(:code.get_path(), &File.dir?/1)]
        :ok = :erpc.call(node, ExBashkit.Peer.Evaluator, :boot, boot, @boot_timeout)
        {:ok, {controller, node}}
      catch
        kind, reason ->
          stop({controller, node})
          {:error, {kind, reason}}
      end
    end
  end

  @doc false
  @spec stop(peer()) :: :ok
  def stop({controller, node}) do
    monitor = Process.monitor(controller)
    # Halting is immediate; a graceful `init:stop/0` would take far longer.
    :erpc.cast(node, :erlang, :halt, [0, [flush: false]])

    receive do
      {:DOWN, ^monitor, :process, ^controller, _} -> :ok
    after
      5_000 ->
        Process.exit(controller, :kill)
        :ok
    end
  end

  # Just enough code path to run the evaluator; its boot/2 then installs
  # the host's whole path, in the host's order, so that consolidated
  # protocols come before the modules they replace.
  defp args do
    paths =
      for module <- [ExBashkit.Peer.Evaluator, Kernel], do: :filename.dirname(:code.which(module))

    # Schedulers that spin while idle would take the cores from the VMs
    # booting beside this one.
    no_spinning = for flag <- ~w(+sbwt +sbwtdcpu +sbwtdio), arg <- [flag, "none"], do: ~c"#{arg}"

    [~c"-hidden", ~c"-connect_all", ~c"false" | no_spinning ++ listen_on()] ++
      [~c"-ex_bashkit_root", root(), ~c"-pa" | paths]
  end

  # The VM at the root of a tree of peers (a peer's peers included), on
  # every peer's command line: ps and tests tell whose a VM is.
  defp root do
    case :init.get_argument(:ex_bashkit_root) do
      {:ok, [[root | _] | _]} -> root
      _ -> Atom.to_charlist(node())
    end
  end

  # Peers are named like the host (short or long names, same host part) and
  # listen where the host does: on loopback when ExBashkit started the
  # distribution (see ExBashkit.Peer.ensure_distributed!/0).
  defp naming do
    [_, host] = node() |> Atom.to_string() |> String.split("@", parts: 2)
    %{host: String.to_charlist(host), longnames: :net_kernel.longnames() == true}
  end

  defp listen_on do
    case Application.get_env(:kernel, :inet_dist_use_interface) do
      nil -> []
      ip -> [~c"-kernel", ~c"inet_dist_use_interface", String.to_charlist(inspect(ip))]
    end
  end

  # The host's environment stays out of the peer: API keys and the like.
  # Only what a VM needs to run is kept; run/2's :env adds to it.
  defp env do
    kept = ExBashkit.Peer.Evaluator.kept_env()
    for {name, _} <- System.get_env(), name not in kept, do: {String.to_charlist(name), false}
  end
end
