defmodule ExBashkit.Interpreter do
  @moduledoc false
  # Where a session's interpreter lives, decided in one place: a NIF
  # resource in this VM (`ExBashkit.Interpreter.InVM`) or a worker process
  # (`ExBashkit.Worker`, `isolation: :process`), both implementing
  # `ExBashkit.Interpreter.Backend` with the same shapes, so
  # `ExBashkit.Session`, `ExBashkit.Caller` and `ExBashkit.Callbacks`
  # need not know which.

  alias ExBashkit.Interpreter.{Backend, InVM}
  alias ExBashkit.Worker
  alias ExBashkit.Worker.Handle

  @type t :: reference() | Worker.t()
  @typedoc "A queued job: the NIF's handle, or a worker's."
  @type job :: reference() | Handle.t()

  # The backend of an interpreter, and of a job or call handle. Anything
  # that is not a worker's goes to the NIF, which answers badarg for what
  # is not its own (`ExBashkit.Interpreter.InVM` names it).
  defp backend(%Worker{}), do: Worker
  defp backend(%Handle{}), do: Worker
  defp backend(_resource), do: InVM

  @doc "The session's id, for `inspect/2` and messages."
  @spec id(t()) :: pos_integer()
  def id(interpreter), do: backend(interpreter).id(interpreter)

  @spec exec(t(), binary(), pid(), reference(), pid() | nil, struct() | nil) :: Backend.queued()
  def exec(interpreter, script, caller, tag, callbacks_to, call),
    do: backend(interpreter).exec(interpreter, script, caller, tag, callbacks_to, call)

  @spec snapshot(t(), map(), binary() | nil, pid(), reference()) :: Backend.queued()
  def snapshot(interpreter, options, key, caller, tag),
    do: backend(interpreter).snapshot(interpreter, options, key, caller, tag)

  @spec restore(t(), binary(), binary() | nil, pid(), reference()) :: Backend.queued()
  def restore(interpreter, snapshot, key, caller, tag),
    do: backend(interpreter).restore(interpreter, snapshot, key, caller, tag)

  @spec cancel(t()) :: boolean()
  def cancel(interpreter), do: backend(interpreter).cancel(interpreter)

  @doc "Stops waiting for `job`: where it was, with what it printed if it had begun."
  @spec abandon(job()) :: Backend.whereabouts()
  def abandon(job), do: backend(job).abandon(job)

  @spec callback_server(t(), pid()) :: :ok
  def callback_server(interpreter, server),
    do: backend(interpreter).callback_server(interpreter, server)

  @spec callbacks_done(t(), pid() | nil) :: :ok
  def callbacks_done(interpreter, server),
    do: backend(interpreter).callbacks_done(interpreter, server)

  @doc """
  Whether `pending` is a call a script of `session` made: a NIF handle, or
  one its own worker's owner sent. Anything else that reached a callback
  server is not served.
  """
  @spec call_of?(term(), t()) :: boolean()
  def call_of?(pending, interpreter), do: backend(interpreter).call_of?(pending, interpreter)

  @spec callback_reply(term(), term()) :: boolean()
  def callback_reply(call, reply), do: backend(call).callback_reply(call, reply)

  @file_ops [:read_file, :write_file, :list_dir, :mkdir, :remove, :rename, :stat, :chmod]

  @doc "The file API: `op` is one of #{inspect(@file_ops)}, `args` the NIF's."
  @spec file(t(), atom(), list()) :: term()
  def file(interpreter, op, args) when op in @file_ops,
    do: backend(interpreter).file(interpreter, op, args)
end
