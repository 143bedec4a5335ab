defmodule ExBashkit.Execution do
  @moduledoc false
  # Waits for a script queued by a NIF. The script runs on the NIF's own
  # threads and answers with `{tag, outcome}`; while it runs the caller sits
  # in `receive`, holding no scheduler. The NIF monitors the caller, so a
  # caller that dies cancels its script.
  #
  # A script normally stops at its `:timeout_ms` by itself. One stuck in
  # work that never yields (bashkit code that cannot be interrupted) cannot
  # be stopped, so the caller stops waiting for it: `timeout_ms` plus a
  # margin after the call, the job is abandoned (it will never answer) and
  # the caller gets an error saying whether the script was running or
  # still queued behind another one.

  alias ExBashkit.Result

  # How long past its :timeout_ms a caller waits for a script that has not
  # stopped by itself.
  @margin_ms 500

  @doc """
  The outcome of a script, as a `%Result{}`, within `timeout_ms` plus a
  margin of the call. `forward`, when given, gets each callback call
  (`{:ex_bashkit_call, ...}`) the script sends this process meanwhile.
  """
  @spec await(
          {:ok, reference()} | {:error, String.t()},
          reference(),
          pos_integer(),
          (tuple() -> term()) | nil
        ) :: {:ok, Result.t()} | {:error, String.t()}
  def await(queued, tag, timeout_ms, forward \\ nil) do
    case bounded_reply(queued, tag, timeout_ms, forward) do
      {:ok, {stdout, stderr, exit_code, truncated}} ->
        {:ok, %Result{stdout: stdout, stderr: stderr, exit_code: exit_code, truncated: truncated}}

      {:error, message} ->
        {:error, message}
    end
  end

  @doc "The `{:ok, value}` or `{:error, message}` of any queued job."
  @spec reply({:ok, reference()} | {:error, String.t()}, reference()) ::
          {:ok, term()} | {:error, String.t()}
  def reply({:error, _message} = error, _tag), do: error
  def reply({:ok, _handle}, tag), do: receive_spinning(tag, deadline(), :infinity, nil)

  defp bounded_reply({:error, _message} = error, _tag, _timeout_ms, _forward), do: error

  defp bounded_reply({:ok, handle}, tag, timeout_ms, forward) do
    until = System.monotonic_time(:millisecond) + timeout_ms + @margin_ms

    case receive_spinning(tag, deadline(), until, forward) do
      :timeout -> abandon(handle, tag, timeout_ms)
      outcome -> outcome
    end
  end

  defp abandon(handle, tag, timeout_ms) do
    case ExBashkit.Native.exec_abandon(handle) do
      :answered ->
        receive do
          {^tag, outcome} -> outcome
        end

      :sent ->
        {:error,
         "timed out after #{timeout_ms} ms (limit :timeout_ms) before the script started: " <>
           "the interpreter thread it was given is busy with a script that cannot be interrupted"}

      :queued ->
        {:error,
         "timed out after #{timeout_ms} ms (limit :timeout_ms) waiting for the session: " <>
           "an earlier script is still running on it"}

      :running ->
        {:error,
         "timed out after #{timeout_ms} ms (limit :timeout_ms): the script did not stop at " <>
           "its deadline (it is inside work that cannot be interrupted); it keeps the session " <>
           "busy until that work ends, and scripts sent to the session meanwhile wait or time out"}
    end
  end

  # Most scripts answer within microseconds. Waking a scheduler that went to
  # sleep costs more than that once the VM has any port or socket open (the
  # sleeping scheduler waits in the poll set): 14 µs became 30 µs per exec
  # on the benchmark machine. So the caller stays runnable for a short
  # while, yielding to every other process, before it blocks — but only
  # while no other process is waiting to run: then the scheduler will not
  # sleep anyway, and spinning only takes their time (10,000 sessions
  # starting `sleep 1` at once, beside a cargo build: 411 ms to submit when
  # every caller spun, 186 ms when none did).
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
  # :infinity), spinning until `spin_until` first; hands callback calls to
  # `forward` meanwhile.
  defp receive_spinning(tag, spin_until, until, forward) do
    spinning? = spin?(spin_until)
    wait = if spinning?, do: 0, else: remaining_ms(until)

    receive do
      {^tag, outcome} ->
        outcome

      {:ex_bashkit_call, _, _, _} = call when is_function(forward, 1) ->
        forward.(call)
        receive_spinning(tag, deadline(), until, forward)
    after
      wait ->
        cond do
          spinning? ->
            :erlang.yield()
            receive_spinning(tag, spin_until, until, forward)

          until != :infinity and System.monotonic_time(:millisecond) >= until ->
            :timeout

          true ->
            receive_spinning(tag, spin_until, until, forward)
        end
    end
  end

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
