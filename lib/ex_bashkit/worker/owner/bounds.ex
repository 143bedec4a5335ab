defmodule ExBashkit.Worker.Owner.Bounds do
  @moduledoc false
  # What an honest worker of a session can send: the frame and output
  # sizes its limits allow, how many calls and requests it may have
  # waiting, and whom it may call. Anything past these is a lie.

  alias ExBashkit.Session.Options.Limits
  alias ExBashkit.Worker.Protocol

  # What a frame may hold besides the data the session's limits allow
  # (messages, names, framing).
  @frame_margin 1024 * 1024

  @doc "The bounds of a session with these limits."
  def new(limits) do
    out = Limits.value(limits, :max_stdout_bytes)
    err = Limits.value(limits, :max_stderr_bytes)
    file = Limits.value(limits, :max_file_bytes)

    # Each waiting call or request is the script's or one of its
    # background jobs' (each waits for one answer at a time): an honest
    # worker has at most that many, which these leave room for.
    jobs = Limits.value(limits, :max_background_jobs) + 1

    %{
      calls: max(256, 4 * jobs),
      requests: max(64, 2 * jobs),
      output: {out, err},
      frame: max(out + err, file) + @frame_margin,
      snapshot_frame: max(out + err, Limits.value(limits, :max_snapshot_bytes)) + @frame_margin
    }
  end

  @doc """
  The builtins and virtual_fs mounts the session has, and whether a
  function decides its commands: a call of anything else is forged.
  """
  def callables(native),
    do:
      {MapSet.new(native.builtins), MapSet.new(native.virtual_fs),
       match?({:ask, _, _}, native.command_policy)}

  @doc "Whether the session has the callback `target`."
  def callable?({:builtin, name}, {builtins, _, _}), do: MapSet.member?(builtins, name)
  def callable?({:fs, mount}, {_, mounts, _}), do: MapSet.member?(mounts, mount)
  def callable?({:policy, "command"}, {_, _, asks?}), do: asks?
  def callable?(_target, _callables), do: false

  @doc "Whether `result` answers the request `what` (a file operation, a cancel, stats)."
  def answers?({:fs, op}, :fs, result), do: Protocol.fs_result(op, result)
  def answers?(:cancel, :cancelled, _result), do: true
  def answers?(:stats, :stats, totals), do: ExBashkit.Result.Stats.valid?(totals)
  def answers?(_what, _kind, _result), do: false
end
