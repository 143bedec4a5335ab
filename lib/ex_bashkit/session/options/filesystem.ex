defmodule ExBashkit.Session.Options.Filesystem do
  @moduledoc false
  # The session options that shape its filesystem: `:files`, host
  # `:mounts` (and the `:allowed_mount_paths` they must fall under) and
  # `:virtual_fs` backends, with the checks that no two mounts shadow each
  # other. Each problem raises ArgumentError naming the option.

  import ExBashkit.Options, only: [collection?: 1, entries!: 2, text?: 1, unique!: 2]

  @doc false
  def files!(files) when collection?(files) do
    entries!(":files", files)
    |> Enum.map(fn
      {path, content} ->
        {file_path!(path), file_content!(path, content)}

      other ->
        raise ArgumentError, ":files entries must be {path, content}, got: #{inspect(other)}"
    end)
  end

  def files!(other) do
    raise ArgumentError, ":files must be a map or list of {path, content}, got: #{inspect(other)}"
  end

  defp file_path!(path) do
    if text?(path) and path != "" do
      path
    else
      raise ArgumentError, ":files paths must be non-empty strings, got: #{inspect(path)}"
    end
  end

  defp file_content!(path, content) do
    IO.iodata_to_binary(content)
  rescue
    ArgumentError ->
      reraise ArgumentError,
              ":files content for #{inspect(path)} must be iodata, got: #{inspect(content)}",
              __STACKTRACE__
  end

  @doc false
  def mounts!(mounts) when is_list(mounts) do
    ":mounts" |> entries!(mounts) |> Enum.map(&mount!/1)
  end

  def mounts!(other) do
    raise ArgumentError,
          ":mounts must be a list of {vfs_path, host_path, mode}, got: #{inspect(other)}"
  end

  defp mount!({vfs_path, host_path, mode} = mount) do
    vfs_path = mount_point!("mount #{inspect(mount)}: the sandbox path", vfs_path)
    mode = mount_mode!(mount, mode)
    {vfs_path, host_path!("mount #{inspect(mount)}: the host path", host_path), mode}
  end

  defp mount!(other) do
    raise ArgumentError,
          ":mounts entries must be {vfs_path, host_path, mode}, got: #{inspect(other)}"
  end

  # `:read_write` keeps the repositories' git metadata (hooks, config) for
  # the sandbox's git; `{:read_write, git_metadata: :writable}` lets every
  # writer change it (the NIF's `read_write_git_metadata`).
  defp mount_mode!(_mount, mode) when mode in [:read_only, :read_write], do: mode

  defp mount_mode!(mount, {:read_write, opts}) when is_list(opts) do
    case opts do
      [git_metadata: :writable] ->
        :read_write_git_metadata

      [git_metadata: :protected] ->
        :read_write

      _ ->
        raise ArgumentError,
              "mount #{inspect(mount)}: :read_write takes only git_metadata: :protected " <>
                "(the default) or git_metadata: :writable, got: #{inspect(opts)}"
    end
  end

  defp mount_mode!(mount, mode) do
    raise ArgumentError,
          "mount #{inspect(mount)}: unknown mode #{inspect(mode)}, " <>
            "expected :read_only, :read_write or {:read_write, git_metadata: :writable}"
  end

  # A worker of a root VM writes a session's :read_write mounts as their
  # owner (never as root), so those mounts must share one owner other than
  # root; the refusal comes here rather than as writes failing later.
  @doc false
  def workers_can_write!(mounts, :process) do
    host = ExBashkit.Worker.Hardening.host()
    writable = for {_, host_path, mode} <- mounts, mode != :read_only, do: host_path

    # `:harden_workers` is checked where workers start; anything but
    # `false` hardens.
    if host.root and host.hardening != false and writable != [] do
      owners = for path <- writable, do: {path, owner(path)}

      case Enum.uniq_by(owners, &elem(&1, 1)) do
        [{path, 0}] ->
          raise ArgumentError,
                ":mounts: #{inspect(path)} is owned by root. An isolated session writes a " <>
                  ":read_write mount as the directory's owner and a worker never runs as " <>
                  "root: give the directory to the user the agent should write as (chown), " <>
                  "mount it :read_only, or use isolation: :none"

        [_] ->
          :ok

        _ ->
          raise ArgumentError,
                ":mounts: the :read_write mounts of an isolated session must share one owner " <>
                  "(its worker writes them as that user), got #{inspect(owners)}"
      end
    end

    :ok
  end

  def workers_can_write!(_mounts, _isolation), do: :ok

  defp owner(path) do
    case File.stat(path) do
      {:ok, %File.Stat{uid: uid}} -> uid
      {:error, _} -> :missing
    end
  end

  @doc false
  def allowed_mount_paths!(nil), do: nil

  def allowed_mount_paths!(paths) when is_list(paths) do
    entries!(":allowed_mount_paths", paths)
    |> Enum.map(&host_path!(":allowed_mount_paths entry #{inspect(&1)}", &1))
  end

  def allowed_mount_paths!(other) do
    raise ArgumentError,
          ":allowed_mount_paths must be a list of host paths, got: #{inspect(other)}"
  end

  # Host paths are resolved against the VM's working directory here, so that
  # what the NIF canonicalizes is what the caller meant.
  defp host_path!(what, path) do
    if text?(path) and path != "" do
      Path.expand(path)
    else
      raise ArgumentError, "#{what} must be a non-empty string, got: #{inspect(path)}"
    end
  end

  @doc false
  def virtual_fs!(backends) when collection?(backends) do
    entries!(":virtual_fs", backends)
    |> Enum.map(fn
      {path, backend} ->
        path = mount_point!(":virtual_fs mount path #{inspect(path)}", path)
        {path, backend!(path, backend)}

      other ->
        raise ArgumentError, ":virtual_fs entries must be {path, backend}, got: #{inspect(other)}"
    end)
    |> unique!(":virtual_fs has more than one mount at")
  end

  def virtual_fs!(other) do
    raise ArgumentError, ":virtual_fs must be a map of path => backend, got: #{inspect(other)}"
  end

  # A mount point, normalized once: repeated and trailing slashes go; "."
  # and ".." are refused rather than guessed at.
  defp mount_point!(what, path) do
    unless text?(path) and String.starts_with?(path, "/") do
      raise ArgumentError, "#{what} must be an absolute path string, got: #{inspect(path)}"
    end

    segments = String.split(path, "/", trim: true)

    cond do
      Enum.any?(segments, &(&1 in [".", ".."])) ->
        raise ArgumentError,
              "#{what} must be normalized (no \".\" or \"..\" components), got: #{inspect(path)}"

      segments == [] ->
        raise ArgumentError, "#{what} must not be the root \"/\""

      true ->
        "/" <> Enum.join(segments, "/")
    end
  end

  # Two mounts at one point, or one inside another, would silently shadow.
  @doc false
  def no_overlaps!(points) do
    for {{a, label_a}, i} <- Enum.with_index(points),
        {{b, label_b}, j} <- Enum.with_index(points),
        i < j,
        a == b or String.starts_with?(a, b <> "/") or String.starts_with?(b, a <> "/") do
      raise ArgumentError,
            "#{label_a} and #{label_b} overlap (#{inspect(a)} and #{inspect(b)}); " <>
              "mount points must be distinct and not nested"
    end

    :ok
  end

  defp backend!(_path, fun) when is_function(fun, 1), do: fun

  defp backend!(path, {module, _arg} = backend) when is_atom(module),
    do: module!(path, module, backend)

  defp backend!(path, module) when is_atom(module), do: module!(path, module, {module, nil})

  defp backend!(path, other) do
    raise ArgumentError,
          ":virtual_fs backend for #{inspect(path)} must be a module, {module, arg} or a " <>
            "1-arity function, got: #{inspect(other)}"
  end

  defp module!(path, module, backend) do
    implemented =
      Code.ensure_loaded?(module) and
        Enum.any?(ExBashkit.VirtualFs.ops(), fn {op, arity} ->
          function_exported?(module, op, arity)
        end)

    if implemented do
      backend
    else
      raise ArgumentError,
            ":virtual_fs backend for #{inspect(path)}: #{inspect(module)} does not implement " <>
              "any ExBashkit.VirtualFs callback"
    end
  end
end
