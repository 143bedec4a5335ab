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

  @spec list(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t()) ::
          {:ok, list()} | {:error, String.t()}
  def list(resource, path), do: call(resource, :list_dir, [path], [])

  @spec mkdir(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          :ok | {:error, String.t()}
  def mkdir(resource, path, opts),
    do: call(resource, :mkdir, [path], [flag!(opts, :parents, "ExBashkit.Session.mkdir/3")])

  @spec remove(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), keyword()) ::
          :ok | {:error, String.t()}
  def remove(resource, path, opts),
    do: call(resource, :remove, [path], [flag!(opts, :recursive, "ExBashkit.Session.remove/3")])

  @spec rename(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t(), Path.t()) ::
          :ok | {:error, String.t()}
  def rename(resource, from, to), do: call(resource, :rename, [from, to], [])

  @spec stat(ExBashkit.Interpreter.t() | ExBashkit.Worker.t(), Path.t()) ::
          {:ok, map()} | {:error, String.t()}
  def stat(resource, path) do
    with {:ok, {type, size}} <- call(resource, :stat, [path], []),
         do: {:ok, %{type: type, size: size}}
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
