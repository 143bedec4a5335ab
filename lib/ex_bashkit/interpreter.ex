defmodule ExBashkit.Interpreter do
  @moduledoc false
  # Where a session's interpreter lives, decided in one place: a NIF
  # resource in this VM (`ExBashkit.Interpreter.InVM`) or a worker process
  # (`ExBashkit.Worker`, `isolation: :process`), both implementing
  # `ExBashkit.Interpreter.Backend`. The session holds the backend's struct,
  # and this module is the only one that asks which it is: `ExBashkit.Session`,
  # `ExBashkit.Caller` and `ExBashkit.Callbacks` make the same calls for both.

  alias ExBashkit.Interpreter.{Backend, InVM}
  alias ExBashkit.Worker
  alias ExBashkit.Worker.Handle

  @type t :: InVM.t() | Worker.t()
  @typedoc "A queued job: the NIF's handle, or a worker's."
  @type job :: reference() | Handle.t()

  # The backend of an interpreter, and of a job or call handle: a worker's
  # are structs, the NIF's jobs and calls references.
  defp backend(%InVM{}), do: InVM
  defp backend(%Worker{}), do: Worker
  defp backend(%Handle{}), do: Worker
  defp backend(reference) when is_reference(reference), do: InVM

  @doc "Starts an interpreter for `native` options, in this VM or in a worker process."
  @spec start(struct(), :none | :process, term()) :: {:ok, t()} | {:error, String.t()}
  def start(native, :none, prepared), do: InVM.start(native, prepared)
  def start(native, :process, _prepared), do: Worker.start(native)

  @doc "Whether `term` is an interpreter a session can hold."
  @spec interpreter?(term()) :: boolean()
  def interpreter?(%InVM{}), do: true
  def interpreter?(%Worker{}), do: true
  def interpreter?(_other), do: false

  @doc "The session's id, for `inspect/2` and messages."
  @spec id(t()) :: pos_integer()
  def id(interpreter), do: backend(interpreter).id(interpreter)

  @spec info(t()) :: Backend.info()
  def info(interpreter), do: backend(interpreter).info(interpreter)

  @spec close(t()) :: :ok
  def close(interpreter), do: backend(interpreter).close(interpreter)

  @spec describe(t()) :: String.t() | nil
  def describe(interpreter), do: backend(interpreter).describe(interpreter)

  @spec exec(t(), binary(), pid(), reference(), pid() | nil, struct() | nil) :: Backend.ran()
  def exec(interpreter, script, caller, tag, callbacks_to, call),
    do: backend(interpreter).exec(interpreter, script, caller, tag, callbacks_to, call)

  @spec run_code(t(), Backend.run(), pid(), reference(), pid() | nil, struct() | nil) ::
          Backend.queued()
  def run_code(interpreter, run, caller, tag, callbacks_to, call),
    do: backend(interpreter).run_code(interpreter, run, caller, tag, callbacks_to, call)

  @spec snapshot(t(), map(), binary() | nil, pid(), reference()) :: Backend.queued()
  def snapshot(interpreter, options, key, caller, tag),
    do: backend(interpreter).snapshot(interpreter, options, key, caller, tag)

  @spec restore(t(), binary(), binary() | nil, pid(), reference()) :: Backend.queued()
  def restore(interpreter, snapshot, key, caller, tag),
    do: backend(interpreter).restore(interpreter, snapshot, key, caller, tag)

  @spec cancel(t()) :: boolean()
  def cancel(interpreter), do: backend(interpreter).cancel(interpreter)

  @doc "Takes a checkpoint (`:take`) or rolls back to checkpoint `id`."
  @spec checkpoint(t(), :take | pos_integer()) ::
          {:ok, pos_integer() | :ok} | {:error, String.t()}
  def checkpoint(interpreter, operation),
    do: backend(interpreter).checkpoint(interpreter, operation)

  @doc "The ids of the interpreter's checkpoints, oldest first."
  @spec checkpoints(t()) :: {:ok, [pos_integer()]} | {:error, String.t()}
  def checkpoints(interpreter), do: backend(interpreter).checkpoints(interpreter)

  @doc """
  `count` interpreters with `interpreter`'s options, shell state and files,
  or the options to build copies with (a worker's).
  """
  @spec fork(t(), pos_integer()) :: {:ok, [t()]} | {:copy, struct()} | {:error, String.t()}
  def fork(interpreter, count), do: backend(interpreter).fork(interpreter, count)

  @spec stats(t()) :: {:ok, tuple()} | {:error, String.t()}
  def stats(interpreter), do: backend(interpreter).stats(interpreter)

  @file_ops [:read_file, :write_file, :list_dir, :mkdir, :remove, :rename, :stat, :chmod]

  @doc "The file API: `op` is one of #{inspect(@file_ops)}, `args` the NIF's."
  @spec file(t(), atom(), list()) :: term()
  def file(interpreter, op, args) when op in @file_ops,
    do: backend(interpreter).file(interpreter, op, args)

  @doc "How a caller waits for `job`."
  @spec wait_policy(job()) :: Backend.wait_policy()
  def wait_policy(job), do: backend(job).wait_policy(job)

  @doc "The process that answers `job` and may die without answering, if any."
  @spec answerer(job()) :: pid() | nil
  def answerer(job), do: backend(job).answerer(job)

  @doc "Keeps `job`'s session referenced by the caller until here."
  @spec keep(job()) :: :ok
  def keep(job), do: backend(job).keep(job)

  # Only a script in this VM is polled by its caller (`exec/6` answered
  # `{:call, handle, calls}`): its handle is the NIF's.

  @doc "Polls on a script its caller polls, one of whose callbacks was answered."
  @spec resume(reference()) :: Backend.ran()
  def resume(job) when is_reference(job), do: InVM.resume(job)

  @doc "Sends on a script its caller polls, to be answered by message."
  @spec unpark(reference()) :: :ok
  def unpark(job) when is_reference(job), do: InVM.unpark(job)

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

  @doc "Answers a script's callback call; anything that is not one is answered `false`."
  @spec callback_reply(term(), term()) :: boolean()
  def callback_reply(call, reply) when is_reference(call) or is_struct(call, Handle),
    do: backend(call).callback_reply(call, reply)

  def callback_reply(_call, _reply), do: false
end
