defmodule ExBashkit.Session.Options do
  @moduledoc false
  # Validates and normalizes `ExBashkit.Session.new/1` options. Every problem
  # raises ArgumentError naming the option, before anything native is built.

  @supported [:env, :cwd, :username, :hostname, :files]
  @later [
    :mounts,
    :allowed_mount_paths,
    :limits,
    :allow_net,
    :block_private_ips,
    :builtins,
    :builtin_timeout_ms,
    :virtual_fs,
    :python
  ]

  @typedoc "What the NIF receives, plus the files to seed afterwards."
  @type t :: %{native: map(), files: [{String.t(), binary()}]}

  @spec validate!(keyword()) :: t()
  def validate!(opts) do
    unless is_list(opts) and Keyword.keyword?(opts) do
      raise ArgumentError,
            "ExBashkit.Session.new/1 expects a keyword list of options, got: #{inspect(opts)}"
    end

    Enum.each(opts, fn {key, _} -> known!(key) end)

    %{
      native: %{
        env: env!(Keyword.get(opts, :env, [])),
        cwd: path!(:cwd, Keyword.get(opts, :cwd, "/")),
        username: name!(:username, Keyword.get(opts, :username, "sandbox")),
        hostname: name!(:hostname, Keyword.get(opts, :hostname, "bashkit-sandbox"))
      },
      files: files!(Keyword.get(opts, :files, []))
    }
  end

  defp known!(key) when key in @supported, do: :ok

  defp known!(key) when key in @later do
    raise ArgumentError, "option #{inspect(key)} is not supported by this version of ExBashkit"
  end

  defp known!(key) do
    raise ArgumentError,
          "unknown option #{inspect(key)} for ExBashkit.Session.new/1, " <>
            "expected one of: #{inspect(@supported)}"
  end

  defp env!(env) when is_map(env) or is_list(env) do
    Enum.map(env, fn
      {key, value} -> {env_key!(key), env_value!(key, value)}
      other -> raise ArgumentError, ":env entries must be {name, value}, got: #{inspect(other)}"
    end)
  end

  defp env!(other) do
    raise ArgumentError, ":env must be a map or keyword list, got: #{inspect(other)}"
  end

  defp env_key!(key) do
    name = scalar(key)

    if text?(name) and name != "" and not String.contains?(name, "=") do
      name
    else
      raise ArgumentError,
            ":env names must be non-empty strings or atoms without \"=\" or NUL, " <>
              "got: #{inspect(key)}"
    end
  end

  defp env_value!(key, value) do
    text = scalar(value)

    if text?(text) do
      text
    else
      raise ArgumentError,
            ":env value for #{inspect(key)} must be a string, atom or number " <>
              "(UTF-8, no NUL), got: #{inspect(value)}"
    end
  end

  # UTF-8 with no NUL: what the interpreter can take as a name, value or path.
  defp text?(value),
    do: is_binary(value) and String.valid?(value) and not String.contains?(value, <<0>>)

  defp scalar(value) when is_binary(value), do: value
  defp scalar(value) when is_atom(value) and value not in [nil, true, false], do: to_string(value)
  defp scalar(value) when is_number(value), do: to_string(value)
  defp scalar(_), do: nil

  defp path!(option, path) do
    if text?(path) and String.starts_with?(path, "/") do
      path
    else
      raise ArgumentError,
            "#{inspect(option)} must be an absolute path string, got: #{inspect(path)}"
    end
  end

  defp name!(option, name) do
    if text?(name) and name != "" and not String.contains?(name, "\n") do
      name
    else
      raise ArgumentError,
            "#{inspect(option)} must be a non-empty single-line string, got: #{inspect(name)}"
    end
  end

  defp files!(files) when is_map(files) or is_list(files) do
    Enum.map(files, fn
      {path, content} ->
        {file_path!(path), file_content!(path, content)}

      other ->
        raise ArgumentError, ":files entries must be {path, content}, got: #{inspect(other)}"
    end)
  end

  defp files!(other) do
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
end
