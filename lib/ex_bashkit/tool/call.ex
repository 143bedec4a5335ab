defmodule ExBashkit.Tool.Call do
  @moduledoc false
  # One call of an application's tool (ExBashkit.Tool.new/1), whichever
  # surface it came from: the model's tool call, a bash command, or a
  # JavaScript or Python function (which arrive as the command). The same
  # steps on each: the arguments checked against the tool's JSON schema,
  # the tool's :approve, the function, one telemetry span.

  alias ExBashkit.{Telemetry, Tool.Arguments}

  @type outcome :: {:ok, term()} | {:error, String.t()}

  @doc "Runs `tool` (a map with the fields of an ExBashkit.Tool) on `args`."
  @spec execute(map(), map(), :model | :command) :: outcome()
  def execute(tool, args, surface) do
    Telemetry.span(
      [:ex_bashkit, :tool],
      %{name: tool.name, surface: surface},
      fn ->
        with {:ok, args} <- Arguments.validate(tool.parameters, args),
             :ok <- approved(tool, args) do
          called(tool, args)
        end
      end,
      fn outcome -> {%{}, %{status: elem(outcome, 0)}} end
    )
  end

  defp approved(%{approve: nil}, _args), do: :ok

  defp approved(%{approve: approve, name: name}, args) do
    case approve.(args) do
      :ok -> :ok
      {:deny, reason} when is_binary(reason) -> {:error, "denied: #{reason}"}
      other -> {:error, "denied: the tool's :approve answered #{inspect(other, limit: 5)}"}
    end
  rescue
    exception -> {:error, "denied: #{name}'s :approve raised #{Exception.message(exception)}"}
  end

  defp called(%{call: call, name: name}, args) do
    case call.(args) do
      {:ok, value} ->
        json(value, name)

      {:error, message} when is_binary(message) ->
        {:error, message}

      {:error, reason} ->
        {:error, inspect(reason, limit: 20)}

      other ->
        {:error,
         "#{name} answered #{inspect(other, limit: 5)}, not {:ok, value} or {:error, message}"}
    end
  rescue
    exception -> {:error, "#{name} failed: #{Exception.message(exception)}"}
  end

  # Every surface gets JSON: a value JSON cannot carry is the tool's bug,
  # said as such rather than crashing the caller.
  defp json(value, name) do
    case ExBashkit.JSON.encode(value) do
      {:ok, _} -> {:ok, value}
      {:error, why} -> {:error, "#{name} returned a value JSON cannot carry: #{why}"}
    end
  end
end
