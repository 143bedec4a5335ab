defmodule ExBashkit.Server.Runner do
  @moduledoc false
  # A server runs each operation on its session in a task of its own
  # (under ExBashkit.Server.TaskSupervisor, linked to the server), so that it
  # answers cancel/1 and reads while a script runs. The task's reply comes
  # to the server as `{ref, reply}`, as from any `Task`.

  alias ExBashkit.Session

  @doc """
  Starts `operation` with `args` on `session`; the reference its reply
  and its `:DOWN` carry. What the operation raises (a bad option) comes
  back as `{:raise, kind, reason, stacktrace}`, to be raised in the
  caller.
  """
  @spec start(Session.t(), atom(), list()) :: reference()
  def start(session, operation, args) do
    task =
      Task.Supervisor.async(ExBashkit.Server.TaskSupervisor, fn ->
        try do
          apply(Session, operation, [session | listen_here(operation, args)])
        catch
          kind, reason -> {:raise, kind, reason, __STACKTRACE__}
        end
      end)

    task.ref
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

    {:ok, relay} =
      Task.Supervisor.start_child(ExBashkit.Server.TaskSupervisor, fn ->
        forward(listener, Process.monitor(runner))
      end)

    relay
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
end
