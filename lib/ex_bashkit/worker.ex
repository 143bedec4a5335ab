defmodule ExBashkit.Worker do
  @moduledoc false
  # One `isolation: :process` session: the OS process that holds its
  # interpreter (native/ex_bashkit/crates/worker/src/serve.rs, started as a Port) and its
  # owner, an `ExBashkit.Worker.Owner` under `ExBashkit.Worker.Supervisor`,
  # which kills the worker (SIGKILL) when a script outlives its deadline, is
  # frozen over its memory cap, its caller dies mid-script, or the session
  # is dropped: whatever the script held goes back to the kernel with the
  # process. This module is the handle a session holds and the calls on it.
  #
  # It is the worker's `ExBashkit.Interpreter.Backend`: `ExBashkit.Interpreter`
  # gives the rest of the library the same calls for a worker as for an
  # in-VM session resource.

  @behaviour ExBashkit.Interpreter.Backend

  alias ExBashkit.Native
  alias ExBashkit.Worker.{Handle, Hardening, Owner}

  defstruct [:pid, :guard, :os_pid, :id]

  @typedoc "A worker session, as `%ExBashkit.Session{resource: ...}` holds it."
  @type t :: %__MODULE__{
          pid: pid(),
          guard: reference(),
          os_pid: pos_integer(),
          id: pos_integer()
        }

  @doc """
  Starts a worker holding a session built from `native` (an
  `%ExBashkit.Session.Options{}`), under `ExBashkit.Worker.Supervisor`.
  """
  @spec start(struct()) :: {:ok, t()} | {:error, String.t()}
  def start(native) do
    plan = Hardening.plan(native)

    with {:ok, executable} <- executable(),
         {:ok, pid} <-
           DynamicSupervisor.start_child(
             ExBashkit.Worker.Supervisor,
             {Owner, {executable, plan, native}}
           ),
         {:ok, os_pid} <- ready(pid) do
      id = System.unique_integer([:positive, :monotonic])
      {:ok, %__MODULE__{pid: pid, guard: Native.worker_guard(pid), os_pid: os_pid, id: id}}
    else
      {:error, message} when is_binary(message) -> {:error, message}
      {:error, reason} -> {:error, "cannot start the worker process: #{inspect(reason)}"}
    end
  end

  # A worker that could not build its session leaves no owner behind.
  defp ready(pid) do
    with {:error, _} = error <- call(pid, :ready) do
      GenServer.cast(pid, :stop)
      error
    end
  end

  @doc """
  The worker executable: the one built beside the NIF library, or
  `config :ex_bashkit, :worker_executable`.
  """
  @spec executable() :: {:ok, String.t()} | {:error, String.t()}
  def executable do
    path =
      Application.get_env(:ex_bashkit, :worker_executable) ||
        Path.join(:code.priv_dir(:ex_bashkit), "native/ex_bashkit_worker")

    if File.regular?(path),
      do: {:ok, path},
      else:
        {:error,
         "isolation: :process needs the worker executable #{path}, which this installation " <>
           "lacks (it is installed with the NIF library, built or downloaded; see the README's " <>
           "\"Installing\")"}
  end

  # ---- calls, as ExBashkit.Interpreter makes them ----------------------------
  #
  # The owner is never handed the session's guard: a guard on its heap would
  # keep the worker alive after its session was dropped, until the owner's
  # next garbage collection. The caller keeps it referenced until each call
  # is answered instead: `call/2` for the calls answered at once, and a
  # job's handle, which carries the guard, for those `ExBashkit.Caller`
  # awaits (see `keep/1`).

  @impl true
  def id(%__MODULE__{id: id}), do: id

  @impl true
  def call_of?(%Handle{owner: pid}, %__MODULE__{pid: pid}), do: true
  def call_of?(_pending, _worker), do: false

  @impl true
  def exec(worker, script, caller, tag, callbacks_to, call),
    do: job(worker, {:exec, script, caller, tag, callbacks_to, call})

  @impl true
  def run_code(worker, {language, input, allow}, caller, tag, callbacks_to, call),
    do: job(worker, {:exec, {:run_code, language, input, allow}, caller, tag, callbacks_to, call})

  @impl true
  def snapshot(worker, options, key, caller, tag) do
    args = [options.exclude_filesystem, options.exclude_functions, key]
    job(worker, {:job, :snapshot, args, caller, tag})
  end

  @impl true
  def restore(worker, snapshot, key, caller, tag),
    do: job(worker, {:job, :restore, [snapshot, key], caller, tag})

  # A job's handle carries the session's guard to the caller that awaits it.
  defp job(%__MODULE__{guard: guard} = worker, request) do
    case call(worker, request) do
      {:ok, %Handle{} = handle} -> {:ok, %{handle | guard: guard}}
      error -> error
    end
  end

  # A worker's files live in its own process: its forks are new workers
  # with its options, given a snapshot of it (`ExBashkit.Session.fork/2`).
  @impl true
  def fork(worker, _count) do
    with {:ok, native} <- call(worker, :native), do: {:copy, native}
  end

  @impl true
  def checkpoint(_worker, _operation), do: {:error, no_checkpoints()}

  @impl true
  def checkpoints(_worker), do: {:error, no_checkpoints()}

  defp no_checkpoints,
    do:
      "checkpoints are kept by sessions in this VM (isolation: :none); " <>
        "an isolated session snapshots instead (ExBashkit.Session.snapshot/2)"

  @impl true
  def file(worker, op, args), do: call(worker, {:fs, op, args})

  @impl true
  def cancel(worker) do
    case call(worker, :cancel) do
      {:ok, cancelled} -> cancelled
      {:error, _} -> false
    end
  end

  @impl true
  def stats(worker), do: call(worker, :stats)

  @impl true
  def abandon(%Handle{owner: pid, id: id}) do
    case call(pid, {:abandon, id}) do
      # Its owner crashed: the worker went with it (its Port was linked),
      # and nothing will answer the job.
      {:error, _} -> {:killed, {"", ""}}
      whereabouts -> whereabouts
    end
  end

  @impl true
  def callback_server(worker, server), do: call(worker, {:callback_server, self(), server})

  @impl true
  def callbacks_done(worker, server), do: call(worker, {:callbacks_done, self(), server})

  @impl true
  def callback_reply(%Handle{owner: pid, id: id}, reply) do
    send(pid, {:callback_reply, id, reply})
    true
  end

  # A worker ends one way: its session's guard tells the owner, which
  # kills it and stops. The guard tells it when it is collected (the
  # session dropped, or the process holding it dead); close/1 has it tell
  # now, and waits for the owner to be gone.
  @impl true
  def close(%__MODULE__{pid: pid, guard: guard}) do
    monitor = Process.monitor(pid)

    if Native.worker_guard_close(guard) do
      receive do
        {:DOWN, ^monitor, :process, _, _} -> :ok
      end
    else
      Process.demonitor(monitor, [:flush])
      :ok
    end
  end

  @impl true
  def info(worker) do
    %{os_pid: os_pid, layers: layers} = status(worker)
    %{isolation: :process, os_pid: os_pid, layers: layers}
  end

  @impl true
  def describe(%__MODULE__{os_pid: os_pid}), do: "in process #{os_pid}"

  @impl true
  # How long past its :timeout_ms a caller waits for a job that has not
  # stopped by itself: a worker's is killed, which ends it exactly (the
  # owner counts the margin from when the job started). The caller yields
  # while it waits (the answer crosses a pipe).
  def wait_policy(_handle), do: %{margin_ms: Owner.deadline_margin_ms(), yield?: true}

  # An owner answers every job it holds, also when it kills the worker; one
  # that crashed answers nothing.
  @impl true
  def answerer(%Handle{owner: owner}), do: owner

  # Whether the worker lives, its OS pid and hardening layers.
  defp status(worker) do
    case call(worker, :info) do
      {:error, _} -> %{os_pid: nil, alive: false, layers: []}
      info -> info
    end
  end

  @doc """
  The live workers: how many, and the memory they hold (resident bytes, as
  the kernel counts them; shared pages are counted in each).
  """
  @spec stats() :: %{count: non_neg_integer(), rss_bytes: non_neg_integer()}
  def stats do
    os_pids =
      for {_, pid, _, _} <- DynamicSupervisor.which_children(ExBashkit.Worker.Supervisor),
          is_pid(pid),
          %{os_pid: os_pid} when is_integer(os_pid) <- [status(%__MODULE__{pid: pid})],
          do: os_pid

    %{count: length(os_pids), rss_bytes: os_pids |> Enum.map(&resident_bytes/1) |> Enum.sum()}
  end

  # Linux's /proc (VmRSS, in kB); elsewhere 0.
  defp resident_bytes(os_pid) do
    with {:ok, status} <- File.read("/proc/#{os_pid}/status"),
         [_, kb] <- Regex.run(~r/^VmRSS:\s+(\d+) kB/m, status) do
      String.to_integer(kb) * 1024
    else
      _ -> 0
    end
  end

  @doc """
  Keeps a worker session, or a job's handle (which carries its guard),
  referenced by the calling process until here: called once the call is
  answered, so that the session cannot be garbage collected while it waits
  however the caller's code is compiled. A worker ends when its session is
  collected, and its owner holds no reference to it.
  """
  @impl true
  @spec keep(t() | Handle.t()) :: :ok
  def keep(_worker_or_handle), do: :ok

  defp call(%__MODULE__{pid: pid} = worker, request) do
    answer = call(pid, request)
    keep(worker)
    answer
  end

  # An owner that is gone answers as a dead worker does.
  defp call(pid, request) when is_pid(pid) do
    GenServer.call(pid, request, :infinity)
  catch
    :exit, _ -> {:error, Owner.gone("the session was closed, or its owner process is gone")}
  end
end
