defmodule ExBashkit.Session.Fork do
  @moduledoc false
  # The body of `ExBashkit.Session.fork/2`. A session in this VM forks in
  # its NIF: the copies share its files until they change them
  # (native/ex_bashkit/src/fork.rs). A worker's files are in its own
  # process, so its copies are new workers with its options, each given
  # a snapshot of it.

  alias ExBashkit.{Caller, Interpreter, Telemetry}

  @spec run(ExBashkit.Session.t(), Interpreter.t(), pos_integer()) ::
          {:ok, [ExBashkit.Session.t()]} | {:error, String.t()}
  def run(session, resource, count) do
    Telemetry.span(
      [:ex_bashkit, :fork],
      %{count: count},
      %{session: session},
      fn -> copies(resource, count) end,
      &{%{}, %{status: elem(&1, 0)}}
    )
    |> case do
      {:ok, interpreters} ->
        # The same callbacks, approval and secrets: functions of the host,
        # which the copies call as the original does.
        {:ok, Enum.map(interpreters, &%{session | resource: &1, id: Interpreter.id(&1)})}

      {:error, _} = error ->
        error
    end
  end

  defp copies(resource, count) do
    case Interpreter.fork(resource, count) do
      {:copy, native} -> copied(resource, native, count)
      forked -> forked
    end
  end

  defp copied(resource, native, count) do
    tag = make_ref()
    everything = %{exclude_filesystem: false, exclude_functions: false}
    # Its profile's work is in the snapshot: it is not run again.
    native = %{native | profile: nil}

    with {:ok, snapshot} <-
           resource |> Interpreter.snapshot(everything, nil, self(), tag) |> Caller.reply(tag) do
      Enum.reduce_while(1..count, {:ok, []}, fn _, {:ok, made} ->
        case restored(native, snapshot) do
          {:ok, copy} ->
            {:cont, {:ok, [copy | made]}}

          {:error, message} ->
            Enum.each(made, &Interpreter.close/1)
            {:halt, {:error, "cannot fork the session: #{message}"}}
        end
      end)
      |> case do
        {:ok, made} -> {:ok, Enum.reverse(made)}
        error -> error
      end
    end
  end

  defp restored(native, snapshot) do
    with {:ok, copy} <- Interpreter.start(native, :process, nil) do
      tag = make_ref()

      case copy |> Interpreter.restore(snapshot, nil, self(), tag) |> Caller.reply(tag) do
        {:ok, :ok} ->
          {:ok, copy}

        {:error, message} ->
          Interpreter.close(copy)
          {:error, message}
      end
    end
  end
end
