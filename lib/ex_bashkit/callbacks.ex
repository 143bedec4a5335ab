defmodule ExBashkit.Callbacks do
  @moduledoc false
  # Serves the `:builtins` and `:virtual_fs` calls of one `exec/2`.
  #
  # The NIF sends each call as `{:ex_bashkit_call, pending, target, request}`
  # — `target` is `{:builtin, name}` or `{:fs, mount}`, `request` the very
  # map the builtin's function or the backend gets (native/ex_bashkit/src/
  # callback.rs builds both). The first call of a script goes to the caller,
  # waiting for the script; it starts a server process (under
  # `ExBashkit.Callbacks.Supervisor`, monitoring the caller), hands the call
  # over and points the script's later calls at the server, so a script that
  # calls nothing costs no process. The server runs each call in a fresh
  # process, linked (so it dies with the server) and monitored (so its end
  # is attributed by an unguessable reference).
  # Whichever comes first — the runner's answer, its end for any reason, or
  # the `:builtin_timeout_ms` timer — answers the call; the NIF keeps the
  # first answer and drops the rest. The server acts only on messages it can
  # attribute: forged `:EXIT`, `:DOWN`, timer or stop messages are ignored.
  # When the script ends or its caller dies, the server kills any runner
  # still going and waits for it, so nothing outlives `exec/2`.
  #
  # Every reply crossing into the interpreter is bounded by
  # `config :ex_bashkit, :max_reply_bytes`; error text is truncated to it.

  alias ExBashkit.{Builtin, Caller, Interpreter, Result, Telemetry, VirtualFs}
  alias ExBashkit.Callbacks.Chains
  alias ExBashkit.Callbacks.Supervisor, as: Servers

  defstruct builtins: %{}, virtual_fs: %{}, policy: nil, timeout: 30_000, max_reply: nil

  @type t :: %__MODULE__{
          builtins: %{String.t() => Builtin.t()},
          virtual_fs: %{String.t() => VirtualFs.backend()},
          policy: (map() -> :ok | {:deny, String.t()}) | nil,
          timeout: pos_integer(),
          max_reply: pos_integer() | nil
        }

  @default_max_reply_bytes 16_000_000

  # erlang:send_after/3's ceiling; a longer :builtin_timeout_ms means no timer.
  @max_timer_ms 0xFFFF_FFFF

  @doc """
  The cap on one callback reply: `config :ex_bashkit, :max_reply_bytes`, or
  the default when it is unset, `nil` or malformed (it fails closed).
  """
  @spec max_reply_bytes() :: pos_integer()
  def max_reply_bytes do
    case Application.get_env(:ex_bashkit, :max_reply_bytes) do
      bytes when is_integer(bytes) and bytes > 0 -> bytes
      _unset_or_malformed -> @default_max_reply_bytes
    end
  end

  @doc """
  Runs `fun` with callbacks served for `table`. The script sends its first
  call to this process (the caller, waiting for the script): `fun` gets a
  function to hand such calls to, which starts the server on the first
  one and points the session's later calls at it, so a script that calls
  nothing costs no process. A call on a session (named by its resource,
  which compares equal to itself only) this process is already serving a
  callback for (directly or through other sessions) would wait for itself:
  it is refused.
  """
  @spec serve(t(), Interpreter.t(), ((tuple() -> term()) -> result)) ::
          result | {:error, ExBashkit.Error.t()}
        when result: term()
  def serve(%__MODULE__{} = table, session, fun) do
    chain = serving()

    if session in chain do
      {:error,
       %ExBashkit.Error{
         reason: :busy,
         message:
           "exec/2 was called on session #{Interpreter.id(session)} from inside one of its " <>
             "own builtins or virtual_fs backends; that session is busy running the script " <>
             "waiting for this callback, so the call would deadlock"
       }}
    else
      key = {__MODULE__, make_ref()}
      chain = chain ++ [session]
      forward = fn call -> send(server!(key, table, chain, session), call) end

      try do
        fun.(forward)
      after
        stop(key, session)
      end
    end
  end

  # The server for the call in progress (under `key` in this process),
  # started on first use.
  defp server!(key, table, chain, session) do
    case Process.get(key) do
      {server, _monitor, _stop} ->
        server

      nil ->
        caller = self()
        stop = make_ref()
        table = %{table | max_reply: max_reply_bytes()}

        {:ok, server} =
          Task.Supervisor.start_child(Servers.for_caller(caller), fn ->
            init(caller, stop, table, chain)
          end)

        monitor = Process.monitor(server)
        Interpreter.callback_server(session, server)
        Process.put(key, {server, monitor, stop})
        server
    end
  end

  # A script the caller stopped waiting for may still run and call back:
  # its calls are cut off first, and any that reached the caller dropped,
  # so none lingers in the caller's mailbox.
  defp stop(key, session) do
    started = Process.delete(key)
    done(session, started && elem(started, 0))
    flush_calls()

    with {server, monitor, stop} <- started do
      send(server, {:stop, stop})

      receive do
        {:DOWN, ^monitor, :process, ^server, _} -> :ok
      end
    end
  end

  defp done(session, server) do
    Interpreter.callbacks_done(session, server)
  rescue
    # A hand-built struct whose resource is no session: its exec already
    # failed with an ArgumentError that says so, which must not be replaced.
    ArgumentError -> :ok
  end

  defp flush_calls do
    receive do
      {:ex_bashkit_call, _, _, _} -> flush_calls()
      # A call answered after its script went on without this process.
      {:ex_bashkit_resumable, _} -> flush_calls()
    after
      0 -> :ok
    end
  end

  # The sessions waiting on this process: those of the callback it runs, and
  # of the processes that started it as a Task (`$callers`), so a Task
  # spawned by a builtin cannot deadlock on the builtin's session either.
  defp serving, do: Chains.of([self() | Process.get(:"$callers", [])])

  @doc "The children that serve callbacks: the chains' table and the servers' supervisors."
  @spec child_specs() :: [module()]
  def child_specs, do: [Chains, Servers]

  defp init(caller, stop, table, chain) do
    Process.flag(:trap_exit, true)
    caller_monitor = Process.monitor(caller)
    loop(%{table: table, chain: chain, caller: caller_monitor, stop: stop, calls: %{}})
  end

  defp loop(state), do: state |> handle(next_message(Caller.deadline())) |> continue()

  defp continue(:stop), do: :ok
  defp continue(state), do: loop(state)

  # Like Caller.await/2, stays runnable for a moment before blocking: the
  # next call of a busy script is usually microseconds away.
  defp next_message(deadline) do
    receive do
      message -> message
    after
      0 ->
        if Caller.spin?(deadline) do
          :erlang.yield()
          next_message(deadline)
        else
          receive do
            message -> message
          end
        end
    end
  end

  defp handle(%{calls: calls, stop: stop, caller: caller} = state, message) do
    case message do
      {:ex_bashkit_call, pending, target, request} ->
        if Interpreter.call_of?(pending, List.last(state.chain)),
          do: start(state, pending, {target, request}),
          else: state

      {:DOWN, ref, :process, _, reason} when is_map_key(calls, ref) ->
        {{runner, pending, request, timer}, calls} = Map.pop(calls, ref)
        Chains.delete(runner)
        cancel(timer)
        # A runner that answered has had its answer kept; one that ended
        # any other way (even with reason :normal) is answered here.
        answer(pending, request, state.table, {:died, reason})
        %{state | calls: calls}

      {:timeout, ref} when is_map_key(calls, ref) ->
        {{runner, pending, request, _timer}, calls} = Map.pop(calls, ref)
        answer(pending, request, state.table, :timeout)
        stop_runner(runner, ref)
        %{state | calls: calls}

      {:DOWN, ^caller, :process, _, _} ->
        shutdown(state)

      {:stop, ^stop} ->
        shutdown(state)

      _unattributed ->
        state
    end
  end

  defp start(%{table: table, chain: chain} = state, pending, request) do
    if known?(table, request) do
      {runner, ref} =
        :erlang.spawn_opt(fn -> run(table, chain, pending, request) end, [:link, :monitor])

      timer =
        if table.timeout <= @max_timer_ms,
          do: Process.send_after(self(), {:timeout, ref}, table.timeout)

      put_in(state.calls[ref], {runner, pending, request, timer})
    else
      state
    end
  end

  defp known?(table, {{:builtin, name}, request}) when is_map(request),
    do: is_map_key(table.builtins, name)

  defp known?(table, {{:fs, mount}, %{op: _, path: _}}), do: is_map_key(table.virtual_fs, mount)

  defp known?(table, {{:policy, "command"}, %{name: _, args: _}}),
    do: is_function(table.policy, 1)

  defp known?(_table, _call), do: false

  defp cancel(nil), do: :ok
  defp cancel(timer), do: Process.cancel_timer(timer)

  defp shutdown(%{calls: calls}) do
    for {ref, {runner, _, _, _}} <- calls, do: stop_runner(runner, ref)
    :stop
  end

  # Once it is gone, its chain can be forgotten: not before, or it could
  # record the chain again on its way out.
  defp stop_runner(runner, ref) do
    Process.exit(runner, :kill)

    receive do
      {:DOWN, ^ref, :process, _, _} -> Chains.delete(runner)
    end
  end

  defp run(table, chain, pending, request) do
    Chains.put(self(), chain)

    reply =
      try do
        request |> invoke(table) |> reply(request, table)
      catch
        kind, reason -> failure(request, table, {kind, reason, __STACKTRACE__})
      end

    Interpreter.callback_reply(pending, reply)
  end

  defp answer(pending, request, table, why) do
    Interpreter.callback_reply(pending, failure(request, table, why))
  end

  defp invoke({{:builtin, name}, request}, table) do
    observed(%{type: :builtin, name: name, operation: :call}, fn ->
      Builtin.invoke(Map.fetch!(table.builtins, name), request)
    end)
  end

  defp invoke({{:fs, mount}, request}, table) do
    observed(%{type: :virtual_fs, name: mount, operation: request[:op]}, fn ->
      VirtualFs.dispatch(Map.fetch!(table.virtual_fs, mount), request)
    end)
  end

  defp invoke({{:policy, _}, request}, table) do
    observed(%{type: :policy, name: request.name, operation: :check}, fn ->
      table.policy.(request)
    end)
  end

  defp observed(metadata, fun) do
    Telemetry.span([:ex_bashkit, :callback], metadata, fun, fn answer ->
      ok? = answer == :ok or (is_tuple(answer) and elem(answer, 0) == :ok)
      {%{}, %{status: if(ok?, do: :ok, else: :error)}}
    end)
  end

  # What the NIF decodes; see native/ex_bashkit/src/callback.rs.

  defp reply({status, iodata} = value, {{:builtin, name}, _} = request, table)
       when status in [:ok, :error] do
    with {:ok, size} <- iodata_length(iodata),
         :ok <- within(size, name, table) do
      output = IO.iodata_to_binary(iodata)
      if status == :ok, do: {:output, output, "", 0}, else: {:output, "", output, 1}
    else
      :error -> invalid(request, value, table)
      {:too_large, message} -> {:output, "", message, 1}
    end
  end

  defp reply(%Result{stdout: out, stderr: err, exit_code: code}, {{:builtin, name}, _}, table)
       when is_binary(out) and is_binary(err) and code in 0..255 do
    case within(byte_size(out) + byte_size(err), name, table) do
      :ok -> {:output, out, err, code}
      {:too_large, message} -> {:output, "", message, 1}
    end
  end

  defp reply(value, {{:builtin, _}, _} = request, table),
    do: invalid(request, value, table)

  # A function :command_policy: anything but :ok denies.
  defp reply(:ok, {{:policy, _}, _}, _table), do: :ok

  defp reply({:deny, reason}, {{:policy, _}, _}, table) when is_binary(reason),
    do: {:error, truncate(reason, table.max_reply)}

  defp reply(value, {{:policy, _}, _} = request, table), do: invalid(request, value, table)

  defp reply(value, {{:fs, mount}, %{op: op}} = request, table) do
    case VirtualFs.reply(op, value) do
      {:ok, {:error, reason}} when is_binary(reason) ->
        {:error, truncate(reason, table.max_reply)}

      {:ok, reply} ->
        case within(reply_size(reply), "the virtual_fs backend at #{mount}", table) do
          :ok -> reply
          {:too_large, message} -> {:error, String.trim_trailing(message)}
        end

      :error ->
        invalid(request, value, table)
    end
  end

  # Each listing entry costs its name plus a fixed overhead, so a flood of
  # tiny names is bounded too.
  @entry_overhead 32

  defp reply_size({:data, data}), do: byte_size(data)

  defp reply_size({:entries, entries}),
    do:
      Enum.reduce(entries, 0, fn {name, _, _}, acc -> acc + byte_size(name) + @entry_overhead end)

  defp reply_size(_small), do: 0

  defp within(size, _who, %{max_reply: max}) when size <= max, do: :ok

  defp within(size, who, %{max_reply: max}) do
    {:too_large,
     "#{who}: reply of #{size} bytes exceeds the #{max}-byte reply limit " <>
       "(config :ex_bashkit, :max_reply_bytes)\n"}
  end

  defp invalid({{:builtin, name}, _}, value, table) do
    message =
      case value do
        %Result{exit_code: code} when not (is_integer(code) and code in 0..255) ->
          "the builtin returned exit code #{short(code)}, outside 0..255"

        _ ->
          "the builtin returned #{short(value)}; " <>
            "expected {:ok, iodata}, {:error, iodata} or %ExBashkit.Result{}"
      end

    {:output, "", "#{name}: #{truncate(message, table.max_reply)}\n", 1}
  end

  defp invalid({{:policy, _}, _}, value, table) do
    message = "the command policy answered #{short(value)}; expected :ok or {:deny, reason}"

    {:error, truncate(message, table.max_reply)}
  end

  defp invalid({{:fs, mount}, %{op: op}}, value, table) do
    message =
      "the virtual_fs backend at #{mount} answered #{op} with an invalid value: #{short(value)}"

    {:error, truncate(message, table.max_reply)}
  end

  defp failure(request, table, why) do
    why |> describe(table) |> truncate(table.max_reply) |> failure_reply(request, why)
  rescue
    # Describing the failure failed too (a hostile exception or Inspect).
    _ -> failure_reply("failed", request, why)
  end

  defp failure_reply(text, {{:builtin, name}, _}, why) do
    {:output, "", "#{name}: #{text}\n", if(why == :timeout, do: 124, else: 1)}
  end

  defp failure_reply(text, {{:policy, _}, _}, _why),
    do: {:error, "the command policy failed: #{text}"}

  defp failure_reply(_text, {{:fs, _}, _}, :timeout), do: {:error, :etimedout}

  defp failure_reply(text, {{:fs, mount}, _}, _why),
    do: {:error, "the virtual_fs backend at #{mount} failed: #{text}"}

  defp describe(:timeout, table), do: "timed out after #{table.timeout} ms"

  defp describe({:died, :normal}, _),
    do: "the callback process stopped: it exited without answering"

  defp describe({:died, reason}, _),
    do: "the callback process stopped: it exited: #{short(reason)}"

  defp describe({:error, reason, stacktrace}, _) do
    exception = Exception.normalize(:error, reason, stacktrace)
    "raised #{inspect(exception.__struct__)}: #{Exception.message(exception)}"
  end

  defp describe({:exit, reason, _}, _), do: "exited: #{short(reason)}"
  defp describe({:throw, value, _}, _), do: "threw #{short(value)}"

  defp short(term), do: inspect(term, limit: 8, printable_limit: 200)

  defp iodata_length(iodata) do
    {:ok, IO.iodata_length(iodata)}
  rescue
    ArgumentError -> :error
  end

  @doc false
  # At most `max` bytes of `text`, cut on a character boundary: whatever a
  # callback or its Inspect implementation produced, only this much crosses.
  @spec truncate(binary(), pos_integer()) :: binary()
  def truncate(text, max) when byte_size(text) <= max, do: text

  def truncate(text, max) do
    case :unicode.characters_to_binary(binary_part(text, 0, max)) do
      valid when is_binary(valid) -> valid
      {_incomplete_or_error, valid, _rest} -> valid
    end
  end
end
