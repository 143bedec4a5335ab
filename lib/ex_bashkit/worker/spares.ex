defmodule ExBashkit.Worker.Spares do
  @moduledoc false
  # Worker processes started ahead of need, so a new isolated session costs
  # building its interpreter (a millisecond), not a start of the worker and
  # its hardening. A spare is a Port to a worker that waits for its
  # session's options. Taking one hands the Port to the new session's
  # owner. Nothing is started until the first isolated session: a VM that
  # never isolates runs no worker.
  #
  # Two kinds are kept. A `:prepared` spare has hardened itself ahead for
  # what the default session needs (`{:prepare, options}`, see worker.rs),
  # so such a session costs only its interpreter's build; a session that
  # needs more (mounts, other memory limits, CPython) is refused by it
  # (`ExBashkit.Worker`) and takes a `:plain` spare, which has made its
  # namespaces and entered its cgroup only.
  #
  # `config :ex_bashkit, :worker_spares` sets how many of each kind are
  # kept (default 2; 0 for none).

  use GenServer

  alias ExBashkit.Worker.Port, as: WorkerPort

  @default_spares 2
  @kinds [:prepared, :plain]

  @doc """
  Starts the spares' keeper. `:prepare` gives the native options of the
  session prepared spares harden for (a function, called as each is
  started: the application's config may change them).
  """
  def start_link(opts), do: GenServer.start_link(__MODULE__, opts, name: __MODULE__)

  @doc """
  A spare of `kind` started with `args`, connected to the calling process,
  or `nil` when none is ready (then the caller starts its own).
  """
  @spec take(String.t(), [String.t()], :prepared | :plain) :: {port(), pos_integer()} | nil
  def take(executable, args, kind) when kind in @kinds do
    GenServer.call(__MODULE__, {:take, executable, args, kind})
  catch
    # Not running (the application is stopping): start one directly.
    :exit, _ -> nil
  end

  @impl true
  def init(opts) do
    prepare = Keyword.fetch!(opts, :prepare)
    {:ok, %{prepared: [], plain: [], executable: nil, args: nil, prepare: prepare}}
  end

  @impl true
  def handle_call({:take, executable, args, kind}, {caller, _}, state) do
    cond do
      {executable, args} == {state.executable, state.args} ->
        {spare, spares} = hand_over(Map.fetch!(state, kind), caller)
        {:reply, spare, Map.put(state, kind, spares), {:continue, :fill}}

      true ->
        # New arguments (the config changed): the old spares are let go.
        for kind <- @kinds, {port, _} <- Map.fetch!(state, kind), do: WorkerPort.close(port)
        state = %{state | executable: executable, args: args, prepared: [], plain: []}
        {:reply, nil, state, {:continue, :fill}}
    end
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
    if missing(state), do: send(self(), :start_one)
    {:noreply, state}
  end

  # The kind a spare is missing of, prepared ones first.
  defp missing(state) do
    wanted = Application.get_env(:ex_bashkit, :worker_spares, @default_spares)
    Enum.find(@kinds, &(length(Map.fetch!(state, &1)) < wanted))
  end

  @impl true
  def handle_info(:start_one, state) do
    case missing(state) do
      nil ->
        {:noreply, state}

      kind ->
        port = WorkerPort.open(state.executable, state.args)
        {:os_pid, os_pid} = Port.info(port, :os_pid)
        if kind == :prepared, do: prepare(port, state.prepare)
        spares = Map.fetch!(state, kind) ++ [{port, os_pid}]
        {:noreply, Map.put(state, kind, spares), {:continue, :fill}}
    end
  end

  # A spare that died (killed from outside) is replaced.
  def handle_info({port, {:exit_status, _}}, state) do
    state =
      Map.new(state, fn
        {kind, spares} when kind in @kinds -> {kind, Enum.reject(spares, &(elem(&1, 0) == port))}
        other -> other
      end)

    {:noreply, state, {:continue, :fill}}
  end

  def handle_info(_other, state), do: {:noreply, state}

  # Hardens a spare for the default session. A malformed config fails
  # every session's options too: the spare then waits unprepared, and a
  # session built in it hardens it as a plain one.
  defp prepare(port, default_native) do
    Port.command(
      port,
      ExBashkit.Worker.Protocol.frame(ExBashkit.Worker.Request.prepare(default_native.()))
    )
  rescue
    ArgumentError -> :ok
  end
end
