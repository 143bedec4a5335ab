defmodule ExBashkit.Store.Disk do
  @moduledoc """
  A store of one file per session in a host directory.

  Each record is written to a temporary file, flushed to disk (`fsync`)
  and renamed over the previous one, so a crash leaves either the old
  record or the new one, never a mix. Files are named by a hash of the
  session id and sealed with HMAC-SHA256 under `:key`, over the id and
  the record: a file that was edited, truncated, or copied from another
  session's is refused when read, with `{:error, message}`.

  It fences (see "Fencing" in `ExBashkit.Store`): each session's epoch
  is a file beside its record, read and written under a lock file
  created exclusively (`O_EXCL`), which is atomic on a local filesystem
  and on NFS v3 and later; a lock left by a node that died holding it is
  broken after 30 seconds.

  With this store a session outlives the VM: start the VM again, ask for
  the same id with the same store, and its files, variables, working
  directory and functions are back (see `guides/sandbox_per_conversation.md`).

  ## Options

    * `:dir` (required) — the directory, created if missing. Several
      nodes may share it (on one machine, or a network filesystem); a
      session is written by one server at a time.
    * `:key` (required) — a secret binary of at least 16 bytes. Records
      written under one key are refused under another.

      iex> dir = Path.join(System.tmp_dir!(), "ex_bashkit_doc_store")
      iex> store = {ExBashkit.Store.Disk, dir: dir, key: "a secret of 16+ bytes"}
      iex> {:ok, pid} = ExBashkit.Server.start(id: "doc", store: store, persist: :after_exec)
      iex> {:ok, _} = ExBashkit.Server.exec(pid, "echo kept > /f")
      iex> ExBashkit.Server.stop(pid)
      :ok
      iex> {:ok, pid} = ExBashkit.Server.start(id: "doc", store: store)
      iex> ExBashkit.Server.read_file(pid, "/f")
      {:ok, "kept\\n"}
      iex> ExBashkit.Server.stop(pid, delete: true)
      :ok
  """

  @behaviour ExBashkit.Store

  alias ExBashkit.AtomicFile

  @magic "EXBKS1"
  @mac_bytes 32

  @doc false
  @spec validate!(keyword()) :: keyword()
  def validate!(opts) do
    dir = Keyword.get(opts, :dir)
    key = Keyword.get(opts, :key)

    unless is_binary(dir) and dir != "" do
      raise ArgumentError,
            "ExBashkit.Store.Disk needs :dir, a directory path, got: #{inspect(dir)}"
    end

    unless is_binary(key) and byte_size(key) >= 16 do
      raise ArgumentError,
            "ExBashkit.Store.Disk needs :key, a secret binary of at least 16 bytes"
    end

    [dir: Path.expand(dir), key: key]
  end

  @impl true
  def put(opts, id, record) do
    path = path(opts, id)

    case AtomicFile.write(path, [@magic, mac(opts, id, record), record]) do
      :ok -> :ok
      {:error, reason} -> {:error, "cannot write #{path}: #{:file.format_error(reason)}"}
    end
  end

  @impl true
  def claim(opts, id) do
    locked(opts, id, fn ->
      epoch = epoch(opts, id) + 1

      case AtomicFile.write(epoch_path(opts, id), Integer.to_string(epoch)) do
        :ok -> {:ok, epoch}
        {:error, reason} -> {:error, "cannot claim #{inspect(id)}: #{:file.format_error(reason)}"}
      end
    end)
  end

  @impl true
  def put(opts, id, record, epoch) do
    locked(opts, id, fn ->
      if epoch(opts, id) > epoch, do: {:error, :stale}, else: put(opts, id, record)
    end)
  end

  # The session's epoch: a file beside its record, written under its lock.
  # It stays when the record is deleted, so that a server of the session
  # that was cut off cannot write it back.
  defp epoch(opts, id) do
    with {:ok, text} <- File.read(epoch_path(opts, id)),
         {epoch, ""} <- Integer.parse(text) do
      epoch
    else
      _ -> 0
    end
  end

  defp epoch_path(opts, id), do: path(opts, id) <> ".epoch"

  # A lock file created exclusively (O_EXCL, atomic on a local or network
  # filesystem) around a claim or a fenced write, which each read the
  # epoch and then write. One left by a node that died holding it (older
  # than @stale_lock_ms) is broken.
  @stale_lock_ms 30_000
  @lock_wait_ms 10_000

  defp locked(opts, id, fun) do
    lock = path(opts, id) <> ".lock"
    :ok = File.mkdir_p(Keyword.fetch!(opts, :dir))
    deadline = System.monotonic_time(:millisecond) + @lock_wait_ms

    case acquire(lock, deadline) do
      :ok ->
        try do
          fun.()
        after
          File.rm(lock)
        end

      {:error, message} ->
        {:error, message}
    end
  end

  defp acquire(lock, deadline) do
    case :file.open(lock, [:write, :exclusive, :raw]) do
      {:ok, file} ->
        :file.close(file)

      {:error, :eexist} ->
        cond do
          stale?(lock) ->
            File.rm(lock)
            acquire(lock, deadline)

          System.monotonic_time(:millisecond) > deadline ->
            {:error, "#{lock} is held by another writer"}

          true ->
            Process.sleep(2)
            acquire(lock, deadline)
        end

      {:error, reason} ->
        {:error, "cannot lock #{lock}: #{:file.format_error(reason)}"}
    end
  end

  defp stale?(lock) do
    case File.stat(lock, time: :posix) do
      {:ok, %{mtime: mtime}} -> System.os_time(:second) - mtime > div(@stale_lock_ms, 1000)
      {:error, _} -> false
    end
  end

  @impl true
  def fetch(opts, id) do
    path = path(opts, id)

    case File.read(path) do
      {:ok, <<@magic, mac::binary-size(@mac_bytes), record::binary>>} ->
        if :crypto.hash_equals(mac, mac(opts, id, record)),
          do: {:ok, record},
          else: refused(path)

      {:ok, _} ->
        refused(path)

      {:error, :enoent} ->
        :error

      {:error, reason} ->
        {:error, "cannot read #{path}: #{:file.format_error(reason)}"}
    end
  end

  defp refused(path) do
    {:error,
     "#{path} failed its integrity check: it was modified, or written under another :key " <>
       "or for another session; it was not loaded"}
  end

  @impl true
  def delete(opts, id) do
    case File.rm(path(opts, id)) do
      :ok -> :ok
      {:error, :enoent} -> :ok
      {:error, reason} -> {:error, :file.format_error(reason)}
    end
  end

  @doc false
  # The file of `id`: a hash, so that any term names a file and no id can
  # reach outside the directory.
  @spec path(keyword(), term()) :: Path.t()
  def path(opts, id) do
    name = :crypto.hash(:sha256, :erlang.term_to_binary(id)) |> Base.url_encode64(padding: false)
    Path.join(Keyword.fetch!(opts, :dir), name <> ".session")
  end

  defp mac(opts, id, record) do
    :crypto.mac(:hmac, :sha256, Keyword.fetch!(opts, :key), [
      :erlang.term_to_binary(id),
      record
    ])
  end
end
