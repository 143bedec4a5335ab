defmodule ExBashkit.Worker.Owner.Start do
  @moduledoc false
  # How an owner gets its worker: a spare's Port when one waits (hardened
  # ahead for the default session's needs), else a new one; and, when the
  # worker answers `{:new, …}`, whether the layers it reports in force are
  # the ones its plan asked for.

  alias ExBashkit.Worker.{Hardening, Protocol, Request, Spares}
  alias ExBashkit.Worker.Port, as: WorkerPort

  @doc """
  A worker's Port and OS pid: a spare `kind` (`:prepared` or `:plain`) if
  one waits, else a new process; sent `{:new, native}` at once.
  """
  def open(executable, args, kind, native) do
    {port, os_pid} =
      case Spares.take(executable, args, kind) do
        nil ->
          port = WorkerPort.open(executable, args)
          {:os_pid, os_pid} = Port.info(port, :os_pid)
          {port, os_pid}

        {port, os_pid} ->
          # A spare's Port was opened by ExBashkit.Worker.Spares: it must
          # close when this owner goes, as one it opened would.
          Process.link(port)
          {port, os_pid}
      end

    Port.command(port, Protocol.frame(Request.new(native)))
    {port, os_pid}
  end

  @doc """
  The worker built its session: `{:ok, state}` ready, its waiting callers
  answered, or `{:error, message}` when its layers are not the plan's.
  """
  def ready(state, {report, cgroups, os_pid}, waiting, timer) do
    state = %{state | cgroups: cgroups, os_pid: os_pid}

    case Hardening.check(report, state.plan) do
      {:ok, layers} ->
        Process.cancel_timer(timer)
        for from <- waiting, do: GenServer.reply(from, {:ok, state.os_pid})
        {:ok, %{state | status: :ready, layers: layers, start: nil}}

      {:error, message} ->
        {:error, state, message}
    end
  end

  @doc """
  The spare was hardened ahead for the default session's needs (no
  mounts, no network, the default limits), which are not this session's:
  a plain spare, or a new process, hardens itself for them.
  """
  def unfit(state) do
    {executable, args, native} = state.start
    WorkerPort.close(state.port)
    {port, os_pid} = open(executable, args, :plain, native)
    %{state | port: port, port_pid: os_pid, os_pid: os_pid, inbox: Protocol.inbox()}
  end
end
