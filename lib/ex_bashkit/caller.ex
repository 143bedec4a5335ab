defmodule ExBashkit.Caller do
  @moduledoc false
  # The caller's side of a queued job (a script, a snapshot, a restore):
  # it waits for the answer. The script runs on the NIF's own
  # threads and answers with `{tag, outcome}`; while it runs the caller sits
  # in `receive`, holding no scheduler. The job monitors the caller (from
  # its first wait), so a caller that dies cancels its script.
  #
  # A script normally stops at its `:timeout_ms` by itself. One stuck in
  # work that never yields (bashkit code that cannot be interrupted) cannot
  # be stopped, so the caller stops waiting for it: `timeout_ms` plus a
  # margin after the call, the job is abandoned (it will never answer) and
  # the caller gets an error saying whether the script was running or
  # still queued behind another one.

  alias ExBashkit.{Error, Interpreter, Result, Telemetry}
  alias ExBashkit.Result.Stats
  alias ExBashkit.Session.ExecOptions

  @doc """
  The outcome of a script queued for `call` (see
  `ExBashkit.Session.ExecOptions.validate!/3`), within its `timeout_ms` plus
  a margin. `forward`, when given, gets each callback call
  (`{:ex_bashkit_call, ...}`) the script sends this process meanwhile;
  stdout chunks go into the call's `:into` as they arrive. Errors are
  `%ExBashkit.Error{}` here; `finish/2` gives the caller what it asked for.
  """
  @spec await(
          ExBashkit.Interpreter.Backend.ran(),
          reference(),
          ExecOptions.call(),
          (tuple() -> term()) | nil
        ) :: {:ok, Result.t()} | {:error, Error.t()}
  def await(queued, tag, call, forward \\ nil)

  def await({:error, message}, _tag, _call, _forward), do: {:error, Error.from_job(message)}

  # Run by the call itself: the outcome is here, and no message will come.
  def await({:ran, outcome}, _tag, call, _forward), do: answered(outcome, sink(call))

  # Polled by the call itself, the script waits for the callbacks it made
  # there: they are served as any, and the script polled on here once one
  # is answered. At its deadline it goes on its interpreter thread, whose
  # timer stops it as any script.
  def await({:call, _handle, _calls} = parked, tag, call, forward) do
    parked(parked, tag, call, forward, System.monotonic_time(:millisecond) + call.timeout_ms)
  end

  def await({:ok, handle}, tag, call, forward) do
    outcome = wait(handle, tag, call, forward)
    # The session stays referenced until its job answered.
    Interpreter.keep(handle)
    outcome
  end

  defp parked({:call, handle, calls}, tag, call, forward, until) do
    Enum.each(calls, forward)

    # Yielding between looks, for the callback's runner to run.
    case receive_spinning(tag, deadline(), until, forward, nil, :resumable) do
      {:resumable, nil} ->
        case Interpreter.resume(handle) do
          {:call, _, _} = parked -> parked(parked, tag, call, forward, until)
          polled -> await(polled, tag, call, forward)
        end

      :timeout ->
        Interpreter.unpark(handle)
        await({:ok, handle}, tag, call, forward)

      # Sent on meanwhile (stopped), it answered as any job.
      {outcome, nil} ->
        answered(outcome, sink(call))
    end
  end

  defp wait(handle, tag, call, forward) do
    # How long past its :timeout_ms to wait for a script that has not
    # stopped by itself, and whether to yield meanwhile: the backend's.
    %{margin_ms: margin_ms, yield?: yield?} = Interpreter.wait_policy(handle)
    until = System.monotonic_time(:millisecond) + call.timeout_ms + margin_ms
    sink = sink(call)
    yield? = yield? or forward != nil

    wait_until(handle, tag, call, {forward, sink, yield?}, until)
  end

  defp wait_until(handle, tag, call, {forward, sink, yield?}, until) do
    case receive_spinning(
           tag,
           deadline(),
           until,
           forward,
           sink,
           if(yield?, do: :yield, else: :spin)
         ) do
      {:timeout, sink} ->
        case Interpreter.abandon(handle) do
          # It started later than this call was made (a busy machine, a
          # queue): its own deadline is still ahead, with the margin.
          {:wait, ms} ->
            until = System.monotonic_time(:millisecond) + ms
            wait_until(handle, tag, call, {forward, sink, yield?}, until)

          whereabouts ->
            halt(sink)
            abandoned(whereabouts, tag, call.timeout_ms)
        end

      {outcome, sink} ->
        answered(outcome, sink)
    end
  end

  defp answered({:ok, {:code, ran, outcome}}, sink) do
    {:ok, result} = ran(ran, sink)
    {:ok, {result, outcome}}
  end

  defp answered({:ok, ran}, sink), do: ran(ran, sink)

  defp answered({:error, error}, sink) do
    halt(sink)
    error = Error.from_job(error)
    report_abort(error)
    {:error, error}
  end

  defp ran({stdout, stderr, exit_code, truncated, denials, stats}, sink) do
    report(denials)

    {:ok,
     %Result{
       stdout: collected(sink, stdout),
       stderr: stderr,
       exit_code: exit_code,
       truncated: truncated,
       stats: Stats.from_tuple(stats)
     }}
  end

  # A telemetry event per command the policy denied.
  defp report([]), do: :ok

  defp report(denials),
    do: Enum.each(denials, fn {name, reason} -> Telemetry.denied(name, reason, false) end)

  # A script the policy stopped (command_policy_abort): its message is
  # "NAME: reason (the script was stopped: command_policy_abort)" (exec.rs).
  defp report_abort(%Error{reason: :denied, message: message}) do
    # Inline, not an attribute: a compiled regex cannot be a module
    # attribute on OTP 28.
    aborted = ~r/\A(.+?): (.+) \(the script was stopped: command_policy_abort\)\z/s

    case Regex.run(aborted, message, capture: :all_but_first) do
      [name, reason] -> Telemetry.denied(name, reason, true)
      nil -> :ok
    end
  end

  defp report_abort(_error), do: :ok

  @doc """
  Runs `fun` (which queues a script and awaits its outcome) inside the
  `[:ex_bashkit, :exec]` telemetry span, and gives the caller the outcome
  as it asked for it (`finish/2`).
  """
  @spec observe(ExBashkit.Session.t() | nil, binary(), ExecOptions.call(), (() -> outcome)) ::
          {:ok, Result.t()} | {:error, Error.t() | String.t()}
        when outcome: {:ok, Result.t()} | {:error, Error.t()}
  def observe(session, script, call, fun) do
    metadata = %{session: session, script_bytes: byte_size(script)}
    outcome = Telemetry.span([:ex_bashkit, :exec], metadata, fun, &Telemetry.exec_stop/1)
    finish(outcome, call)
  end

  @doc """
  The outcome as the caller asked for it: the error's message unless it
  asked for `errors: :struct`. A `:stream_to` listener gets the outcome,
  errors as structs, in its final message.
  """
  @spec finish({:ok, Result.t()} | {:error, Error.t()}, ExecOptions.call()) ::
          {:ok, Result.t()} | {:error, Error.t() | String.t()}
  def finish(outcome, call) do
    with {pid, stream_tag} <- call.stream_to,
         do: send(pid, {:ex_bashkit, stream_tag, {:exit, outcome}})

    case outcome do
      {:error, %Error{message: message}} when call.errors == :message -> {:error, message}
      outcome -> outcome
    end
  end

  @doc "The `{:ok, value}` or `{:error, message}` of any queued job."
  @spec reply({:ok, ExBashkit.Interpreter.job()} | {:error, String.t()}, reference()) ::
          {:ok, term()} | {:error, String.t()}
  def reply({:error, _message} = error, _tag), do: error

  def reply({:ok, handle}, tag), do: reply(handle, tag, Interpreter.answerer(handle))

  # A job answered by the NIF, which answers every one it accepted.
  defp reply(_handle, tag, nil) do
    {outcome, nil} = receive_spinning(tag, deadline(), :infinity, nil, nil, :spin)
    outcome
  end

  # One whose answerer can die without answering is watched.
  defp reply(handle, tag, answerer) do
    monitor = Process.monitor(answerer)

    outcome =
      receive do
        {^tag, outcome} ->
          Process.demonitor(monitor, [:flush])
          outcome

        {:DOWN, ^monitor, :process, _, _} ->
          receive do
            {^tag, outcome} -> outcome
          after
            0 -> {:error, ExBashkit.Worker.Owner.gone("its owner process is gone")}
          end
      end

    # The session stays referenced until its job answered.
    Interpreter.keep(handle)
    outcome
  end

  # Where stdout chunks go: `{output_tag, acc, collector}` for `:into`.
  defp sink(%{into: nil}), do: nil

  defp sink(%{into: into, output_tag: output_tag}) do
    {acc, collector} = Collectable.into(into)
    {output_tag, acc, collector}
  end

  defp collected(nil, stdout), do: stdout
  defp collected({_tag, acc, collector}, _stdout), do: collector.(acc, :done)

  defp halt(nil), do: :ok

  defp halt({output_tag, acc, collector}) do
    collector.(acc, :halt)
    flush(output_tag)
  end

  # Chunks a script sent before an answer this caller no longer reads.
  defp flush(output_tag) do
    receive do
      {:ex_bashkit, ^output_tag, _chunk} -> flush(output_tag)
    after
      0 -> :ok
    end
  end

  defp abandoned(whereabouts, tag, timeout_ms) do
    case whereabouts do
      :answered ->
        receive do
          {^tag, {:ok, _} = ok} -> await_answered(ok)
          {^tag, {:error, error}} -> {:error, Error.from_job(error)}
        end

      {:killed, output} ->
        overdue(
          timeout_ms,
          output,
          ", so its worker process was killed; the session can run no more scripts " <>
            "(start a new session)"
        )

      :sent ->
        busy(
          "timed out after #{timeout_ms} ms (limit :timeout_ms) before the script started: " <>
            "the interpreter thread it was given is busy with a script that cannot be interrupted"
        )

      :queued ->
        busy(
          "timed out after #{timeout_ms} ms (limit :timeout_ms) waiting for the session: " <>
            "an earlier script is still running on it"
        )

      {:running, output} ->
        # Whatever it printed before is the caller's, as with any timeout.
        overdue(
          timeout_ms,
          output,
          " (it, or a script sharing its interpreter thread, is inside work that cannot be " <>
            "interrupted); it keeps the session busy until that work ends, and scripts sent " <>
            "to the session meanwhile wait or time out"
        )
    end
  end

  # A script that did not stop at its deadline, with what it printed.
  defp overdue(timeout_ms, {stdout, stderr}, consequence) do
    {:error,
     %Error{
       reason: :timeout,
       limit: :timeout_ms,
       stdout: stdout,
       stderr: stderr,
       message:
         "timed out after #{timeout_ms} ms (limit :timeout_ms): the script did not stop at " <>
           "its deadline" <> consequence
     }}
  end

  defp await_answered({:ok, {:code, ran, outcome}}) do
    {:ok, result} = await_answered({:ok, ran})
    {:ok, {result, outcome}}
  end

  defp await_answered({:ok, ran}), do: ran(ran, nil)

  defp busy(message), do: {:error, %Error{reason: :busy, limit: :timeout_ms, message: message}}

  # Most scripts answer within microseconds. Waking a scheduler that went to
  # sleep costs more than that once the VM has any port or socket open (the
  # sleeping scheduler waits in the poll set): 14 µs became 30 µs per exec
  # on the benchmark machine. So the caller stays runnable for a short
  # while before it blocks — but only while no other process is waiting to
  # run: then the scheduler will not sleep anyway, and spinning only takes
  # their time (10,000 sessions starting `sleep 1` at once, beside a cargo
  # build: 411 ms to submit when every caller spun, 186 ms when none did).
  #
  # A script in this VM answers with a message from its interpreter thread:
  # the caller looks for it without yielding between looks (a yield put a
  # pass of the scheduler's loop between the answer's arrival and its
  # receipt; the check above is made at each look). A worker's answer
  # comes through its Port, and a script's callbacks through processes of
  # their own: there the caller yields between looks, which lets its
  # scheduler poll for I/O and start them (without the yields, an exec in
  # a worker went from 34 to 54 µs, a builtin's round trip from 10 to 15).
  @spin_us 30

  @doc false
  # Whether a waiting process should keep spinning until `spin_until`.
  @spec spin?(integer()) :: boolean()
  def spin?(spin_until) do
    System.monotonic_time() < spin_until and
      :erlang.statistics(:total_run_queue_lengths) == 0
  end

  @doc false
  @spec deadline() :: integer()
  def deadline,
    do: System.monotonic_time() + System.convert_time_unit(@spin_us, :microsecond, :native)

  # Waits for `{tag, outcome}` until `until` (monotonic milliseconds or
  # :infinity), spinning until `spin_until` first (`:yield` gives the
  # scheduler away between looks, `:spin` does not); hands callback calls
  # to `forward` and output chunks to `sink` meanwhile. Returns the outcome
  # (or :timeout) with the sink; under `:resumable` (a script parked on this
  # process, `parked/5`), also `{:resumable, sink}` once a call it made is
  # answered, and `:timeout` alone.
  defp receive_spinning(tag, spin_until, until, forward, sink, mode) do
    spinning? = spin?(spin_until)
    wait = if spinning?, do: 0, else: remaining_ms(until)

    receive do
      {^tag, outcome} ->
        {outcome, sink}

      {:ex_bashkit_resumable, _pending} when mode == :resumable ->
        {:resumable, sink}

      {:ex_bashkit_call, _, _, _} = call when is_function(forward, 1) ->
        forward.(call)
        receive_spinning(tag, deadline(), until, forward, sink, mode)

      {:ex_bashkit, output_tag, {stream, chunk}}
      when is_tuple(sink) and elem(sink, 0) == output_tag ->
        sink = collect(sink, stream, chunk)
        receive_spinning(tag, spin_until, until, forward, sink, mode)
    after
      wait ->
        cond do
          spinning? ->
            if mode != :spin, do: :erlang.yield()
            receive_spinning(tag, spin_until, until, forward, sink, mode)

          until != :infinity and System.monotonic_time(:millisecond) >= until ->
            if mode == :resumable, do: :timeout, else: {:timeout, sink}

          true ->
            receive_spinning(tag, spin_until, until, forward, sink, mode)
        end
    end
  end

  defp collect({output_tag, acc, collector}, :stdout, chunk),
    do: {output_tag, collector.(acc, {:cont, chunk}), collector}

  defp collect(sink, :stderr, _chunk), do: sink

  # `after` takes at most 32 bits of milliseconds; longer waits go round.
  defp remaining_ms(:infinity), do: :infinity

  defp remaining_ms(until),
    do: min(max(until - System.monotonic_time(:millisecond), 0), 0xFFFF_FFFF)

  @doc false
  def script!(script) when is_binary(script), do: script

  def script!(other) do
    raise ArgumentError, "script must be a binary, got: #{inspect(other)}"
  end
end
