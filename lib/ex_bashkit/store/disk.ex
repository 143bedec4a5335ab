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
  broken after 30 seconds. A deleted session's epoch stays as a
  tombstone, so that a server cut off from the others cannot write the
  session back, for `:tombstone_ttl_ms` (a day by default: as long as
  you expect a partition to last); then it goes, and so does the fence.
  Expired tombstones are swept by a task the store starts from a
  `delete` or a claim at most once an hour (or once per
  `:tombstone_ttl_ms`, if shorter), for the whole directory.

  With this store a session outlives the VM: start the VM again, ask for
  the same id with the same store, and its files, variables, working
  directory and functions are back (see `guides/sandbox_per_conversation.md`).

  ## Options

    * `:dir` (required) — the directory, created if missing. Several
      nodes may share it (on one machine, or a network filesystem); a
      session is written by one server at a time.
    * `:key` (required) — a secret binary of at least 16 bytes. Records
      written under one key are refused under another.
    * `:tombstone_ttl_ms` — how long a deleted session's epoch is kept
      (default `86_400_000`, a day).
    * `:clock` — `{module, function, args}` answering the time in Unix
      milliseconds, for the tombstones (default
      `{System, :os_time, [:millisecond]}`); a test's own clock.

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
  alias ExBashkit.Store.Options

  @magic "EXBKS1"
  @mac_bytes 32
  # Expired tombstones are swept at most this often (or once per TTL).
  @sweep_every_ms 3_600_000

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

    [dir: Path.expand(dir), key: key] ++
      Options.validate!(opts, "ExBashkit.Store.Disk", [:dir, :key])
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
    claimed =
      locked(opts, id, fn ->
        epoch = epoch(opts, id) + 1

        case AtomicFile.write(epoch_path(opts, id), Integer.to_string(epoch)) do
          :ok ->
            {:ok, epoch}

          {:error, reason} ->
            {:error, "cannot claim #{inspect(id)}: #{:file.format_error(reason)}"}
        end
      end)

    sweep_if_due(opts)
    claimed
  end

  @impl true
  def put(opts, id, record, epoch) do
    locked(opts, id, fn ->
      if epoch(opts, id) > epoch, do: {:error, :stale}, else: put(opts, id, record)
    end)
  end

  # The session's epoch: a file beside its record, written under its lock.
  # It stays when the record is deleted ("EPOCH deleted UNIX_MS"), so that
  # a server of the session that was cut off cannot write it back, until
  # the tombstone expires: then it counts as no epoch at all.
  defp epoch(opts, id) do
    case tombstone(epoch_path(opts, id)) do
      {:live, epoch} -> epoch
      {:deleted, epoch, at} -> if expired?(opts, at, now(opts)), do: 0, else: epoch
      :none -> 0
    end
  end

  defp tombstone(epoch_path) do
    with {:ok, text} <- File.read(epoch_path) do
      case String.split(text, " ") do
        [epoch] -> live(Integer.parse(epoch))
        [epoch, "deleted", at] -> deleted(Integer.parse(epoch), Integer.parse(at))
        _ -> :none
      end
    else
      _ -> :none
    end
  end

  defp live({epoch, ""}), do: {:live, epoch}
  defp live(_), do: :none
  defp deleted({epoch, ""}, {at, ""}), do: {:deleted, epoch, at}
  defp deleted(_, _), do: :none

  defp expired?(opts, deleted_at, now), do: now - deleted_at > Options.ttl(opts)

  defp now(opts), do: Options.now(opts)

  defp epoch_path(opts, id), do: path(opts, id) <> ".epoch"

  @doc false
  # Removes the tombstones of the directory that had expired at `now`
  # (each under its session's lock, and only while the session has no
  # record); answers how many went. One instant for the whole sweep: a
  # tombstone is judged by when the sweep began, however long it takes.
  @spec sweep(keyword(), integer()) :: non_neg_integer()
  def sweep(opts, now \\ nil) do
    dir = Keyword.fetch!(opts, :dir)
    now = now || now(opts)

    case File.ls(dir) do
      {:ok, names} ->
        for name <- names, String.ends_with?(name, ".session.epoch"), reduce: 0 do
          swept ->
            record = Path.join(dir, String.trim_trailing(name, ".epoch"))
            if expire(opts, record, now), do: swept + 1, else: swept
        end

      {:error, _} ->
        0
    end
  end

  defp expire(opts, record, now) do
    epoch_path = record <> ".epoch"

    with {:deleted, _epoch, at} <- tombstone(epoch_path),
         true <- expired?(opts, at, now) do
      locked_path(opts, record, fn ->
        with {:deleted, _epoch, at} <- tombstone(epoch_path),
             true <- expired?(opts, at, now),
             false <- File.exists?(record) do
          File.rm(epoch_path) == :ok
        else
          _ -> false
        end
      end) == true
    else
      _ -> false
    end
  end

  # A sweep, when the directory's last one (by the time in its `.swept`
  # file, shared by every node using the directory) is old enough.
  defp sweep_if_due(opts) do
    marker = Path.join(Keyword.fetch!(opts, :dir), ".swept")
    now = now(opts)
    every = min(Options.ttl(opts), @sweep_every_ms)

    last =
      with {:ok, text} <- File.read(marker),
           {at, ""} <- Integer.parse(text),
           do: at,
           else: (_ -> nil)

    # A clock that went back sweeps too, rather than wait for it.
    if (last == nil or now < last or now - last >= every) and
         AtomicFile.write(marker, Integer.to_string(now)) == :ok do
      start_sweep(opts, now)
    end

    :ok
  end

  # Beside the caller, under the library's task supervisor; in the caller
  # where the library's application is not running.
  defp start_sweep(opts, now) do
    case Process.whereis(ExBashkit.TaskSupervisor) do
      nil -> sweep(opts, now)
      _ -> Task.Supervisor.start_child(ExBashkit.TaskSupervisor, fn -> sweep(opts, now) end)
    end
  end

  # A lock file created exclusively (O_EXCL, atomic on a local or network
  # filesystem) around a claim or a fenced write, which each read the
  # epoch and then write. One left by a node that died holding it (older
  # than @stale_lock_ms) is broken.
  @stale_lock_ms 30_000
  @lock_wait_ms 10_000

  defp locked(opts, id, fun), do: locked_path(opts, path(opts, id), fun)

  defp locked_path(opts, path, fun) do
    lock = path <> ".lock"
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
    deleted =
      locked(opts, id, fn ->
        case File.rm(path(opts, id)) do
          ok when ok in [:ok, {:error, :enoent}] -> tomb(opts, id)
          {:error, reason} -> {:error, :file.format_error(reason)}
        end
      end)

    sweep_if_due(opts)
    deleted
  end

  # The deleted session's epoch, marked with when it was deleted.
  defp tomb(opts, id) do
    path = epoch_path(opts, id)

    case tombstone(path) do
      {:live, epoch} -> write_tomb(path, epoch, now(opts))
      # Deleted again: the fence lasts from the last delete.
      {:deleted, epoch, _at} -> write_tomb(path, epoch, now(opts))
      :none -> :ok
    end
  end

  defp write_tomb(path, epoch, at) do
    case AtomicFile.write(path, "#{epoch} deleted #{at}") do
      :ok -> :ok
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
