defmodule ExBashkit.Callbacks do
  @moduledoc false
  # Serves the `:builtins` and `:virtual_fs` calls of one `exec/2`.
  #
  # For the length of a script, a server process (trapping exits, monitoring
  # the caller) receives `{:ex_bashkit_call, pending, request}` from the NIF
  # and runs each call in a fresh linked process, so a raise, an exit, a
  # kill or a hang there fails only that command. Whichever comes first —
  # the runner's answer, its death, or the `:builtin_timeout_ms` timer —
  # answers the call; later answers are dropped by the NIF. When the script
  # ends or its caller dies, the server kills any runner still going and
  # waits for it, so nothing outlives `exec/2`.

  alias ExBashkit.{Execution, Native, Result, VirtualFs}

  defstruct builtins: %{}, virtual_fs: %{}, timeout: 30_000

  @type t :: %__MODULE__{
          builtins: %{String.t() => (map() -> term())},
          virtual_fs: %{String.t() => VirtualFs.backend()},
          timeout: pos_integer()
        }

  # The sessions whose callbacks this process is serving, innermost last.
  @serving {__MODULE__, :serving}

  @doc """
  Runs `fun` with a server for `table`'s callbacks; `fun` gets the server's
  pid. A call on a session this process is already serving a callback for
  (directly or through other sessions) would wait for itself: it is refused.
  """
  @spec serve(t(), non_neg_integer(), (pid() -> result)) :: result | {:error, String.t()}
        when result: term()
  def serve(%__MODULE__{} = table, session_id, fun) do
    chain = serving()

    if session_id in chain do
      {:error,
       "exec/2 was called on session #{session_id} from inside one of its own builtins or " <>
         "virtual_fs backends; that session is busy running the script waiting for this " <>
         "callback, so the call would deadlock"}
    else
      caller = self()
      chain = chain ++ [session_id]
      {server, monitor} = spawn_monitor(fn -> init(caller, table, chain) end)

      try do
        fun.(server)
      after
        send(server, :stop)

        receive do
          {:DOWN, ^monitor, :process, ^server, _} -> :ok
        end
      end
    end
  end

  # The sessions waiting on this process: its own mark, and that of the
  # processes that started it as a Task (`$callers`), so a Task spawned by a
  # builtin cannot deadlock on the builtin's session either.
  defp serving do
    inherited =
      for pid <- Process.get(:"$callers", []),
          {:dictionary, dictionary} <- [Process.info(pid, :dictionary)],
          {@serving, chain} <- [List.keyfind(dictionary, @serving, 0)],
          id <- chain,
          do: id

    Process.get(@serving, []) ++ inherited
  end

  defp init(caller, table, chain) do
    Process.flag(:trap_exit, true)
    caller_monitor = Process.monitor(caller)
    loop(%{table: table, chain: chain, caller: caller_monitor, calls: %{}})
  end

  defp loop(state), do: state |> handle(next_message(Execution.deadline())) |> continue()

  defp continue(:stop), do: :ok
  defp continue(state), do: loop(state)

  # Like Execution.await/2, stays runnable for a moment before blocking: the
  # next call of a busy script is usually microseconds away.
  defp next_message(deadline) do
    receive do
      message -> message
    after
      0 ->
        if System.monotonic_time() < deadline do
          :erlang.yield()
          next_message(deadline)
        else
          receive do
            message -> message
          end
        end
    end
  end

  defp handle(state, message) do
    case message do
      {:ex_bashkit_call, pending, request} ->
        %{table: table, chain: chain} = state
        runner = spawn_link(fn -> run(table, chain, pending, request) end)
        timer = Process.send_after(self(), {:timeout, runner}, table.timeout)
        put_in(state.calls[runner], {pending, request, timer})

      {:EXIT, runner, reason} ->
        state
        |> finish(runner, fn {pending, request, timer} ->
          Process.cancel_timer(timer)
          if reason != :normal, do: answer(pending, request, state.table, {:died, reason})
        end)

      {:timeout, runner} ->
        state
        |> finish(runner, fn {pending, request, _timer} ->
          Process.exit(runner, :kill)
          answer(pending, request, state.table, :timeout)
        end)

      {:DOWN, monitor, :process, _, _} when monitor == state.caller ->
        shutdown(state)

      :stop ->
        shutdown(state)

      _other ->
        state
    end
  end

  defp finish(state, runner, fun) do
    case Map.pop(state.calls, runner) do
      {nil, _} ->
        state

      {call, calls} ->
        fun.(call)
        %{state | calls: calls}
    end
  end

  defp shutdown(%{calls: calls}) do
    runners = Map.keys(calls)
    Enum.each(runners, &Process.exit(&1, :kill))

    for runner <- runners do
      receive do
        {:EXIT, ^runner, _} -> :ok
      end
    end

    :stop
  end

  defp run(table, chain, pending, request) do
    Process.put(@serving, chain)

    reply =
      try do
        request |> invoke(table) |> reply(request)
      catch
        kind, reason -> failure(request, table, {kind, reason, __STACKTRACE__})
      end

    Native.callback_reply(pending, reply)
  end

  defp answer(pending, request, table, why) do
    Native.callback_reply(pending, failure(request, table, why))
  end

  defp invoke({:builtin, name, args, stdin, env, cwd}, table) do
    table.builtins |> Map.fetch!(name) |> apply([%{args: args, stdin: stdin, env: env, cwd: cwd}])
  end

  defp invoke({:fs, mount, op, path, extra}, table) do
    VirtualFs.dispatch(Map.fetch!(table.virtual_fs, mount), VirtualFs.request(op, path, extra))
  end

  # What the NIF decodes; see native/ex_bashkit/src/callback.rs.

  defp reply({:ok, iodata} = value, {:builtin, name, _, _, _, _} = request) do
    case binary(iodata) do
      {:ok, stdout} -> {:output, stdout, "", 0}
      :error -> invalid(request, value, name)
    end
  end

  defp reply({:error, iodata} = value, {:builtin, name, _, _, _, _} = request) do
    case binary(iodata) do
      {:ok, stderr} -> {:output, "", stderr, 1}
      :error -> invalid(request, value, name)
    end
  end

  defp reply(%Result{stdout: out, stderr: err, exit_code: code}, {:builtin, _, _, _, _, _})
       when is_binary(out) and is_binary(err) and code in 0..255,
       do: {:output, out, err, code}

  defp reply(value, {:builtin, name, _, _, _, _} = request), do: invalid(request, value, name)

  defp reply(value, {:fs, _mount, op, _path, _extra} = request) do
    case VirtualFs.reply(op, value) do
      {:ok, reply} -> reply
      :error -> invalid(request, value, op)
    end
  end

  defp invalid({:builtin, name, _, _, _, _}, value, _) do
    {:output, "",
     "#{name}: the builtin returned #{inspect(value, limit: 8, printable_limit: 200)}; " <>
       "expected {:ok, iodata}, {:error, iodata} or %ExBashkit.Result{}\n", 1}
  end

  defp invalid({:fs, mount, _, _, _}, value, op) do
    {:error,
     "the virtual_fs backend at #{mount} answered #{op} with an invalid value: " <>
       inspect(value, limit: 8, printable_limit: 200)}
  end

  defp failure({:builtin, name, _, _, _, _}, table, why) do
    code = if why == :timeout, do: 124, else: 1
    {:output, "", "#{name}: #{describe(why, table)}\n", code}
  end

  defp failure({:fs, _mount, _op, _path, _extra}, _table, :timeout), do: {:error, :etimedout}

  defp failure({:fs, mount, _op, _path, _extra}, table, why),
    do: {:error, "the virtual_fs backend at #{mount} failed: #{describe(why, table)}"}

  defp describe(:timeout, table), do: "timed out after #{table.timeout} ms"
  defp describe({:died, reason}, _), do: "the callback process exited: #{short(reason)}"

  defp describe({:error, reason, stacktrace}, _) do
    exception = Exception.normalize(:error, reason, stacktrace)
    "raised #{inspect(exception.__struct__)}: #{Exception.message(exception)}"
  end

  defp describe({:exit, reason, _}, _), do: "exited: #{short(reason)}"
  defp describe({:throw, value, _}, _), do: "threw #{short(value)}"

  defp short(term), do: inspect(term, limit: 8, printable_limit: 200)

  defp binary(iodata) do
    {:ok, IO.iodata_to_binary(iodata)}
  rescue
    ArgumentError -> :error
  end
end
