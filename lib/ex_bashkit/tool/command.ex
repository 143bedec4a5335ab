defmodule ExBashkit.Tool.Command do
  @moduledoc false
  # An application's tools as bash commands, one per first segment of
  # their names: `orders.list` and `orders.get` are `orders list` and
  # `orders get`. Arguments come as flags (`--customer acme`, `--limit=5`,
  # `--dry-run` for a boolean, `--no-dry-run`), or, with no flags, as a
  # JSON object on stdin. This is also how JavaScript's
  # `tools.orders.list({...})` arrives (crates/worker/src/js.rs): the path
  # as arguments, the object as stdin. The value is printed as JSON.

  alias ExBashkit.{JSON, Result}
  alias ExBashkit.Tool.Call

  @doc "The `{command, fun}` builtins of `tools`, one per first segment."
  @spec builtins([map()]) :: [{String.t(), (map() -> Result.t())}]
  def builtins(tools) do
    tools
    |> Enum.group_by(&hd(path(&1)))
    |> Enum.map(fn {command, group} ->
      by_path = Map.new(group, &{path(&1), &1})
      {command, fn request -> run(command, by_path, request) end}
    end)
  end

  @doc "A tool's name as its segments."
  @spec path(map()) :: [String.t()]
  def path(tool), do: String.split(tool.name, ".")

  defp run(command, by_path, %{args: argv} = request) do
    case find(by_path, [command], argv) do
      {:ok, tool, flags} ->
        if "--help" in flags or "-h" in flags,
          do: %Result{stdout: help([tool]), exit_code: 0},
          else: call(tool, flags, request[:stdin] || "")

      :error ->
        usage(command, by_path, argv)
    end
  end

  # The longest tool path the arguments start with.
  defp find(by_path, path, rest) do
    deeper =
      case rest do
        [word | more] ->
          if prefix?(by_path, path ++ [word]), do: find(by_path, path ++ [word], more)

        [] ->
          nil
      end

    cond do
      deeper && deeper != :error -> deeper
      Map.has_key?(by_path, path) -> {:ok, Map.fetch!(by_path, path), rest}
      true -> :error
    end
  end

  defp prefix?(by_path, path), do: Enum.any?(Map.keys(by_path), &List.starts_with?(&1, path))

  # Flags, or else a JSON object on stdin: a command in a script whose
  # own stdin is something else (ExBashkit.Code.run/2's input) still
  # takes its flags.
  defp call(tool, flags, stdin) do
    with {:ok, from_flags} <- flags(flags, tool.parameters["properties"] || %{}, %{}),
         {:ok, args} <- if(flags == [], do: stdin_args(stdin), else: {:ok, from_flags}) do
      case Call.execute(tool, args, :command) do
        {:ok, value} -> %Result{stdout: JSON.encode!(value) <> "\n", exit_code: 0}
        {:error, message} -> failed(tool, message, 1)
      end
    else
      {:error, message} -> failed(tool, message, 2)
    end
  end

  defp failed(tool, message, code),
    do: %Result{stderr: "#{Enum.join(path(tool), " ")}: #{message}\n", exit_code: code}

  defp stdin_args(stdin) do
    if String.trim(stdin) == "" do
      {:ok, %{}}
    else
      case JSON.decode(stdin) do
        {:ok, args} when is_map(args) -> {:ok, args}
        {:ok, nil} -> {:ok, %{}}
        {:ok, _other} -> {:error, "stdin must be a JSON object of arguments"}
        {:error, why} -> {:error, "stdin is not JSON: #{why}"}
      end
    end
  end

  defp flags([], _properties, acc), do: {:ok, acc}

  defp flags(["--" <> flag | rest], properties, acc) do
    {name, inline} =
      case String.split(flag, "=", parts: 2) do
        [name, value] -> {name, value}
        [name] -> {name, nil}
      end

    key = String.replace(name, "-", "_")
    negated = String.replace_prefix(key, "no_", "")

    cond do
      inline == nil and boolean?(properties[key]) ->
        flags(rest, properties, Map.put(acc, key, true))

      inline == nil and key != negated and boolean?(properties[negated]) ->
        flags(rest, properties, Map.put(acc, negated, false))

      inline != nil ->
        with {:ok, value} <- coerce(inline, properties[key], name),
             do: flags(rest, properties, Map.put(acc, key, value))

      rest == [] ->
        {:error, "--#{name} needs a value"}

      true ->
        [value | rest] = rest

        with {:ok, value} <- coerce(value, properties[key], name),
             do: flags(rest, properties, Map.put(acc, key, value))
    end
  end

  defp flags([word | _], _properties, _acc),
    do: {:error, "unexpected argument #{inspect(word)}; arguments are --name value flags"}

  defp boolean?(%{"type" => "boolean"}), do: true
  defp boolean?(_spec), do: false

  # A flag's text as the schema's type wants it; a string otherwise.
  defp coerce(text, %{"type" => type}, name)
       when type in ["integer", "number", "boolean", "array", "object"] do
    case JSON.decode(text) do
      {:ok, value} -> {:ok, value}
      {:error, _} -> {:error, "--#{name} must be #{type} (JSON), got #{inspect(text)}"}
    end
  end

  defp coerce(text, _spec, _name), do: {:ok, text}

  defp usage(command, by_path, argv) do
    known = by_path |> Map.values() |> Enum.sort_by(& &1.name)

    what =
      if argv == [], do: "a subcommand is needed", else: "unknown subcommand #{inspect(hd(argv))}"

    %Result{stderr: "#{command}: #{what}\n\n" <> help(known), exit_code: 2}
  end

  defp help(tools) do
    Enum.map_join(tools, "\n", fn tool ->
      properties = tool.parameters["properties"] || %{}
      required = tool.parameters["required"] || []

      flags =
        for {name, spec} <- Enum.sort(properties) do
          type = spec["type"] || "json"
          need = if name in required, do: " (required)", else: ""
          "  --#{String.replace(name, "_", "-")} #{type}#{need}  #{spec["description"]}\n"
        end

      "#{Enum.join(path(tool), " ")} — #{tool.description}\n#{flags}"
    end)
  end
end
