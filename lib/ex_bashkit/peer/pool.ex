defmodule ExBashkit.Peer.Pool do
  @moduledoc false
  # Boots, hands out and stops the peer nodes of ExBashkit.Peer.
  #
  # Booting a VM takes hundreds of milliseconds, so the pool keeps a few
  # spare nodes already booted (`config :ex_bashkit, peer_pool_size: 2`;
  # 0 turns it off). Each node serves exactly one run. `checkout/1` hands
  # the caller a spare; when there is none, the caller waits in line for
  # the next node to finish booting instead of booting its own, so callers
  # never compete with the pool for the cores. At most as many boots are in
  # flight as there are callers waiting, or as the pool's size when more.
  # Spares are only booted once `run/2` has been used.
  #
  # Every VM is booted by a process the pool links to and owns from the
  # moment `:peer.start` is called, so a caller that dies (or gives up)
  # while its VM boots leaves nothing behind, and the boot does not depend
  # on the caller's group leader. The pool watches every node it handed
  # out: when the caller dies before `release/1`, the pool stops the node.
  # A node also halts by itself when the host VM goes away (see
  # ExBashkit.Peer.Evaluator.boot/1).

  use GenServer

  @boot_timeout 30_000

  @typedoc "A booted peer: its controlling process and its node name."
  @type peer :: {pid(), node()}

  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(_opts), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc """
  A fresh, never used peer for the calling process, within `timeout`
  milliseconds (`{:error, :timeout}` after).
  """
  @spec checkout(timeout()) :: {:ok, peer()} | {:error, term()}
  def checkout(timeout) do
    ref = make_ref()

    try do
      GenServer.call(__MODULE__, {:checkout, ref}, timeout)
    catch
      :exit, {:timeout, _} ->
        # The pool may have lent a peer just now: it stops it.
        GenServer.cast(__MODULE__, {:cancel, ref})
        {:error, :timeout}

      :exit, {:noproc, _} ->
        {:error, :no_pool}
    end
  end

  @doc "Stops a peer after its run; returns once the node is down."
  @spec release(peer()) :: :ok
  def release({_controller, node} = peer) do
    GenServer.cast(__MODULE__, {:forget, node})
    stop(peer)
  end

  @doc false
  # The node names of the idle spares.
  @spec spares() :: [node()]
  def spares, do: GenServer.call(__MODULE__, :spares)

  @doc false
  # Changes the number of spares kept; extra spares are stopped.
  @spec resize(non_neg_integer()) :: :ok
  def resize(size), do: GenServer.call(__MODULE__, {:resize, size}, @boot_timeout)

  @impl true
  def init(:ok) do
    Process.flag(:trap_exit, true)
    size = Application.get_env(:ex_bashkit, :peer_pool_size, 2)

    {:ok, %{size: size, spares: [], booting: 0, used: false, lent: %{}, waiting: :queue.new()}}
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

  def handle_call(:spares, _from, state),
    do: {:reply, Enum.map(state.spares, &elem(&1, 1)), state}

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
        {:noreply, %{state | lent: lent}}

      {nil, _} ->
        {:noreply, state}
    end
  end

  def handle_cast({:cancel, ref}, state) do
    {:noreply,
     state |> drop_waiter(fn {_, r, _} -> r == ref end) |> reclaim(fn {_, _, r} -> r == ref end)}
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
        {:noreply, refill(lend(%{state | waiting: waiting}, peer, caller, ref))}

      {:empty, _} when length(state.spares) < state.size ->
        {:noreply, %{state | spares: state.spares ++ [peer]}}

      {:empty, _} ->
        stop(peer)
        {:noreply, state}
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
        {:noreply, refill(%{state | waiting: waiting})}

      {:empty, _} ->
        {:noreply, state}
    end
  end

  # A caller died: waiting in line, it leaves the line; holding a peer,
  # the peer goes with it.
  def handle_info({:DOWN, monitor, :process, _caller, _reason}, state) do
    {:noreply,
     state
     |> drop_waiter(fn {_, _, m} -> m == monitor end)
     |> reclaim(fn {_, m, _} -> m == monitor end)}
  end

  # A booter that crashed, or a spare's controller that exited.
  def handle_info({:EXIT, pid, _reason}, state) do
    {:noreply, %{state | spares: Enum.reject(state.spares, &(elem(&1, 0) == pid))}}
  end

  def handle_info(_message, state), do: {:noreply, state}

  @impl true
  def terminate(_reason, state) do
    Enum.each(state.spares, &stop/1)
    Enum.each(state.lent, fn {node, {controller, _, _}} -> stop({controller, node}) end)
  end

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
      spawn(fn -> stop({controller, node}) end)
    end

    %{state | lent: Map.new(lent)}
  end

  # Boots what the waiting callers and the spares need: at most one boot
  # per waiting caller, or `size` boots when that is more.
  defp refill(%{used: true} = state) do
    waiting = :queue.len(state.waiting)
    wanted = waiting + max(state.size - length(state.spares), 0)
    in_flight = min(wanted, max(waiting, state.size))
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
  @spec boot() :: {:ok, peer()} | {:error, term()}
  def boot do
    name = :peer.random_name(~c"ex_bashkit_peer")

    options = %{
      name: name,
      args: args(),
      env: env(),
      wait_boot: @boot_timeout
    }

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

    [~c"-hidden", ~c"-connect_all", ~c"false", ~c"-pa" | paths]
  end

  # The host's environment stays out of the peer: API keys and the like.
  # Only what a VM needs to run is kept; run/2's :env adds to it.
  @kept ~w(PATH HOME LANG LC_ALL LC_CTYPE TMPDIR)
  defp env do
    for {name, _} <- System.get_env(), name not in @kept, do: {String.to_charlist(name), false}
  end
end
