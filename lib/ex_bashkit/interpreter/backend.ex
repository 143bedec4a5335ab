defmodule ExBashkit.Interpreter.Backend do
  @moduledoc false
  # Where a session's interpreter runs, as a behaviour: in this VM
  # (`ExBashkit.Interpreter.InVM`, a NIF resource) or in a worker process
  # (`ExBashkit.Worker`, `isolation: :process`). A session holds the
  # backend's struct, `%ExBashkit.Session{resource: %InVM{} | %Worker{}}`;
  # `ExBashkit.Interpreter` dispatches on it, in one place, and nothing
  # else asks which backend it is.

  @typedoc "The interpreter: the backend's struct."
  @type interpreter :: struct()

  @typedoc "A queued job, or a script's pending callback call."
  @type handle :: term()

  @typedoc "Where an abandoned job was, with what it printed if it had begun."
  @type whereabouts ::
          :sent
          | :queued
          | :answered
          | {:wait, pos_integer()}
          | {:running, {binary(), binary()}}
          | {:killed, {binary(), binary()}}

  @type queued :: {:ok, handle()} | {:error, String.t()}

  @typedoc """
  A script queued, or already run by the call itself: `{:ran, outcome}`
  holds what its answer `{tag, outcome}` would have.
  """
  @type ran ::
          queued()
          | {:ran, {:ok, term()} | {:error, term()}}
          | {:call, handle(), [tuple()]}

  @typedoc """
  How a caller waits for a job: how long past the job's `timeout_ms` before
  it gives up (`margin_ms`), and whether it yields its scheduler between
  polls (`yield?`) or spins for an answer expected within microseconds.
  """
  @type wait_policy :: %{margin_ms: non_neg_integer(), yield?: boolean()}

  @typedoc "What `ExBashkit.Session.info/1` reports."
  @type info :: %{isolation: :none | :process, os_pid: pos_integer() | nil, layers: [atom()]}

  # The session.
  @callback id(interpreter()) :: pos_integer()
  @callback info(interpreter()) :: info()
  @doc "Ends the interpreter now; when this returns, nothing of it runs."
  @callback close(interpreter()) :: :ok
  @doc "What `inspect/1` adds after the session's id (`in process 123`), if anything."
  @callback describe(interpreter()) :: String.t() | nil

  # Its work.
  @callback exec(interpreter(), binary(), pid(), reference(), pid() | nil, struct() | nil) ::
              ran()
  @typedoc "A code run: the language, the input as JSON, the grants."
  @type run :: {:javascript | :typescript | :python | :monty, binary(), [atom()]}
  @doc "Runs `execute(input)` of the session's code; answered as `exec/6`'s, with the engine's outcome."
  @callback run_code(interpreter(), run(), pid(), reference(), pid() | nil, struct() | nil) ::
              queued()
  @callback snapshot(interpreter(), map(), binary() | nil, pid(), reference()) :: queued()
  @callback restore(interpreter(), binary(), binary() | nil, pid(), reference()) :: queued()
  # `count` new interpreters with its options, shell state and files; a
  # backend that cannot share its files gives the options to build copies
  # with, which are then given a snapshot.
  # Takes a checkpoint (`:take`, answering its id) or rolls back to one.
  @callback checkpoint(interpreter(), :take | pos_integer()) ::
              {:ok, pos_integer() | :ok} | {:error, String.t()}
  @callback checkpoints(interpreter()) :: {:ok, [pos_integer()]} | {:error, String.t()}
  @callback fork(interpreter(), pos_integer()) ::
              {:ok, [interpreter()]} | {:copy, struct()} | {:error, String.t()}
  @callback cancel(interpreter()) :: boolean()
  # What its scripts cost, summed: `{wall_us, cpu_us, peak_memory_bytes,
  # commands, runs}`.
  @callback stats(interpreter()) :: {:ok, tuple()} | {:error, String.t()}
  @callback file(interpreter(), atom(), list()) :: term()

  # A job, as its caller waits for it.
  @callback wait_policy(handle()) :: wait_policy()
  @doc "The process that answers the job and may die without answering, if any."
  @callback answerer(handle()) :: pid() | nil
  @doc "Keeps the session referenced by the caller until here (see `ExBashkit.Worker`)."
  @callback keep(handle()) :: :ok
  @callback abandon(handle()) :: whereabouts()

  # Callbacks of a running script.
  @callback callback_server(interpreter(), pid()) :: :ok
  @callback callbacks_done(interpreter(), pid() | nil) :: :ok
  @callback call_of?(handle(), interpreter()) :: boolean()
  @callback callback_reply(handle(), term()) :: boolean()
end
