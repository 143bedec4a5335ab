defmodule ExBashkit.Shell.Continuation do
  @moduledoc false
  # Whether what was typed so far is a whole command or needs more lines,
  # as an interactive bash decides. Most of it is the parser's answer: a
  # parse error at the end of the input (an open `if`, loop, quote or
  # substitution) means "more"; and since a script that does not parse
  # never runs, trying it is safe. What bashkit's parser accepts at the end
  # of input but bash would continue is checked here, before running.

  @doc "True when `script` plainly continues on the next line."
  @spec open_end?(String.t()) :: boolean()
  def open_end?(script) do
    trimmed = String.trim_trailing(script, " ")

    odd_backslashes?(trimmed) or String.ends_with?(trimmed, ["&&", "||", "|"]) or
      open_heredoc?(script)
  end

  @doc "True when a parse error says the input ended inside a construct."
  @spec ended_early?(String.t()) :: boolean()
  def ended_early?(message),
    do: message =~ ~r/unexpected end of file|unexpected EOF|unterminated/

  defp odd_backslashes?(text) do
    trailing = byte_size(text) - byte_size(String.trim_trailing(text, "\\"))
    rem(trailing, 2) == 1
  end

  # `<<WORD`, `<<-WORD`, `<<'WORD'` or `<<"WORD"` with no line that is the
  # word after it.
  defp open_heredoc?(script) do
    lines = String.split(script, "\n")

    lines
    |> Enum.with_index(1)
    |> Enum.any?(fn {line, index} ->
      ~r/<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/
      |> Regex.scan(line, capture: :all_but_first)
      |> Enum.any?(fn [dash, _quote, word] ->
        not Enum.any?(Enum.drop(lines, index), &(terminator(&1, dash) == word))
      end)
    end)
  end

  defp terminator(line, "-"), do: String.trim_leading(line, "\t")
  defp terminator(line, ""), do: line
end
