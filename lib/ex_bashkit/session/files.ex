defmodule ExBashkit.Session.Files do
  @moduledoc false
  # The checks and shapes of `ExBashkit.Session`'s file API: each function
  # there builds its call's arguments here, makes one `Interpreter.file/3`
  # call, and shapes the answer here. Files do not queue behind a running
  # script (the interpreter serves them beside it).

  @typep args :: {:ok, list()} | {:error, String.t()}

  @doc "The arguments of a file call on `paths`, then `extra`."
  @spec args([term()], list()) :: args()
  def args(paths, extra \\ []) do
    with {:ok, paths} <- normalize_all(paths, []), do: {:ok, paths ++ extra}
  end

  @doc "The arguments of `write_file`: the path, then the content as a binary."
  @spec write_args(term(), term()) :: args()
  def write_args(path, content), do: args([path], [iodata!(content)])

  @doc "The arguments of `chmod`: the path, the mode, then the `:recursive` flag."
  @spec chmod_args(term(), term(), keyword()) :: args()
  def chmod_args(path, mode, opts) do
    recursive = flag!(opts, :recursive, "ExBashkit.Session.chmod/4")

    unless is_integer(mode) and mode in 0..0o7777 do
      raise ArgumentError,
            "mode must be an integer from 0 to 0o7777 (permission bits, e.g. 0o644), got: #{inspect(mode)}"
    end

    args([path], [mode, recursive])
  end

  @doc "A `list_dir` answer as names and types, or with `details?` as maps."
  @spec entries({:ok, list()} | {:error, String.t()}, boolean()) ::
          {:ok, list()} | {:error, String.t()}
  def entries({:ok, entries}, details?) do
    {:ok,
     Enum.map(entries, fn {name, type, size, mode, mtime} ->
       if details?,
         do: %{name: name, type: type, size: size, mode: mode, mtime: mtime},
         else: {name, type}
     end)}
  end

  def entries(error, _details?), do: error

  @doc "A `stat` answer as a map, with the mode and mtime when `details?`."
  @spec stat({:ok, tuple()} | {:error, String.t()}, boolean()) ::
          {:ok, map()} | {:error, String.t()}
  def stat({:ok, {type, size, mode, mtime}}, true),
    do: {:ok, %{type: type, size: size, mode: mode, mtime: mtime}}

  def stat({:ok, {type, size, _mode, _mtime}}, false), do: {:ok, %{type: type, size: size}}
  def stat(error, _details?), do: error

  @doc "The boolean option `key` of `opts` (default `false`), for `context`."
  @spec flag!(keyword(), atom(), String.t()) :: boolean()
  def flag!(opts, key, context) do
    schema = [{key, [type: :boolean, default: false]}]
    ExBashkit.Options.validate!(opts, schema, context) |> Map.fetch!(key)
  end

  defp normalize_all([], done), do: {:ok, Enum.reverse(done)}

  defp normalize_all([path | rest], done) do
    with {:ok, path} <- normalize(path), do: normalize_all(rest, [path | done])
  end

  # Paths are rooted at "/" whatever the session's cwd; bad types are a
  # programmer error, bad bytes an ordinary {:error, _}.
  defp normalize(path) when is_binary(path) do
    cond do
      not String.valid?(path) -> {:error, "#{inspect(path)}: path is not valid UTF-8"}
      String.contains?(path, <<0>>) -> {:error, "#{inspect(path)}: path contains a NUL byte"}
      String.starts_with?(path, "/") -> {:ok, path}
      true -> {:ok, "/" <> path}
    end
  end

  defp normalize(path) do
    raise ArgumentError, "path must be a string, got: #{inspect(path)}"
  end

  defp iodata!(content) do
    IO.iodata_to_binary(content)
  rescue
    ArgumentError ->
      reraise ArgumentError, "content must be iodata, got: #{inspect(content)}", __STACKTRACE__
  end
end
