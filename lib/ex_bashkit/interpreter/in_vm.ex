defmodule ExBashkit.Interpreter.InVM do
  @moduledoc false
  # A session's interpreter in this VM: a NIF resource, its scripts run on
  # the NIF's interpreter threads (native/ex_bashkit/src/).
  #
  # The NIFs answer badarg for a reference that is not a live session
  # resource (every other argument has been checked by then): the calls a
  # session's public functions make say which argument it was.

  @behaviour ExBashkit.Interpreter.Backend

  alias ExBashkit.Native

  @enforce_keys [:resource]
  defstruct [:resource]

  @type t :: %__MODULE__{resource: reference()}

  # How long past its :timeout_ms a caller waits for a script that has not
  # stopped by itself: an abandoned script computes on in the VM, so it is
  # given time to stop. Its answer usually comes within microseconds, so
  # the caller spins for it rather than yield.
  @wait_policy %{margin_ms: 500, yield?: false}

  @light_entries 64

  @doc """
  An interpreter for `native`: one prepared ahead for `prepared`'s
  generation (`ExBashkit.Session.Prepared`), when one is ready, else a new one.
  """
  @spec start(struct(), pos_integer() | nil) :: {:ok, t()} | {:error, String.t()}
  def start(native, prepared) when prepared != nil do
    case Native.session_take(prepared) do
      {:ok, resource} -> {:ok, %__MODULE__{resource: resource}}
      :empty -> start(native, nil)
    end
  end

  def start(native, nil) do
    built =
      if light?(native),
        do: Native.session_new(native),
        else: Native.session_new_dirty(native)

    with {:ok, resource} <- built, do: {:ok, %__MODULE__{resource: resource}}
  end

  @doc """
  Whether a session with these options (`%ExBashkit.Session.Options{}`)
  builds in tens of microseconds, on a normal scheduler: no host mounts
  (they touch the disk), no `:profile` to run, and few enough entries that
  building cannot hold the scheduler long. Others are built on a dirty
  scheduler.
  """
  @spec light?(struct()) :: boolean()
  def light?(%{mounts: [], profile: nil} = native) do
    patterns = with {:only, patterns} <- native.allow_net, do: patterns, else: (_ -> [])

    [native.env, native.builtins, native.virtual_fs, native.python, patterns]
    |> Enum.map(&length/1)
    |> Enum.sum()
    |> Kernel.<=(@light_entries)
  end

  def light?(_native), do: false

  @impl true
  def id(%__MODULE__{resource: resource}), do: Native.session_id(resource)

  @impl true
  def info(_interpreter), do: %{isolation: :none, os_pid: nil, layers: []}

  @impl true
  def close(%__MODULE__{resource: resource}) do
    Native.session_close(resource)
    :ok
  end

  @impl true
  def describe(_interpreter), do: nil

  @impl true
  # The caller may run the script's first poll itself, on a dirty
  # scheduler: most scripts end there, answered with no thread woken
  # (`{:ran, outcome}`). One that calls back is handed back with its calls
  # (`{:call, handle, calls}`), and polled on here once one is answered
  # (`resume/1`).
  def exec(%__MODULE__{resource: resource}, script, caller, tag, callbacks_to, call) do
    Native.session_exec_inline(resource, script, caller, tag, callbacks_to, call)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @doc "Polls on a script parked by `exec/6` (`{:call, handle, calls}`) once a call is answered."
  @spec resume(reference()) :: ExBashkit.Interpreter.Backend.ran()
  def resume(handle), do: Native.session_exec_resume(handle)

  @doc "Sends a parked script on to its interpreter thread, answered by message."
  @spec unpark(reference()) :: :ok
  def unpark(handle), do: Native.session_exec_unpark(handle)

  @impl true
  def run_code(_interpreter, _run, _caller, _tag, _callbacks_to, _call),
    do: {:error, "a code run needs a worker (isolation: :process)"}

  @impl true
  def snapshot(%__MODULE__{resource: resource}, options, key, caller, tag) do
    Native.session_snapshot(resource, options, key, caller, tag)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def restore(%__MODULE__{resource: resource}, snapshot, key, caller, tag) do
    Native.session_restore(resource, snapshot, key, caller, tag)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def fork(%__MODULE__{resource: resource}, count) do
    tag = make_ref()

    # The NIF answers every job it accepted; the job holds the session.
    with {:ok, _job} <- Native.session_fork(resource, count, self(), tag),
         {:ok, resources} <- receive(do: ({^tag, outcome} -> outcome)) do
      {:ok, Enum.map(resources, &%__MODULE__{resource: &1})}
    end
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def checkpoint(%__MODULE__{resource: resource}, operation) do
    tag = make_ref()

    with {:ok, _job} <- Native.session_checkpoint(resource, operation, self(), tag),
         do: receive(do: ({^tag, outcome} -> outcome))
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def checkpoints(%__MODULE__{resource: resource}) do
    {:ok, Native.session_checkpoints(resource)}
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def cancel(%__MODULE__{resource: resource}) do
    Native.session_cancel(resource)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def stats(%__MODULE__{resource: resource}) do
    {:ok, Native.session_stats(resource)}
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def file(%__MODULE__{resource: resource}, op, args) do
    apply(Native, :"session_#{op}", [resource | args])
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def wait_policy(_job), do: @wait_policy

  # The NIF answers every job it accepted, also one whose session is gone.
  @impl true
  def answerer(_job), do: nil

  @impl true
  def keep(_job), do: :ok

  # A script that began keeps computing (nothing can stop it in the VM):
  # what it printed so far is its caller's.
  @impl true
  def abandon(handle) do
    case Native.exec_abandon(handle) do
      :running -> {:running, Native.exec_output_so_far(handle)}
      whereabouts -> whereabouts
    end
  end

  @impl true
  def callback_server(%__MODULE__{resource: resource}, server),
    do: Native.session_callback_server(resource, server)

  @impl true
  def callbacks_done(%__MODULE__{resource: resource}, server),
    do: Native.session_callbacks_done(resource, server)

  # The NIF's calls are references; anything else was not sent by it.
  @impl true
  def call_of?(pending, %__MODULE__{}), do: is_reference(pending)

  @impl true
  def callback_reply(call, reply), do: Native.callback_reply(call, reply)

  defp not_a_session!(resource, stacktrace) do
    reraise ArgumentError,
            "expected an ExBashkit.Session (from ExBashkit.Session.new/1), got a struct " <>
              "holding #{inspect(resource)}, which is not a session",
            stacktrace
  end
end
