defmodule ExBashkit.Shell.LineEditor do
  @moduledoc false
  # The shell's line editor for a terminal in non-canonical mode: one key
  # (one character, or one byte of an escape sequence) at a time, in and
  # out of a pure state, so it is tested without a terminal. Emacs keys as
  # readline has them; history on Up/Down and Ctrl-P/Ctrl-N. Rendering
  # redraws the whole line, which is simple and right for lines shorter
  # than the terminal's width.

  defstruct before: [], after: [], history: [], position: nil, draft: nil, escape: nil

  @type t :: %__MODULE__{}
  @type outcome :: {:edit, t()} | {:line, String.t(), t()} | {:eof, t()} | {:interrupt, t()}

  @spec new([String.t()]) :: t()
  def new(history \\ []), do: %__MODULE__{history: history}

  @doc "A fresh line that keeps the history, with `line` added to it."
  @spec next(t(), String.t()) :: t()
  def next(editor, ""), do: new(editor.history)
  def next(%{history: [line | _]} = editor, line), do: new(editor.history)
  def next(editor, line), do: new(Enum.take([line | editor.history], 1000))

  @spec line(t()) :: String.t()
  def line(editor), do: IO.iodata_to_binary([Enum.reverse(editor.before), editor.after])

  @doc "What the terminal shows for `editor` after `prompt`."
  @spec render(t(), iodata()) :: iodata()
  def render(editor, prompt) do
    back = length(editor.after)

    [
      "\r",
      prompt,
      Enum.reverse(editor.before),
      editor.after,
      "\e[K",
      if(back > 0, do: "\e[#{back}D", else: [])
    ]
  end

  @spec key(t(), String.t()) :: outcome()
  def key(%{escape: nil} = editor, "\e"), do: {:edit, %{editor | escape: ""}}
  def key(%{escape: nil} = editor, char), do: plain(editor, char)

  def key(%{escape: sequence} = editor, char) do
    sequence = sequence <> char

    cond do
      sequence in ["[", "O"] or Regex.match?(~r/^\[[0-9;]+$/, sequence) ->
        {:edit, %{editor | escape: sequence}}

      true ->
        escape(%{editor | escape: nil}, sequence)
    end
  end

  defp plain(editor, char) when char in ["\r", "\n"], do: {:line, line(editor), editor}
  defp plain(editor, "\x03"), do: {:interrupt, editor}
  defp plain(%{before: [], after: []} = editor, "\x04"), do: {:eof, editor}
  defp plain(editor, "\x04"), do: escape(editor, "[3~")

  defp plain(editor, char) when char in ["\x7f", "\b"],
    do: {:edit, %{editor | before: tl_or_empty(editor.before)}}

  defp plain(editor, "\x01"), do: escape(editor, "[H")
  defp plain(editor, "\x05"), do: escape(editor, "[F")
  defp plain(editor, "\x02"), do: escape(editor, "[D")
  defp plain(editor, "\x06"), do: escape(editor, "[C")
  defp plain(editor, "\x10"), do: escape(editor, "[A")
  defp plain(editor, "\x0e"), do: escape(editor, "[B")
  defp plain(editor, "\x0b"), do: {:edit, %{editor | after: []}}
  defp plain(editor, "\x15"), do: {:edit, %{editor | before: []}}
  defp plain(editor, "\x17"), do: {:edit, %{editor | before: delete_word(editor.before)}}
  defp plain(editor, <<byte>>) when byte < 0x20, do: {:edit, editor}
  defp plain(editor, char), do: {:edit, %{editor | before: [char | editor.before]}}

  defp escape(editor, "[D") do
    case editor.before do
      [char | rest] -> {:edit, %{editor | before: rest, after: [char | editor.after]}}
      [] -> {:edit, editor}
    end
  end

  defp escape(editor, "[C") do
    case editor.after do
      [char | rest] -> {:edit, %{editor | before: [char | editor.before], after: rest}}
      [] -> {:edit, editor}
    end
  end

  defp escape(editor, home) when home in ["[H", "OH", "[1~", "[7~"],
    do: {:edit, %{editor | before: [], after: Enum.reverse(editor.before, editor.after)}}

  defp escape(editor, end_key) when end_key in ["[F", "OF", "[4~", "[8~"],
    do: {:edit, %{editor | before: Enum.reverse(editor.after, editor.before), after: []}}

  defp escape(editor, "[3~"), do: {:edit, %{editor | after: tl_or_empty(editor.after)}}
  defp escape(editor, up) when up in ["[A", "OA"], do: {:edit, recall(editor, 1)}
  defp escape(editor, down) when down in ["[B", "OB"], do: {:edit, recall(editor, -1)}
  defp escape(editor, _unknown), do: {:edit, editor}

  # Moves through the history; the line being typed is kept as a draft and
  # comes back below the newest entry.
  defp recall(editor, step) do
    position = (editor.position || -1) + step
    draft = if editor.position == nil, do: line(editor), else: editor.draft

    cond do
      position >= length(editor.history) ->
        editor

      position < 0 ->
        %{show(editor, draft) | position: nil, draft: nil}

      true ->
        %{show(editor, Enum.at(editor.history, position)) | position: position, draft: draft}
    end
  end

  defp show(editor, text),
    do: %{editor | before: text |> String.codepoints() |> Enum.reverse(), after: []}

  defp delete_word(before) do
    before |> Enum.drop_while(&(&1 == " ")) |> Enum.drop_while(&(&1 != " "))
  end

  defp tl_or_empty([_ | rest]), do: rest
  defp tl_or_empty([]), do: []
end
