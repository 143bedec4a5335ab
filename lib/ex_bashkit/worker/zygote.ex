defmodule ExBashkit.Worker.Zygote do
  @moduledoc false
  # The zygote (native/ex_bashkit/crates/worker/src/zygote.rs): a worker process loaded
  # once, which forks the workers of `isolation: :process` sessions. A
  # worker's Port is then the small launcher `ex_bashkit_worker_stub`, which
  # hands its pipes to the zygote, rather than an exec of the 80 MB worker
  # executable: a fresh worker costs a fork.
  #
  # Started with the first isolated session, restarted when it dies (its
  # workers die with it). Without it (not started yet, gone, no launcher
  # installed, or `config :ex_bashkit, :worker_zygote, false`), workers are
  # started by exec, as the launcher itself does when no zygote answers.

  use GenServer

  alias ExBashkit.Worker.Port, as: WorkerPort

  @launcher "ex_bashkit_worker_stub"
  # How long a caller waits for a new zygote before starting its worker by
  # exec instead.
  @ready_deadline_ms 5_000

  @doc false
  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc """
  How to start a worker of `executable` with `args`: through the zygote
  forking from `executable`, or by exec of it.
  """
  @spec launch(String.t(), [String.t()]) :: {String.t(), [String.t()]}
  def launch(executable, args) do
    with true <- Application.get_env(:ex_bashkit, :worker_zygote, true),
         {launcher, name} <- ready(executable) do
      {launcher, ["--zygote=" <> name, "--worker=" <> executable | args]}
    else
      _ -> {executable, args}
    end
  end

  # The launcher and the socket name of a zygote of `executable` that is
  # ready, or nil.
  defp ready(executable) do
    GenServer.call(__MODULE__, {:ready, executable}, @ready_deadline_ms * 2)
  catch
    # Not running (the application is stopping).
    :exit, _ -> nil
  end

  @impl true
  def init(nil) do
    launcher = Path.join(:code.priv_dir(:ex_bashkit), "native/" <> @launcher)
    # One zygote per worker executable: a zygote ends with its workers, so
    # a changed `:worker_executable` leaves the live ones alone.
    {:ok, %{launcher: launcher, zygotes: %{}}}
  end

  @impl true
  def handle_call({:ready, executable}, from, state) do
    case state.zygotes do
      %{^executable => %{ready: true, name: name}} ->
        {:reply, {state.launcher, name}, state}

      %{^executable => zygote} ->
        {:noreply,
         put_in(state.zygotes[executable], %{zygote | waiting: [from | zygote.waiting]})}

      %{} ->
        start_zygote(executable, from, state)
    end
  end

  # An installation without the launcher (an older precompiled artifact)
  # starts every worker by exec.
  defp start_zygote(executable, from, state) do
    if File.regular?(executable) and File.regular?(state.launcher) do
      name = "ex_bashkit_zygote_#{System.pid()}_#{Base.encode16(:crypto.strong_rand_bytes(8))}"
      port = WorkerPort.open(executable, ["--zygote=" <> name])
      Process.send_after(self(), {:ready_deadline, port}, @ready_deadline_ms)
      zygote = %{port: port, name: name, ready: false, waiting: [from]}
      {:noreply, put_in(state.zygotes[executable], zygote)}
    else
      {:reply, nil, state}
    end
  end

  @impl true
  # The zygote's one frame: its socket is bound.
  def handle_info({port, {:data, _ready}}, state) do
    case of_port(state, port) do
      {executable, zygote} ->
        for from <- zygote.waiting, do: GenServer.reply(from, {state.launcher, zygote.name})
        ready = %{zygote | ready: true, waiting: []}
        {:noreply, put_in(state.zygotes[executable], ready)}

      nil ->
        {:noreply, state}
    end
  end

  def handle_info({port, {:exit_status, _}}, state), do: {:noreply, forget(state, port)}

  def handle_info({:ready_deadline, port}, state) do
    case of_port(state, port) do
      {_executable, %{ready: false}} -> {:noreply, forget(state, port)}
      _ -> {:noreply, state}
    end
  end

  def handle_info(_other, state), do: {:noreply, state}

  defp of_port(state, port),
    do: Enum.find(state.zygotes, fn {_, zygote} -> zygote.port == port end)

  # A zygote gone (or never ready): callers waiting for it start their
  # workers by exec, and the next one starts a new zygote.
  defp forget(state, port) do
    case of_port(state, port) do
      {executable, zygote} ->
        WorkerPort.close(port)
        for from <- zygote.waiting, do: GenServer.reply(from, nil)
        %{state | zygotes: Map.delete(state.zygotes, executable)}

      nil ->
        state
    end
  end
end
