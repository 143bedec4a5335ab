defmodule ExBashkit.Tool.Files do
  @moduledoc false
  # What the file tools do with a model's (already checked) arguments:
  # read with line numbers and ranges, write, replace exact text, list.
  # Every failure is a sentence saying what to do next.

  alias ExBashkit.Sandbox
  alias ExBashkit.Tool.Output

  @default_lines 2000

  def read(target, %{"path" => path} = args, budget) do
    path = absolute(target, path)

    with {:ok, content} <- fetch(target, path) do
      lines = split_lines(content)
      total = length(lines)
      first = Map.get(args, "offset", 1)
      count = Map.get(args, "limit", @default_lines)

      cond do
        total == 0 ->
          {:ok, "#{path} is empty."}

        first > total ->
          {:error,
           "#{path} has #{total} line#{if total == 1, do: "", else: "s"}; offset #{first} is past its end."}

        true ->
          shown = Enum.slice(lines, first - 1, count)
          last = first + length(shown) - 1
          numbered = shown |> Enum.with_index(first) |> Enum.map(&number_line/1)

          {:ok,
           IO.iodata_to_binary([range_note(path, first, last, total), numbered]) |> fit(budget)}
      end
    end
  end

  defp fit(text, budget), do: Output.for_model(text, budget)

  defp range_note(_path, 1, total, total), do: []

  defp range_note(path, first, last, total),
    do: "[#{path}: lines #{first}-#{last} of #{total}; pass offset and limit to read others]\n"

  defp number_line({line, number}) do
    digits = Integer.to_string(number)
    [:binary.copy(" ", max(6 - byte_size(digits), 0)), digits, "\t", line, "\n"]
  end

  defp split_lines(""), do: []

  defp split_lines(content) do
    lines = :binary.split(content, "\n", [:global])
    if String.ends_with?(content, "\n"), do: Enum.drop(lines, -1), else: lines
  end

  def write(target, %{"path" => path, "content" => content}) do
    path = absolute(target, path)

    with :ok <- parent(target, path),
         :ok <- Sandbox.write_file(target, path, content) do
      {:ok, "Wrote #{byte_size(content)} bytes to #{path}."}
    else
      {:error, message} -> {:error, "Could not write #{path}: #{message}."}
    end
  end

  defp parent(target, path) do
    case Path.dirname(path) do
      "/" -> :ok
      dir -> Sandbox.mkdir(target, dir, parents: true)
    end
  end

  def edit(_target, %{"old_string" => ""}),
    do: {:error, "old_string is empty. To create or overwrite a whole file, use write_file."}

  def edit(_target, %{"old_string" => same, "new_string" => same}),
    do: {:error, "old_string and new_string are the same, so there is nothing to change."}

  def edit(target, %{"path" => path, "old_string" => old, "new_string" => new} = args) do
    path = absolute(target, path)
    replace_all? = Map.get(args, "replace_all", false)

    with {:ok, content} <- fetch(target, path),
         {:ok, count} <- occurrences(content, old, path, replace_all?),
         updated = :binary.replace(content, old, new, if(replace_all?, do: [:global], else: [])),
         :ok <- Sandbox.write_file(target, path, updated) do
      {:ok, "Replaced #{count} occurrence#{if count == 1, do: "", else: "s"} in #{path}."}
    else
      {:error, message} -> {:error, message}
    end
  end

  defp occurrences(content, old, path, replace_all?) do
    case length(:binary.matches(content, old)) do
      0 ->
        {:error,
         "old_string was not found in #{path}. Read the file again and copy the text " <>
           "exactly, including whitespace and indentation."}

      1 ->
        {:ok, 1}

      count when replace_all? ->
        {:ok, count}

      count ->
        {:error,
         "old_string occurs #{count} times in #{path}. Include more of the surrounding " <>
           "text to make it unique, or set replace_all to true to replace every one."}
    end
  end

  def list(target, args, budget) do
    path = absolute(target, Map.get(args, "path", "."))

    case Sandbox.list_dir(target, path, []) do
      {:ok, []} ->
        {:ok, "#{path} is empty."}

      {:ok, entries} ->
        listing = entries |> Enum.map(&entry/1) |> Enum.sort()
        {:ok, IO.iodata_to_binary(["#{path}:\n" | Enum.map(listing, &[&1, "\n"])]) |> fit(budget)}

      {:error, message} ->
        {:error,
         "Could not list #{path}: #{message}. Check the path with list_dir on its parent."}
    end
  end

  defp entry({name, :dir}), do: name <> "/"
  defp entry({name, :symlink}), do: name <> "@"
  defp entry({name, _file}), do: name

  defp fetch(target, path) do
    case Sandbox.read_file(target, path) do
      {:ok, content} ->
        {:ok, content}

      {:error, message} ->
        {:error, "Could not read #{path}: #{message}. Use list_dir to see which files exist."}
    end
  end

  # `path` made absolute against the shell's working directory: what `pwd`
  # prints, or `/` when that cannot be learned.
  defp absolute(_target, "/" <> _ = path), do: path

  defp absolute(target, path) do
    cwd =
      case Sandbox.exec(target, "builtin pwd", []) do
        {:ok, %{exit_code: 0, stdout: "/" <> _ = out}} -> String.trim_trailing(out, "\n")
        _ -> "/"
      end

    Path.expand(path, cwd)
  end
end
