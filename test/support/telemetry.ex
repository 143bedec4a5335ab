defmodule :telemetry do
  @moduledoc false
  # A test-only stand-in for the :telemetry package, which cannot be
  # fetched here (no Hex): attach/4, attach_many/4, detach/1 and execute/3
  # with the package's semantics (a handler that raises is detached), and
  # nothing else. ex_bashkit emits events when a module named :telemetry
  # with execute/3 is loaded, so this is what it sees in the tests.

  @key {__MODULE__, :handlers}

  def attach(id, event, fun, config), do: attach_many(id, [event], fun, config)

  def attach_many(id, events, fun, config) when is_function(fun, 4) do
    handlers = :persistent_term.get(@key, %{})

    if Map.has_key?(handlers, id) do
      {:error, :already_exists}
    else
      :persistent_term.put(@key, Map.put(handlers, id, {events, fun, config}))
    end
  end

  def detach(id) do
    handlers = :persistent_term.get(@key, %{})

    if Map.has_key?(handlers, id) do
      :persistent_term.put(@key, Map.delete(handlers, id))
    else
      {:error, :not_found}
    end
  end

  def execute(event, measurements, metadata) when is_map(measurements) and is_map(metadata) do
    for {id, {events, fun, config}} <- :persistent_term.get(@key, %{}), event in events do
      try do
        fun.(event, measurements, metadata, config)
      catch
        _kind, _reason -> detach(id)
      end
    end

    :ok
  end
end
