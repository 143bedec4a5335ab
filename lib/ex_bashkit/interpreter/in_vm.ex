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

  @impl true
  def id(resource), do: Native.session_id(resource)

  @impl true
  def exec(resource, script, caller, tag, callbacks_to, call) do
    Native.session_exec(resource, script, caller, tag, callbacks_to, call)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def snapshot(resource, options, key, caller, tag) do
    Native.session_snapshot(resource, options, key, caller, tag)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def restore(resource, snapshot, key, caller, tag) do
    Native.session_restore(resource, snapshot, key, caller, tag)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  @impl true
  def cancel(resource) do
    Native.session_cancel(resource)
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

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
  def callback_server(resource, server), do: Native.session_callback_server(resource, server)

  @impl true
  def callbacks_done(resource, server), do: Native.session_callbacks_done(resource, server)

  # The NIF's calls are references; anything else was not sent by it.
  @impl true
  def call_of?(pending, resource), do: is_reference(pending) and is_reference(resource)

  @impl true
  def callback_reply(call, reply), do: Native.callback_reply(call, reply)

  @impl true
  def file(resource, op, args) do
    apply(Native, :"session_#{op}", [resource | args])
  rescue
    ArgumentError -> not_a_session!(resource, __STACKTRACE__)
  end

  defp not_a_session!(resource, stacktrace) do
    reraise ArgumentError,
            "expected an ExBashkit.Session (from ExBashkit.Session.new/1), got a struct " <>
              "holding #{inspect(resource)}, which is not a session",
            stacktrace
  end
end
