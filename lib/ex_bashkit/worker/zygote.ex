defmodule ExBashkit.Worker.Zygote do
  @moduledoc false
  # The zygote (native/ex_bashkit/src/zygote.rs): a worker process loaded
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

  alias ExBashkit.Worker.Spares

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
    {:ok, %{launcher: launcher, port: nil, executable: nil, name: nil, ready: false, waiting: []}}
  end

  @impl true
  def handle_call({:ready, executable}, _from, %{executable: executable, ready: true} = state),
    do: {:reply, {state.launcher, state.name}, state}

  def handle_call({:ready, executable}, from, %{executable: executable} = state),
    do: {:noreply, %{state | waiting: [from | state.waiting]}}

  def handle_call({:ready, executable}, from, state) do
    state = stop_zygote(state)

    # An installation without the launcher (an older precompiled artifact)
    # starts every worker by exec.
    if File.regular?(executable) and File.regular?(state.launcher) do
      name = "ex_bashkit_zygote_#{System.pid()}_#{Base.encode16(:crypto.strong_rand_bytes(8))}"
      port = Spares.open(executable, ["--zygote=" <> name])
      Process.send_after(self(), {:ready_deadline, port}, @ready_deadline_ms)

      {:noreply,
       %{state | port: port, executable: executable, name: name, ready: false, waiting: [from]}}
    else
      {:reply, nil, state}
    end
  end

  @impl true
  # The zygote's one frame: its socket is bound.
  def handle_info({port, {:data, _ready}}, %{port: port} = state) do
    for from <- state.waiting, do: GenServer.reply(from, {state.launcher, state.name})
    {:noreply, %{state | ready: true, waiting: []}}
  end

  def handle_info({port, {:exit_status, _}}, %{port: port} = state),
    do: {:noreply, stop_zygote(state)}

  def handle_info({:ready_deadline, port}, %{port: port, ready: false} = state),
    do: {:noreply, stop_zygote(state)}

  def handle_info(_other, state), do: {:noreply, state}

  # Callers waiting for it start their workers by exec.
  defp stop_zygote(state) do
    if state.port, do: Spares.close(state.port)
    for from <- state.waiting, do: GenServer.reply(from, nil)
    %{state | port: nil, executable: nil, name: nil, ready: false, waiting: []}
  end
end
