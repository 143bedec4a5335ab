defmodule ExBashkit.Peer.Pool do
  @moduledoc false
  # Boots, hands out and stops the peer nodes of ExBashkit.Peer.
  #
  # Booting a VM takes hundreds of milliseconds, so the pool keeps a few
  # spare nodes already booted (`config :ex_bashkit, peer_pool_size: 2`;
  # 0 turns it off). Each node serves exactly one run: `checkout/0` hands a
  # spare to the caller (or boots one when none is ready) and the pool boots
  # a replacement in the background. Spares are only booted once `run/2` has
  # been used, and never more than the configured number at a time.
  #
  # The pool watches every node it handed out: when the caller dies before
  # `release/1`, the pool stops the node. A node also halts by itself when
  # the host VM goes away (see ExBashkit.Peer.Evaluator.boot/1).

  use GenServer

  @boot_timeout 30_000

  @typedoc "A booted peer: its controlling process and its node name."
  @type peer :: {pid(), node()}

  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(_opts), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc "A fresh, never used peer for the calling process."
  @spec checkout() :: {:ok, peer()} | {:error, term()}
  def checkout do
    case GenServer.call(__MODULE__, :checkout, @boot_timeout) do
      {:ok, peer} ->
        {:ok, peer}

      :empty ->
        # Cold path: boot one here, then have the pool watch it like a spare.
        with {:ok, peer} <- boot() do
          :ok = GenServer.call(__MODULE__, {:lend, peer})
          {:ok, peer}
        end
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
    {:ok, %{size: size, spares: [], booting: 0, used: false, lent: %{}}}
  end

  @impl true
  def handle_call(:checkout, {caller, _}, state) do
    state = %{state | used: true}

    case state.spares do
      [peer | spares] ->
        state = lend(%{state | spares: spares}, peer, caller)
        {:reply, {:ok, peer}, refill(state)}

      [] ->
        {:reply, :empty, refill(state)}
    end
  end

  def handle_call({:lend, {controller, _} = peer}, {caller, _}, state) do
    Process.link(controller)
    {:reply, :ok, lend(state, peer, caller)}
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
      {{_controller, monitor}, lent} ->
        Process.demonitor(monitor, [:flush])
        {:noreply, %{state | lent: lent}}

      {nil, _} ->
        {:noreply, state}
    end
  end

  @impl true
  def handle_info({:booted, {:ok, {controller, _} = peer}}, state) do
    state = %{state | booting: state.booting - 1}
    Process.link(controller)

    if length(state.spares) < state.size do
      {:noreply, %{state | spares: state.spares ++ [peer]}}
    else
      stop(peer)
      {:noreply, state}
    end
  end

  def handle_info({:booted, {:error, _reason}}, state) do
    {:noreply, %{state | booting: state.booting - 1}}
  end

  # A caller died holding a peer: the peer goes with it.
  def handle_info({:DOWN, monitor, :process, _caller, _reason}, state) do
    case Enum.find(state.lent, fn {_node, {_, m}} -> m == monitor end) do
      {node, {controller, _}} ->
        spawn(fn -> stop({controller, node}) end)
        {:noreply, %{state | lent: Map.delete(state.lent, node)}}

      nil ->
        {:noreply, state}
    end
  end

  # A spare's controller exited: the node is gone.
  def handle_info({:EXIT, controller, _reason}, state) do
    {:noreply, %{state | spares: Enum.reject(state.spares, &(elem(&1, 0) == controller))}}
  end

  def handle_info(_message, state), do: {:noreply, state}

  @impl true
  def terminate(_reason, state) do
    Enum.each(state.spares, &stop/1)
    Enum.each(state.lent, fn {node, {controller, _}} -> stop({controller, node}) end)
  end

  defp lend(state, {controller, node}, caller) do
    monitor = Process.monitor(caller)
    %{state | lent: Map.put(state.lent, node, {controller, monitor})}
  end

  defp refill(%{used: true} = state) do
    missing = max(state.size - length(state.spares) - state.booting, 0)
    pool = self()

    for _ <- 1..missing//1 do
      spawn(fn -> send(pool, {:booted, boot()}) end)
    end

    %{state | booting: state.booting + missing}
  end

  defp refill(state), do: state

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
