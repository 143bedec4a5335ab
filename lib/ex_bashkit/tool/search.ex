defmodule ExBashkit.Tool.Search do
  @moduledoc false
  # The grep and glob tools: bashkit's own `grep -r` and bash's globstar,
  # run in the sandbox (so mounts and every backend answer alike), their
  # output capped for a model.

  alias ExBashkit.Sandbox
  alias ExBashkit.Tool.Output

  @doc "One call of the grep tool."
  def grep(target, args, budget) do
    path = Map.get(args, "path", ".")
    max_matches = Map.get(args, "max_matches", 100)
    max_line = Map.get(args, "max_line_bytes", 400)

    flags =
      ["-rnI"] ++
        if(args["ignore_case"], do: ["-i"], else: []) ++
        Enum.map(List.wrap(args["include"]), &"--include=#{quote_arg(&1)}") ++
        Enum.map(List.wrap(args["exclude"]), &"--exclude=#{quote_arg(&1)}")

    script =
      "grep #{Enum.join(flags, " ")} -e #{quote_arg(args["pattern"])} -- #{quote_arg(path)} 2>&1"

    case Sandbox.exec(target, script, []) do
      {:ok, %{exit_code: 1, stdout: ""}} ->
        {:ok, "No matches for #{inspect(args["pattern"])} in #{path}."}

      {:ok, %{exit_code: code, stdout: out}} when code in [0, 1] ->
        {:ok, matches(out, max_matches, max_line) |> Output.for_model(budget)}

      {:ok, %{stdout: out}} ->
        {:error,
         "grep failed: #{String.trim(out)}. Check the pattern (a regular expression) and the path."}

      {:error, why} ->
        {:error, "grep could not run: #{message(why)}"}
    end
  end

  # `path:line:text` lines, each cut to `max_line` bytes, at most
  # `max_matches` of them; what was left out is said.
  defp matches(out, max_matches, max_line) do
    lines = out |> String.split("\n", trim: true) |> Enum.filter(&Regex.match?(~r/^.+?:\d+:/, &1))
    {kept, dropped} = Enum.split(lines, max_matches)
    shown = Enum.map(kept, &cut(&1, max_line))

    tail =
      if dropped == [],
        do: [],
        else: ["(truncated: #{length(dropped)} more matches; narrow the pattern or the path)"]

    Enum.join(["#{length(lines)} matches:" | shown] ++ tail, "\n") <> "\n"
  end

  defp cut(line, max) when byte_size(line) <= max, do: line

  defp cut(line, max) do
    kept = line |> binary_part(0, max) |> valid_prefix()
    kept <> " … (#{byte_size(line) - byte_size(kept)} more bytes)"
  end

  # A cut may split a character: keep what is whole.
  defp valid_prefix(bytes) do
    case :unicode.characters_to_binary(bytes) do
      {_incomplete_or_error, whole, _rest} -> whole
      whole -> whole
    end
  end

  @doc "One call of the glob tool."
  def glob(target, args, budget) do
    pattern = args["pattern"]
    dir = Map.get(args, "path", ".")
    max = Map.get(args, "max_results", 1_000)

    script =
      "shopt -s globstar nullglob dotglob; cd #{quote_arg(dir)} && " <>
        "for f in #{glob_arg(pattern)}; do printf '%s\\n' \"$f\"; done"

    case Sandbox.exec(target, script, []) do
      {:ok, %{exit_code: 0, stdout: ""}} ->
        {:ok, "No paths match #{inspect(pattern)} in #{dir}."}

      {:ok, %{exit_code: 0, stdout: out}} ->
        paths = String.split(out, "\n", trim: true)
        {kept, dropped} = Enum.split(paths, max)

        tail = if dropped == [], do: [], else: ["(truncated: #{length(dropped)} more paths)"]

        {:ok,
         (Enum.join(["#{length(paths)} paths:" | kept] ++ tail, "\n") <> "\n")
         |> Output.for_model(budget)}

      {:ok, %{stdout: out, stderr: err}} ->
        {:error, "glob failed in #{dir}: #{String.trim(out <> err)}"}

      {:error, why} ->
        {:error, "glob could not run: #{message(why)}"}
    end
  end

  # A pattern's glob characters stay live; everything else is quoted.
  defp glob_arg(pattern) do
    pattern
    |> String.split(~r/([*?]|\[[^\]]*\])/, include_captures: true, trim: true)
    |> Enum.map_join(fn part ->
      if Regex.match?(~r/^([*?]|\[[^\]]*\])$/, part), do: part, else: quote_arg(part)
    end)
  end

  defp quote_arg(text), do: "'" <> String.replace(to_string(text), "'", "'\\''") <> "'"

  defp message(%{message: message}), do: message
  defp message(message), do: message
end
