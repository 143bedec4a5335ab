defmodule ExBashkit.Worker.Owner.Job do
  @moduledoc false
  # One job an owner waits on: a script's or a code run's, whose output it
  # counts against the session's caps, fans out to the listeners and
  # keeps when asked; or a snapshot's or restore's.

  @doc "A script's job (`script` a binary) or a code run's (`{:run_code, …}`)."
  def exec(script, caller, tag, callbacks_to, call) do
    listeners = if call, do: call.stream_to, else: []

    %{
      kind: :exec,
      # A code run ends with its engine's outcome too.
      run_code?: not is_binary(script),
      caller: caller,
      tag: tag,
      monitor: Process.monitor(caller),
      callbacks_to: callbacks_to,
      listeners: listeners,
      keep: call != nil and call.keep_output,
      out: [],
      err: [],
      sent: {0, 0},
      started: false,
      # When the worker said it started (monotonic ms), and the script's
      # deadline from then: a caller that gives up sooner is told to wait.
      started_at: nil,
      timeout_ms: call && call.timeout_ms
    }
  end

  @doc """
  How many ms a caller that stopped waiting for a started job should wait
  more: its deadline counted from when it started, plus `margin_ms`, not
  yet past. 0 when it is (or when nothing is known of it).
  """
  def due_in(%{started_at: at, timeout_ms: timeout_ms}, margin_ms)
      when is_integer(at) and is_integer(timeout_ms),
      do: max(at + timeout_ms + margin_ms - System.monotonic_time(:millisecond), 0)

  def due_in(_job, _margin_ms), do: 0

  @doc "A snapshot's or restore's job."
  def other(kind, caller, tag),
    do: %{
      kind: kind,
      caller: caller,
      tag: tag,
      monitor: Process.monitor(caller),
      started: false,
      started_at: nil
    }

  @doc "What `ExBashkit.Worker.Protocol.outcome/3` checks the job's answer as."
  def outcome_kind(%{run_code?: true}), do: :run_code
  def outcome_kind(job), do: job.kind

  @doc """
  A chunk of the script's output: counted (a worker never sends more than
  the session's caps, so one that does lies), sent to the listeners, kept
  if asked. `{:ok, job}`, or `{:error, why}` for a lie.
  """
  def chunk(job, stream, data, {max_out, max_err}) do
    {out, err} = job.sent

    sent =
      if stream == :stdout,
        do: {out + byte_size(data), err},
        else: {out, err + byte_size(data)}

    if elem(sent, 0) > max_out or elem(sent, 1) > max_err do
      {:error, "more #{stream} than the session's :max_#{stream}_bytes"}
    else
      for {pid, tag} <- job.listeners, do: send(pid, {:ex_bashkit, tag, {stream, data}})

      job =
        cond do
          not job.keep -> job
          stream == :stdout -> %{job | out: [job.out | data]}
          true -> %{job | err: [job.err | data]}
        end

      {:ok, %{job | sent: sent}}
    end
  end

  @doc "What the script printed, when the call asked to keep it."
  def kept(%{keep: true, out: out, err: err}),
    do: {IO.iodata_to_binary(out), IO.iodata_to_binary(err)}

  def kept(_job), do: {"", ""}

  @doc """
  The job's answer: an error keeps what the script printed when the call
  asked for it, as the NIF's kept output does.
  """
  def with_kept({:error, {reason, limit, message, "", ""}}, %{keep: true} = job) do
    {out, err} = kept(job)
    {:error, {reason, limit, message, out, err}}
  end

  def with_kept(outcome, _job), do: outcome

  @doc "What the job's caller is answered when the worker died (`reason`)."
  def failed(%{kind: :exec} = job, reason, message) do
    {out, err} = kept(job)
    {error_reason(reason), if(reason == :timeout, do: :timeout_ms), message, out, err}
  end

  def failed(_job, _reason, message), do: message

  defp error_reason(:timeout), do: :timeout
  defp error_reason(:protocol), do: :protocol
  defp error_reason(_reason), do: :error
end
