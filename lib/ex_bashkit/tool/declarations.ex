defmodule ExBashkit.Tool.Declarations do
  @moduledoc false
  # Tools as the API a model's program calls (`ExBashkit.Tool.typescript/1`
  # and `python/1`): each tool a function under its dotted name, its
  # arguments typed from its JSON schema, its description a doc comment.
  # Tools are matched as structs of any module: ExBashkit.Tool depends on
  # this module, not the other way.

  @doc "TypeScript declarations of `tools` as the global `tools` object."
  @spec typescript([map()]) :: String.t()
  def typescript(tools) do
    body =
      tools
      |> tree()
      |> ts_members(1)

    "declare const tools: {\n" <> body <> "};\n"
  end

  @doc "Python stubs of `tools` as the global `tools` object."
  @spec python([map()]) :: String.t()
  def python(tools) do
    "from typing import Any, Literal, TypedDict\n\n" <>
      (tools |> tree() |> py_classes("tools", 0)) <>
      "\n"
  end

  # Tools by the parts of their dotted names: %{"orders" => %{"list" => tool}}.
  defp tree(tools) do
    Enum.reduce(tools, %{}, fn %{__struct__: _, name: name} = tool, tree ->
      put_in(tree, Enum.map(String.split(name, "."), &Access.key(&1, %{})), tool)
    end)
  end

  ## TypeScript

  defp ts_members(tree, depth) do
    pad = String.duplicate("  ", depth)

    Enum.map_join(Enum.sort(tree), "", fn
      {name, %{__struct__: _} = tool} ->
        doc(tool.description, pad) <>
          "#{pad}#{ts_key(name)}(args#{ts_optional(tool.parameters)}: #{ts_type(tool.parameters, depth)}): Promise<unknown>;\n"

      {name, %{} = group} ->
        "#{pad}#{ts_key(name)}: {\n" <> ts_members(group, depth + 1) <> "#{pad}};\n"
    end)
  end

  defp ts_optional(schema), do: if(Map.get(schema, "required", []) == [], do: "?", else: "")

  defp ts_key(name),
    do: if(Regex.match?(~r/^[A-Za-z_$][\w$]*$/, name), do: name, else: inspect(name))

  defp doc(nil, _pad), do: ""
  defp doc("", _pad), do: ""

  defp doc(text, pad) do
    lines = text |> String.replace("*/", "*\\/") |> String.split("\n")
    "#{pad}/**\n" <> Enum.map_join(lines, "", &"#{pad} * #{&1}\n") <> "#{pad} */\n"
  end

  defp ts_type(%{"enum" => values}, _depth), do: Enum.map_join(values, " | ", &literal/1)
  defp ts_type(%{"const" => value}, _depth), do: literal(value)

  defp ts_type(%{"anyOf" => schemas}, depth), do: ts_union(schemas, depth)
  defp ts_type(%{"oneOf" => schemas}, depth), do: ts_union(schemas, depth)

  defp ts_type(%{"type" => types} = schema, depth) when is_list(types),
    do: Enum.map_join(types, " | ", &ts_type(Map.put(schema, "type", &1), depth))

  defp ts_type(%{"type" => "string"}, _depth), do: "string"
  defp ts_type(%{"type" => type}, _depth) when type in ["integer", "number"], do: "number"
  defp ts_type(%{"type" => "boolean"}, _depth), do: "boolean"
  defp ts_type(%{"type" => "null"}, _depth), do: "null"

  defp ts_type(%{"type" => "array"} = schema, depth) do
    case Map.get(schema, "items") do
      nil -> "unknown[]"
      items -> "Array<#{ts_type(items, depth)}>"
    end
  end

  defp ts_type(%{"type" => "object", "properties" => properties} = schema, depth) do
    required = Map.get(schema, "required", [])
    pad = String.duplicate("  ", depth + 1)

    fields =
      Enum.map_join(Enum.sort(properties), "", fn {name, property} ->
        mark = if name in required, do: "", else: "?"

        doc(Map.get(property, "description"), pad) <>
          "#{pad}#{ts_key(name)}#{mark}: #{ts_type(property, depth + 1)};\n"
      end)

    "{\n" <> fields <> String.duplicate("  ", depth) <> "}"
  end

  defp ts_type(%{"type" => "object"}, _depth), do: "Record<string, unknown>"
  defp ts_type(_schema, _depth), do: "unknown"

  defp ts_union(schemas, depth), do: Enum.map_join(schemas, " | ", &ts_type(&1, depth))

  defp literal(value) when is_binary(value), do: ExBashkit.JSON.encode!(value)
  defp literal(nil), do: "null"
  defp literal(value), do: to_string(value)

  ## Python

  defp py_classes(tree, class, depth) do
    pad = String.duplicate("    ", depth)

    members =
      Enum.map_join(Enum.sort(tree), "\n", fn
        {name, %{__struct__: _} = tool} -> py_function(name, tool, depth + 1)
        {name, %{} = group} -> py_classes(group, name, depth + 1)
      end)

    "#{pad}class #{class}:\n" <> members
  end

  defp py_function(name, tool, depth) do
    pad = String.duplicate("    ", depth)
    schema = tool.parameters
    required = Map.get(schema, "required", [])
    properties = schema |> Map.get("properties", %{}) |> Enum.sort()
    {needed, optional} = Enum.split_with(properties, fn {key, _} -> key in required end)

    params =
      Enum.map(needed, fn {key, property} -> "#{key}: #{py_type(property)}" end) ++
        Enum.map(optional, fn {key, property} -> "#{key}: #{py_type(property)} | None = None" end)

    signature = if params == [], do: "", else: "*, " <> Enum.join(params, ", ")
    docstring = tool.description |> to_string() |> String.replace(~s("""), ~s(\\"\\"\\"))

    "#{pad}@staticmethod\n#{pad}def #{name}(#{signature}) -> Any:\n" <>
      "#{pad}    \"\"\"#{docstring}\"\"\"\n#{pad}    ...\n"
  end

  defp py_type(%{"enum" => values}), do: "Literal[#{Enum.map_join(values, ", ", &literal/1)}]"

  defp py_type(%{"type" => types} = schema) when is_list(types),
    do: Enum.map_join(types, " | ", &py_type(Map.put(schema, "type", &1)))

  defp py_type(%{"type" => "string"}), do: "str"
  defp py_type(%{"type" => "integer"}), do: "int"
  defp py_type(%{"type" => "number"}), do: "float"
  defp py_type(%{"type" => "boolean"}), do: "bool"
  defp py_type(%{"type" => "null"}), do: "None"

  defp py_type(%{"type" => "array"} = schema),
    do: "list[#{schema |> Map.get("items", %{}) |> py_type()}]"

  defp py_type(%{"type" => "object"}), do: "dict[str, Any]"
  defp py_type(_schema), do: "Any"
end
