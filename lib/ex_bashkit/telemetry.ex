defmodule ExBashkit.Telemetry do
  @moduledoc """
  What happens inside ex_bashkit, as `:telemetry` events.

  ex_bashkit does not depend on `:telemetry`: the events are emitted
  when the host application has it loaded (as almost every Phoenix or
  Ecto application does), and cost one BIF call each when it is not.
  Spans follow `:telemetry.span/3`'s conventions: a `:start` event with
  `:monotonic_time` and `:system_time`, then a `:stop` event with
  `:duration` (native time units, `System.convert_time_unit/3` turns them
  into what you want), or an `:exception` event with `:kind`, `:reason`
  and `:stacktrace` in its metadata if the work raised.

  | event | measurements | metadata |
  |---|---|---|
  | `[:ex_bashkit, :exec, :start]` | `monotonic_time`, `system_time` | `session` (a `Session`, or `nil` for `ExBashkit.exec/1`), `script_bytes` |
  | `[:ex_bashkit, :exec, :stop]` | `duration`, `stdout_bytes`, `stderr_bytes`; for a script that ran to its end, its `ExBashkit.Result.Stats` too: `wall_us`, `cpu_us`, `peak_memory_bytes`, `file_bytes_written`, `commands` | the start's, plus `exit_code` (`nil` on error), `truncated`, `reason` (`nil`, or the `ExBashkit.Error` reason: `:timeout`, `:limit`, …), `limit` |
  | `[:ex_bashkit, :exec, :exception]` | `duration` | the start's, plus `kind`, `reason`, `stacktrace` |
  | `[:ex_bashkit, :callback, :start \\| :stop \\| :exception]` | as above | `type` (`:builtin` or `:virtual_fs`), `name` (the builtin's name or the mount), `operation` (`:call`, or the virtual_fs operation: `:read`, `:write`, …); `:stop` adds `status` (`:ok` or `:error`) |
  | `[:ex_bashkit, :snapshot, :start \\| :stop \\| :exception]` | as above; `:stop` adds `bytes` | `session`; `:stop` adds `status` |
  | `[:ex_bashkit, :restore, :start \\| :stop \\| :exception]` | as above; `:start` adds `bytes` | `session`; `:stop` adds `status` |
  | `[:ex_bashkit, :fork, :start \\| :stop \\| :exception]` | as above; `:start` adds `count` | `session` (the original); `:stop` adds `status` |
  | `[:ex_bashkit, :peer, :run, :start \\| :stop \\| :exception]` | as above; `:stop` adds `output_bytes` | `code_bytes`; `:stop` adds `status` (`:ok`, `:error`, `:timeout`, `:noconnection`) |
  | `[:ex_bashkit, :server, :hibernate]` | `duration`, `snapshot_bytes` | `id`, `store` (a module or `nil`) |
  | `[:ex_bashkit, :server, :wake]` | `duration` | `id`, `from` (`:memory` or `:store`) |
  | `[:ex_bashkit, :server, :move]` | `duration`, `snapshot_bytes` | `id`, `from`, `to` (nodes) |
  | `[:ex_bashkit, :worker, :kill]` | `count` (1) | `reason` (`:timeout`, `:frozen`, `:orphaned`, `:unresponsive`, `:dropped`, `:exited`, `:start`, `:protocol`), `os_pid` — an `isolation: :process` worker ended (see `guides/isolation.md`) |
  | `[:ex_bashkit, :command, :denied]` | `count` (1) | `name` (the command), `reason`, `aborted` (whether it ended the script) — the `:command_policy` refused a command |
  | `[:ex_bashkit, :worker, :protocol_violation]` | `count` (1) | `os_pid`, `why` (what the worker sent, in words; never its bytes) — a worker sent a frame the host does not accept, and was killed (reason `:protocol`) |

  For example, to log every script that hit a limit:

      :telemetry.attach("sandbox-limits", [:ex_bashkit, :exec, :stop],
        fn _event, %{duration: duration}, %{reason: :limit, limit: limit}, _config ->
            Logger.warning("a script hit \#{limit} after \#{System.convert_time_unit(duration, :native, :millisecond)} ms")
          _event, _measurements, _metadata, _config -> :ok
        end, nil)
  """

  @compile {:no_warn_undefined, :telemetry}

  @doc """
  True when `:telemetry` is loaded, so that events are emitted.

      iex> is_boolean(ExBashkit.Telemetry.enabled?())
      true
  """
  @spec enabled?() :: boolean()
  def enabled?, do: :erlang.function_exported(:telemetry, :execute, 3)

  @doc false
  # Runs `fun` inside a span named `event` and returns its result. `stop`
  # turns the result into the stop event's extra `{measurements,
  # metadata}`; it is called only when :telemetry is loaded, so without it
  # the span costs the `enabled?/0` check and nothing else.
  @spec span([atom()], map(), map(), (() -> result), (result -> {map(), map()})) :: result
        when result: term()
  def span(event, measurements \\ %{}, metadata, fun, stop) do
    if enabled?(), do: observed(event, measurements, metadata, fun, stop), else: fun.()
  end

  defp observed(event, measurements, metadata, fun, stop) do
    started = System.monotonic_time()
    start = Map.merge(measurements, %{monotonic_time: started, system_time: System.system_time()})
    :telemetry.execute(event ++ [:start], start, metadata)

    try do
      fun.()
    catch
      kind, reason ->
        ended = System.monotonic_time()

        :telemetry.execute(
          event ++ [:exception],
          %{duration: ended - started, monotonic_time: ended},
          Map.merge(metadata, %{kind: kind, reason: reason, stacktrace: __STACKTRACE__})
        )

        :erlang.raise(kind, reason, __STACKTRACE__)
    else
      result ->
        ended = System.monotonic_time()
        {extra_measurements, extra_metadata} = stop.(result)

        :telemetry.execute(
          event ++ [:stop],
          Map.merge(extra_measurements, %{duration: ended - started, monotonic_time: ended}),
          Map.merge(metadata, extra_metadata)
        )

        result
    end
  end

  @doc false
  # A single event, when :telemetry is loaded.
  @spec execute([atom()], map(), map()) :: :ok
  def execute(event, measurements, metadata) do
    if enabled?(), do: :telemetry.execute(event, measurements, metadata)
    :ok
  end

  @doc false
  # The stop metadata and measurements of an exec's outcome.
  @spec exec_stop({:ok, ExBashkit.Result.t()} | {:error, ExBashkit.Error.t()}) :: {map(), map()}
  # A code run: its driver's result, beside the engine's outcome.
  def exec_stop({:ok, {result, _outcome}}), do: exec_stop({:ok, result})

  def exec_stop({:ok, result}) do
    {Map.merge(
       %{
         stdout_bytes: IO.iodata_length(stdout(result.stdout)),
         stderr_bytes: byte_size(result.stderr)
       },
       cost(result.stats)
     ), %{exit_code: result.exit_code, truncated: result.truncated, reason: nil, limit: nil}}
  end

  def exec_stop({:error, error}) do
    {%{stdout_bytes: byte_size(error.stdout), stderr_bytes: byte_size(error.stderr)},
     %{exit_code: nil, truncated: false, reason: error.reason, limit: error.limit}}
  end

  # A script's own figures (`ExBashkit.Result.Stats`), as measurements.
  defp cost(%ExBashkit.Result.Stats{} = stats),
    do: stats |> Map.from_struct() |> Map.delete(:runs)

  defp cost(nil), do: %{}

  # With `:into`, stdout is what the collectable returned: counted when
  # it is iodata.
  defp stdout(stdout) when is_binary(stdout), do: stdout

  defp stdout(collected) do
    IO.iodata_length(collected) && collected
  rescue
    ArgumentError -> []
  end

  @kill_reasons [
    :timeout,
    :frozen,
    :orphaned,
    :unresponsive,
    :dropped,
    :exited,
    :start,
    :protocol
  ]

  @doc false
  # A worker of an `isolation: :process` session ended: counted for
  # `ExBashkit.stats/0`, and an event.
  @spec worker_killed(atom(), pos_integer()) :: :ok
  def worker_killed(reason, os_pid) do
    :counters.add(kill_counters(), Enum.find_index(@kill_reasons, &(&1 == reason)) + 1, 1)
    execute([:ex_bashkit, :worker, :kill], %{count: 1}, %{reason: reason, os_pid: os_pid})
  end

  @doc false
  # A worker broke the protocol (`ExBashkit.Worker.Protocol`); its kill is
  # counted with reason `:protocol`.
  @spec denied(String.t(), String.t(), boolean()) :: :ok
  def denied(name, reason, aborted) do
    execute([:ex_bashkit, :command, :denied], %{count: 1}, %{
      name: name,
      reason: reason,
      aborted: aborted
    })
  end

  @doc false
  @spec protocol_violation(pos_integer() | nil, String.t()) :: :ok
  def protocol_violation(os_pid, why),
    do:
      execute([:ex_bashkit, :worker, :protocol_violation], %{count: 1}, %{
        os_pid: os_pid,
        why: why
      })

  @doc false
  # Worker ends so far, by reason.
  @spec worker_kills() :: %{atom() => non_neg_integer()}
  def worker_kills do
    counters = kill_counters()

    @kill_reasons
    |> Enum.with_index(1)
    |> Map.new(fn {r, i} -> {r, :counters.get(counters, i)} end)
  end

  @doc false
  # Called once, as the application starts.
  @spec setup() :: :ok
  def setup do
    counters = :counters.new(length(@kill_reasons), [:write_concurrency])
    :persistent_term.put({__MODULE__, :kills}, counters)
  end

  defp kill_counters, do: :persistent_term.get({__MODULE__, :kills})
end
