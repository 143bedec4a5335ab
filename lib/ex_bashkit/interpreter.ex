defmodule ExBashkit.Interpreter do
  @moduledoc false
  # Where a session's interpreter lives: a NIF resource in this VM (a
  # reference), or a worker process (`%ExBashkit.Worker{}`, `isolation:
  # :process`). Both answer the same calls with the same shapes, so
  # `ExBashkit.Session`, `ExBashkit.Execution` and `ExBashkit.Callbacks`
  # need not know which.

  alias ExBashkit.{Native, Worker}
  alias ExBashkit.Worker.Handle

  @type t :: reference() | Worker.t()
  @typedoc "A queued job: the NIF's handle, or a worker's job."
  @type job :: reference() | Handle.t()

  @doc "The session's id, for `inspect/2` and messages."
  @spec id(t()) :: pos_integer()
  def id(%Worker{id: id}), do: id
  def id(resource), do: Native.session_id(resource)

  @doc """
  Keeps `interpreter` referenced by the calling process until here: called
  after a job's answer, so that the session cannot be garbage collected
  while its job runs however the caller's code is compiled (a worker ends
  when its session is collected, and its owner holds no reference to it).
  """
  @spec keep(t()) :: :ok
  def keep(_interpreter), do: :ok

  @spec exec(t(), binary(), pid(), reference(), pid() | nil, struct() | nil) ::
          {:ok, job()} | {:error, String.t()}
  def exec(%Worker{} = worker, script, caller, tag, callbacks_to, call),
    do: Worker.exec(worker, script, caller, tag, callbacks_to, call)

  def exec(resource, script, caller, tag, callbacks_to, call),
    do: Native.session_exec(resource, script, caller, tag, callbacks_to, call)

  @spec snapshot(t(), map(), binary() | nil, pid(), reference()) ::
          {:ok, job()} | {:error, String.t()}
  def snapshot(%Worker{} = worker, options, key, caller, tag),
    do: Worker.snapshot(worker, options, key, caller, tag)

  def snapshot(resource, options, key, caller, tag),
    do: Native.session_snapshot(resource, options, key, caller, tag)

  @spec restore(t(), binary(), binary() | nil, pid(), reference()) ::
          {:ok, job()} | {:error, String.t()}
  def restore(%Worker{} = worker, snapshot, key, caller, tag),
    do: Worker.restore(worker, snapshot, key, caller, tag)

  def restore(resource, snapshot, key, caller, tag),
    do: Native.session_restore(resource, snapshot, key, caller, tag)

  @spec cancel(t()) :: boolean()
  def cancel(%Worker{} = worker), do: Worker.cancel(worker)
  def cancel(resource), do: Native.session_cancel(resource)

  @doc "Stops waiting for `job`: where it was (`:killed` with what it printed, for a worker)."
  @spec abandon(job()) ::
          :sent | :queued | :running | :answered | {:killed, {binary(), binary()}}
  def abandon(%Handle{} = job), do: Worker.abandon(job)
  def abandon(handle), do: Native.exec_abandon(handle)

  @spec output_so_far(job()) :: {binary(), binary()}
  def output_so_far(handle), do: Native.exec_output_so_far(handle)

  @spec callback_server(t(), pid()) :: :ok
  def callback_server(%Worker{} = worker, server), do: Worker.callback_server(worker, server)
  def callback_server(resource, server), do: Native.session_callback_server(resource, server)

  @spec callbacks_done(t(), pid() | nil) :: :ok
  def callbacks_done(%Worker{} = worker, server), do: Worker.callbacks_done(worker, server)
  def callbacks_done(resource, server), do: Native.session_callbacks_done(resource, server)

  @doc """
  Whether `pending` is a call a script of `session` made: a NIF handle, or
  one its own worker's owner sent. Anything else that reached a callback
  server is not served.
  """
  @spec call_of?(term(), t()) :: boolean()
  def call_of?(%Handle{owner: pid}, %Worker{pid: pid}), do: true
  def call_of?(pending, resource) when is_reference(resource), do: is_reference(pending)
  def call_of?(_pending, _session), do: false

  @spec callback_reply(term(), term()) :: boolean()
  def callback_reply(%Handle{} = call, reply), do: Worker.callback_reply(call, reply)
  def callback_reply(call, reply), do: Native.callback_reply(call, reply)

  @file_ops [:read_file, :write_file, :list_dir, :mkdir, :remove, :rename, :stat, :chmod]

  @doc "The file API: `op` is one of #{inspect(@file_ops)}, `args` the NIF's."
  @spec file(t(), atom(), list()) :: term()
  def file(%Worker{} = worker, op, args) when op in @file_ops, do: Worker.file(worker, op, args)

  def file(resource, op, args) when op in @file_ops,
    do: apply(Native, :"session_#{op}", [resource | args])
end
