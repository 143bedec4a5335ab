defmodule ExBashkit.Interpreter.Backend do
  @moduledoc false
  # Where a session's interpreter runs, as a behaviour: in this VM
  # (`ExBashkit.Interpreter.InVM`, a NIF resource) or in a worker process
  # (`ExBashkit.Worker`, `isolation: :process`). `ExBashkit.Interpreter`
  # picks the implementation, in one place; every caller goes through it.

  @typedoc "The interpreter: a NIF resource, or a worker session."
  @type interpreter :: term()

  @typedoc "A queued job, or a script's pending callback call."
  @type handle :: term()

  @typedoc "Where an abandoned job was, with what it printed if it had begun."
  @type whereabouts ::
          :sent
          | :queued
          | :answered
          | {:running, {binary(), binary()}}
          | {:killed, {binary(), binary()}}

  @type queued :: {:ok, handle()} | {:error, String.t()}

  @callback id(interpreter()) :: pos_integer()
  @callback exec(interpreter(), binary(), pid(), reference(), pid() | nil, struct() | nil) ::
              queued()
  @callback snapshot(interpreter(), map(), binary() | nil, pid(), reference()) :: queued()
  @callback restore(interpreter(), binary(), binary() | nil, pid(), reference()) :: queued()
  @callback cancel(interpreter()) :: boolean()
  @callback abandon(handle()) :: whereabouts()
  @callback callback_server(interpreter(), pid()) :: :ok
  @callback callbacks_done(interpreter(), pid() | nil) :: :ok
  @callback call_of?(handle(), interpreter()) :: boolean()
  @callback callback_reply(handle(), term()) :: boolean()
  @callback file(interpreter(), atom(), list()) :: term()
end
