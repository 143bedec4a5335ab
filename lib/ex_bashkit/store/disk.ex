defmodule ExBashkit.Store.Disk do
  @moduledoc """
  A store of one file per session in a host directory.

  Each record is written to a temporary file, flushed to disk (`fsync`)
  and renamed over the previous one, so a crash leaves either the old
  record or the new one, never a mix. Files are named by a hash of the
  session id and sealed with HMAC-SHA256 under `:key`, over the id and
  the record: a file that was edited, truncated, or copied from another
  session's is refused when read, with `{:error, message}`.

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
