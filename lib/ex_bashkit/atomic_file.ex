defmodule ExBashkit.AtomicFile do
  @moduledoc false
  # Writes a file so that a crash leaves either the old content or the new,
  # never a part: a temporary file beside it, flushed to disk (fsync), then
  # renamed over it. Used for session records (ExBashkit.Store.Disk) and
  # the shell's snapshot files.

  @spec write(Path.t(), iodata()) :: :ok | {:error, File.posix()}
  def write(path, data) do
    temporary = "#{path}.#{System.pid()}_#{System.unique_integer([:positive])}.tmp"

    with :ok <- File.mkdir_p(Path.dirname(path)),
         :ok <- write_synced(temporary, data),
         :ok <- File.rename(temporary, path) do
      :ok
    else
      {:error, _} = error ->
        File.rm(temporary)
        error
    end
  end

  defp write_synced(path, data) do
    with {:ok, file} <- :file.open(path, [:write, :raw, :binary]) do
      try do
        with :ok <- :file.write(file, data), do: :file.sync(file)
      after
        :file.close(file)
      end
    end
  end
end
