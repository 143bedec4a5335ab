# Prints lib/'s files in layers: each file depends only on files of lower
# layers (compile, export and runtime references, from `mix xref graph`).
# ARCHITECTURE.md shows its output. Run with `mix run scripts/module_layers.exs`.

# Elixir 1.14's xref writes xref_graph.dot in the project's directory.
dot = "xref_graph.dot"
ExUnit.CaptureIO.capture_io(fn -> Mix.Task.run("xref", ["graph", "--format", "dot"]) end)

edges =
  for line <- File.stream!(dot),
      [_, from, to] <- [Regex.run(~r/"([^"]+)" -> "([^"]+)"/, line) || [nil, nil, nil]],
      from != nil and String.starts_with?(to, "lib/"),
      reduce: %{} do
    edges -> Map.update(edges, from, [to], &[to | &1])
  end

File.rm(dot)
files = Path.wildcard("lib/**/*.ex")

# The length of the longest chain of references below a file (acyclic:
# scripts/test.sh fails on any cycle).
layer = fn layer, file, memo ->
  case memo do
    %{^file => depth} ->
      {depth, memo}

    _ ->
      {depths, memo} =
        Enum.map_reduce(Map.get(edges, file, []) -- [file], memo, &layer.(layer, &1, &2))

      depth = if depths == [], do: 0, else: Enum.max(depths) + 1
      {depth, Map.put(memo, file, depth)}
  end
end

{_, layers} = Enum.map_reduce(files, %{}, &layer.(layer, &1, &2))

layers
|> Enum.group_by(fn {_file, depth} -> depth end, fn {file, _} -> file end)
|> Enum.sort()
|> Enum.each(fn {depth, files} ->
  names = files |> Enum.map(&String.replace_prefix(&1, "lib/ex_bashkit/", "")) |> Enum.sort()

  lines =
    Enum.chunk_while(
      names,
      [],
      fn name, line ->
        if Enum.join([name | line], " ") |> String.length() > 68,
          do: {:cont, Enum.reverse(line), [name]},
          else: {:cont, [name | line]}
      end,
      &{:cont, Enum.reverse(&1), []}
    )

  [first | rest] = Enum.map(lines, &Enum.join(&1, " "))
  IO.puts("#{String.pad_leading(Integer.to_string(depth), 2)}  #{first}")
  Enum.each(rest, &IO.puts("    " <> &1))
end)
