defmodule ExBashkit.Tool.Arguments do
  @moduledoc false
  # A model's arguments checked against the tool's own JSON schema, so the
  # schema the model was shown is the one enforced. Keys may be strings
  # (decoded JSON) or atoms (some agent libraries convert them); the answer
  # has string keys. Problems come back as sentences a model can act on.
  # Types this does not know (a tool of the caller's own may use any JSON
  # schema) are left for the tool to check.

  @spec validate(map(), map()) :: {:ok, %{String.t() => term()}} | {:error, String.t()}
  def validate(schema, args) when is_map(args) do
    properties = schema["properties"] || %{}
    args = Map.new(args, fn {key, value} -> {to_string(key), value} end)

    with :ok <- known(args, properties),
         :ok <- present(args, schema["required"] || []) do
      Enum.reduce_while(args, {:ok, args}, fn {key, value}, ok ->
        case check(value, properties[key]) do
          :ok -> {:cont, ok}
          {:ok, coerced} -> {:cont, {:ok, Map.put(elem(ok, 1), key, coerced)}}
          {:error, expected} -> {:halt, {:error, bad(key, expected, value)}}
        end
      end)
    end
  end

  def validate(_schema, args),
    do: {:error, "The arguments must be a JSON object; got #{inspect(args, limit: 5)}."}

  defp known(args, properties) do
    case Enum.reject(Map.keys(args), &Map.has_key?(properties, &1)) do
      [] ->
        :ok

      unknown ->
        {:error,
         "Unknown argument#{plural(unknown)} #{names(unknown)}; " <>
           "this tool takes: #{names(Map.keys(properties))}."}
    end
  end

  defp present(args, required) do
    case Enum.reject(required, &Map.has_key?(args, &1)) do
      [] -> :ok
      missing -> {:error, "Missing required argument#{plural(missing)} #{names(missing)}."}
    end
  end

  defp check(value, %{"enum" => values} = spec) do
    if value in values, do: :ok, else: {:error, expected(spec)}
  end

  defp check(value, %{"type" => "string"}) when is_binary(value), do: :ok
  defp check(value, %{"type" => "boolean"}) when is_boolean(value), do: :ok

  defp check(value, %{"type" => "integer"} = spec) when is_integer(value),
    do: if(value >= Map.get(spec, "minimum", value), do: :ok, else: {:error, expected(spec)})

  # JSON decoders may hand back 5.0 for 5.
  defp check(value, %{"type" => "integer"} = spec) when is_float(value) and value == trunc(value),
    do: with(:ok <- check(trunc(value), spec), do: {:ok, trunc(value)})

  defp check(_value, %{"type" => type} = spec) when type in ["string", "boolean", "integer"],
    do: {:error, expected(spec)}

  defp check(_value, _spec), do: :ok

  defp expected(%{"enum" => values}), do: "one of " <> Enum.map_join(values, ", ", &inspect/1)
  defp expected(%{"type" => "integer", "minimum" => min}), do: "an integer ≥ #{min}"
  defp expected(%{"type" => "integer"}), do: "an integer"
  defp expected(%{"type" => "boolean"}), do: "true or false"
  defp expected(%{"type" => "string"}), do: "a string"

  defp bad(key, expected, value),
    do:
      "Argument \"#{key}\" must be #{expected}; got #{inspect(value, limit: 5, printable_limit: 40)}."

  defp names(keys), do: keys |> Enum.sort() |> Enum.map_join(", ", &~s("#{&1}"))
  defp plural([_]), do: ""
  defp plural(_), do: "s"
end
