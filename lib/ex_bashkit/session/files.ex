defmodule ExBashkit.Session.Files do
  @moduledoc false
  # The bodies of `ExBashkit.Session`'s file API: each checks its paths and
  # options, then makes one `Interpreter.file/3` call. Files do not queue
  # behind a running script (the interpreter serves them beside it).

  alias ExBashkit.Interpreter
  alias ExBashkit.Session.Guard

  @spec read(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t()) ::
          {:ok, binary()} | {:error, String.t()}
  def read(resource, path), do: call(resource, :read_file, [path], [])

  @spec write(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), iodata()) ::
          :ok | {:error, String.t()}
  def write(resource, path, content),
    do: call(resource, :write_file, [path], [iodata!(content)])

  @spec list(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          {:ok, list()} | {:error, String.t()}
  def list(resource, path, opts) do
    details? = flag!(opts, :details, "ExBashkit.Session.list_dir/3")

    with {:ok, entries} <- call(resource, :list_dir, [path], []) do
      {:ok,
       Enum.map(entries, fn {name, type, size, mode, mtime} ->
         if details?,
           do: %{name: name, type: type, size: size, mode: mode, mtime: mtime},
           else: {name, type}
       end)}
    end
  end

  @spec mkdir(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          :ok | {:error, String.t()}
  def mkdir(resource, path, opts),
    do: call(resource, :mkdir, [path], [flag!(opts, :parents, "ExBashkit.Session.mkdir/3")])

  @spec remove(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          :ok | {:error, String.t()}
  def remove(resource, path, opts),
    do: call(resource, :remove, [path], [flag!(opts, :recursive, "ExBashkit.Session.remove/3")])

  @spec rename(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), Path.t(), keyword()) ::
          :ok | {:error, String.t()}
  def rename(resource, from, to, opts) do
    overwrite = flag!(opts, :overwrite, "ExBashkit.Session.rename/4")
    call(resource, :rename, [from, to], [overwrite])
  end

  @spec stat(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          {:ok, map()} | {:error, String.t()}
  def stat(resource, path, opts) do
    details? = flag!(opts, :details, "ExBashkit.Session.stat/3")

    with {:ok, {type, size, mode, mtime}} <- call(resource, :stat, [path], []) do
      if details?,
        do: {:ok, %{type: type, size: size, mode: mode, mtime: mtime}},
        else: {:ok, %{type: type, size: size}}
    end
  end

  @spec chmod(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), term(), keyword()) ::
          :ok | {:error, String.t()}
  def chmod(resource, path, mode, opts) do
    recursive = flag!(opts, :recursive, "ExBashkit.Session.chmod/4")

    unless is_integer(mode) and mode in 0..0o7777 do
      raise ArgumentError,
            "mode must be an integer from 0 to 0o7777 (permission bits, e.g. 0o644), got: #{inspect(mode)}"
    end

    call(resource, :chmod, [path], [mode, recursive])
  end

  defp call(resource, op, paths, args) do
    with {:ok, paths} <- normalize_all(paths, []),
         do: Guard.call(resource, fn -> Interpreter.file(resource, op, paths ++ args) end)
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

  defp flag!(opts, key, context) do
    schema = [{key, [type: :boolean, default: false]}]
    ExBashkit.Options.validate!(opts, schema, context) |> Map.fetch!(key)
  end
end
