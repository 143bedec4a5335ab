defmodule ExBashkit.Code.Scan do
  @moduledoc false
  # The static half of ExBashkit.Code.validate/2 for Python and bash:
  # uses of APIs a run refuses. Python's are found in the source with its
  # comments and string literals blanked out (newlines kept, so lines
  # still count); bash's in bashkit's parse of the script. JavaScript's
  # are found by the worker, in oxc's syntax tree (crates/worker/src/js/
  # scan.rs). It is policy for code written in good faith, not the
  # boundary: the sandbox is, and it refuses these at run time whatever
  # the spelling.

  @typedoc "One finding: what is wrong and where."
  @type violation :: %{kind: :syntax | :forbidden, message: String.t(), line: pos_integer() | nil}

  # Functions, not attributes: a compiled regex cannot be a module
  # attribute on OTP 28.
  defp python_rules do
    [
      {~r/(?<![\w.])(eval|exec|compile)\s*\(/, "eval(), exec() and compile() are forbidden"},
      {~r/__import__|\bimportlib\b/, "dynamic imports are forbidden"},
      {~r/^\s*(import|from)\s+(os|subprocess|socket|ctypes|shutil|multiprocessing)\b/m,
       "importing os, subprocess, socket, ctypes, shutil or multiprocessing is forbidden"}
    ]
  end

  defp python_grants_rules do
    [
      {:read_files, ~r/(?<![\w.])open\s*\(|\bpathlib\b/,
       "reading files needs allow: [:read_files]"},
      {:fetch, ~r/\b(urllib|http\.client|requests)\b/, "HTTP needs allow: [:fetch]"},
      {:crypto, ~r/\b(hashlib|hmac)\b/, "hashlib and hmac need allow: [:crypto]"}
    ]
  end

  @doc "The forbidden uses in `code`, in source order."
  @spec forbidden(:python | :bash | :elixir, String.t(), [atom()]) :: [violation()]
  def forbidden(python, code, allow) when python in [:python, :monty],
    do: find(blank(code, :python), python_rules() ++ ungranted(python_grants_rules(), allow))

  def forbidden(:bash, code, allow) do
    case ExBashkit.Approval.analyze(code) do
      {:ok, analysis} ->
        for %{name: name} <- analysis.commands,
            name in ["curl", "wget", "http"] and :fetch not in allow,
            uniq: true,
            do: %{kind: :forbidden, message: "#{name} needs allow: [:fetch]", line: nil}

      {:error, _parse_error} ->
        []
    end
  end

  def forbidden(:elixir, _code, _allow), do: []

  defp ungranted(rules, allow),
    do: for({grant, pattern, message} <- rules, grant not in allow, do: {pattern, message})

  defp find(text, rules) do
    rules
    |> Enum.flat_map(fn {pattern, message} ->
      for [{at, _} | _] <- Regex.scan(pattern, text, return: :index),
          do: {at, %{kind: :forbidden, message: message, line: line_at(text, at)}}
    end)
    |> Enum.sort_by(&elem(&1, 0))
    |> Enum.map(&elem(&1, 1))
    |> Enum.uniq_by(&{&1.message, &1.line})
  end

  defp line_at(text, at), do: 1 + length(:binary.matches(binary_part(text, 0, at), "\n"))

  # Comments and string literals as spaces; newlines kept: a scan of
  # code, not a parser.
  @doc false
  @spec blank(String.t(), :python) :: String.t()
  def blank(code, language), do: code |> blank(language, []) |> IO.iodata_to_binary()

  defp blank(<<>>, _language, acc), do: Enum.reverse(acc)

  defp blank("#" <> rest, :python = l, acc), do: to_line_end(rest, l, [" " | acc])

  defp blank(<<q::binary-size(3), rest::binary>>, :python = l, acc)
       when q in [~s("""), "'''"],
       do: to_close(rest, q, l, ["   " | acc])

  defp blank(<<q, rest::binary>>, l, acc) when q in [?", ?'],
    do: to_quote(rest, q, l, [" " | acc])

  defp blank(<<c::utf8, rest::binary>>, l, acc), do: blank(rest, l, [<<c::utf8>> | acc])
  defp blank(<<_byte, rest::binary>>, l, acc), do: blank(rest, l, [" " | acc])

  defp to_line_end(text, l, acc) do
    case :binary.split(text, "\n") do
      [comment, rest] -> blank(rest, l, ["\n", spaces(comment) | acc])
      [comment] -> Enum.reverse([spaces(comment) | acc])
    end
  end

  defp to_close(text, close, l, acc) do
    case :binary.split(text, close) do
      [inside, rest] -> blank(rest, l, [spaces(close), spaces(inside) | acc])
      [inside] -> Enum.reverse([spaces(inside) | acc])
    end
  end

  defp to_quote(<<>>, _q, _l, acc), do: Enum.reverse(acc)

  defp to_quote(<<?\\, _c::utf8, rest::binary>>, q, l, acc),
    do: to_quote(rest, q, l, ["  " | acc])

  defp to_quote(<<q, rest::binary>>, q, l, acc), do: blank(rest, l, [" " | acc])
  # An unclosed quote ends at the line's end.
  defp to_quote(<<?\n, rest::binary>>, _q, l, acc), do: blank(rest, l, ["\n" | acc])
  defp to_quote(<<_c::utf8, rest::binary>>, q, l, acc), do: to_quote(rest, q, l, [" " | acc])
  defp to_quote(<<_byte, rest::binary>>, q, l, acc), do: to_quote(rest, q, l, [" " | acc])

  defp spaces(text), do: String.replace(text, ~r/[^\n]/u, " ")
end
