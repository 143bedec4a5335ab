defmodule ExBashkit.Worker.Spares do
  @moduledoc false
  # Worker processes started ahead of need, so a new isolated session costs
  # building its interpreter (a millisecond), not a start of the worker and
  # its hardening. A spare is a Port to a worker that waits for its
  # session's options, hardened ahead for what the default session needs
  # (`{:prepare, options}`, see worker.rs): a session that needs more
  # (mounts, the network, other limits) gets a worker of its own instead
  # (`ExBashkit.Worker`). Taking one hands the Port to the new session's
  # owner. Nothing is started until the first isolated session: a VM that
  # never isolates runs no worker.
  #
  # `config :ex_bashkit, :worker_spares` sets how many are kept (default 2;
  # 0 for none).

  use GenServer

  @default_spares 2

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc """
  A spare started with `args`, connected to the calling process, or `nil`
  when none is ready (then the caller starts its own). Spares are kept for
  the arguments of sessions without the network, the common case (a
  worker's namespaces are made as it starts, see `ExBashkit.Worker.Hardening`).
  """
  @spec take(String.t(), [String.t()]) :: {port(), pos_integer()} | nil
  def take(executable, args) do
    GenServer.call(__MODULE__, {:take, executable, args})
  catch
    # Not running (the application is stopping): start one directly.
    :exit, _ -> nil
  end

  @doc "Starts a worker from `executable` with `args`, owned by the calling process."
  @spec open(String.t(), [String.t()]) :: port()
  def open(executable, args) do
    Port.open({:spawn_executable, executable}, [
      :binary,
      {:args, args},
      {:packet, 4},
      :exit_status,
      :use_stdio,
      # mimalloc commits its arenas lazily: an idle worker keeps ~2.5 MB
      # private instead of ~10 MB.
      env: [{~c"MIMALLOC_ARENA_EAGER_COMMIT", ~c"0"}]
    ])
  end

  @impl true
  def init(nil), do: {:ok, %{spares: [], executable: nil, args: nil}}

  @impl true
  def handle_call({:take, executable, args}, {caller, _}, state) do
    cond do
      not ExBashkit.Worker.Hardening.spare_args?(args) ->
        {:reply, nil, state}

      {executable, args} == {state.executable, state.args} ->
        {spare, spares} = hand_over(state.spares, caller)
        {:reply, spare, %{state | spares: spares}, {:continue, :fill}}

      true ->
        # New arguments (the config changed): the old spares are let go.
        Enum.each(state.spares, fn {port, _} -> close(port) end)
        state = %{state | executable: executable, args: args, spares: []}
        {:reply, nil, state, {:continue, :fill}}
    end
  end

  @doc false
  # Closes a worker's Port, which a worker that just died (SIGKILLed, or
  # exited on its own) may have closed already.
  @spec close(port()) :: :ok
  def close(port) do
    Port.close(port)
    :ok
  rescue
    ArgumentError -> :ok
  end

  # The first spare still alive, connected to `caller`; one that died (its
  # exit not yet seen here) is passed over.
  defp hand_over([], _caller), do: {nil, []}

  defp hand_over([{port, os_pid} | rest], caller) do
    Port.connect(port, caller)
    Process.unlink(port)
    {{port, os_pid}, rest}
  rescue
    ArgumentError -> hand_over(rest, caller)
  end

  # One spare at a time, between other messages: a `take` waits for one
  # process start at most.
  @impl true
  def handle_continue(:fill, state) do
    if missing?(state), do: send(self(), :start_one)
    {:noreply, state}
  end

  defp missing?(state),
    do: length(state.spares) < Application.get_env(:ex_bashkit, :worker_spares, @default_spares)

  @impl true
  def handle_info(:start_one, state) do
    if missing?(state) do
      port = open(state.executable, state.args)
      {:os_pid, os_pid} = Port.info(port, :os_pid)
      if frame = prepare_frame(), do: Port.command(port, frame)
      {:noreply, %{state | spares: state.spares ++ [{port, os_pid}]}, {:continue, :fill}}
    else
      {:noreply, state}
    end
  end

  # A spare that died (killed from outside) is replaced.
  def handle_info({port, {:exit_status, _}}, state) do
    spares = Enum.reject(state.spares, fn {spare, _} -> spare == port end)
    {:noreply, %{state | spares: spares}, {:continue, :fill}}
  end

  def handle_info(_other, state), do: {:noreply, state}

  # The frame that hardens a spare for the default session (whose limits
  # the application's config may change).
  defp prepare_frame do
    %{native: native} = ExBashkit.Session.Options.validate!(isolation: :process)
    :erlang.term_to_binary({:prepare, native})
  rescue
    # A malformed config fails every session's options too: the spare
    # waits unprepared, as if it were started by its session.
    ArgumentError -> nil
  end
end
