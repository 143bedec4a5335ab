# bench/compare.sh's table: from its results (rev, round, figure, µs per
# line), each figure's median and range per side, and B's median over A's.
#
#   elixir bench/compare_summary.exs RESULTS.tsv A B

[path, a, b] = System.argv()

rows =
  path
  |> File.read!()
  |> String.split("\n", trim: true)
  |> Enum.map(&String.split(&1, "\t"))
  |> Enum.map(fn [rev, _round, figure, value] ->
    {value, ""} = Float.parse(value)
    {rev, figure, value}
  end)

median = fn values ->
  sorted = Enum.sort(values)
  Enum.at(sorted, div(length(sorted), 2))
end

format = fn value -> :erlang.float_to_binary(value / 1, decimals: 1) end

cell = fn values ->
  "#{format.(median.(values))} (#{format.(Enum.min(values))}–#{format.(Enum.max(values))})"
end

figures = rows |> Enum.map(&elem(&1, 1)) |> Enum.uniq()
IO.puts("\n| figure (µs, p50) | #{a} | #{b} | #{b} / #{a} |")
IO.puts("|---|---|---|---|")

for figure <- figures do
  side = fn rev -> for {^rev, ^figure, value} <- rows, do: value end

  case {side.(a), side.(b)} do
    {[], values} ->
      IO.puts("| #{figure} | — | #{cell.(values)} | — |")

    {values, []} ->
      IO.puts("| #{figure} | #{cell.(values)} | — | — |")

    {old, new} ->
      ratio = median.(new) / median.(old)
      flag = if ratio > 1.05, do: " (slower)", else: ""
      ratio_text = :erlang.float_to_binary(ratio, decimals: 2)
      IO.puts("| #{figure} | #{cell.(old)} | #{cell.(new)} | #{ratio_text}×#{flag} |")
  end
end
