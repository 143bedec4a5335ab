defmodule ExBashkit.Sandbox do
  @moduledoc false
  # A session or a session server, used alike: the LLM tools and the
  # interactive shell take either and call through here. A `%Session{}` is
  # called directly; anything else is a server (a pid or a GenServer name).

  alias ExBashkit.{Server, Session}

  @type t :: Session.t() | Server.server()

  @doc "Raises ArgumentError unless `target` can name a session or a server."
  @spec validate!(term(), atom()) :: t()
  def validate!(%Session{} = session, _option), do: session
  def validate!(pid, _option) when is_pid(pid), do: pid
  def validate!(name, _option) when is_atom(name) and name not in [nil, true, false], do: name
  def validate!({:global, _} = name, _option), do: name
  def validate!({:via, module, _} = name, _option) when is_atom(module), do: name
  def validate!({name, node} = target, _option) when is_atom(name) and is_atom(node), do: target

  def validate!(other, option) do
    raise ArgumentError,
          "#{option} must be an ExBashkit.Session or an ExBashkit.Server " <>
            "(a pid or a GenServer name), got: #{inspect(other)}"
  end

  @spec exec(t(), String.t(), keyword()) :: {:ok, ExBashkit.Result.t()} | {:error, term()}
  def exec(%Session{} = session, script, opts), do: Session.exec(session, script, opts)
  def exec(server, script, opts), do: Server.exec(server, script, opts)

  @spec cancel(t()) :: :ok | :idle | {:error, String.t()}
  def cancel(%Session{} = session), do: Session.cancel(session)
  def cancel(server), do: Server.cancel(server)

  @spec read_file(t(), Path.t()) :: {:ok, binary()} | {:error, String.t()}
  def read_file(%Session{} = session, path), do: Session.read_file(session, path)
  def read_file(server, path), do: Server.read_file(server, path)

  @spec write_file(t(), Path.t(), iodata()) :: :ok | {:error, String.t()}
  def write_file(%Session{} = session, path, data), do: Session.write_file(session, path, data)
  def write_file(server, path, data), do: Server.write_file(server, path, data)

  @spec mkdir(t(), Path.t()) :: :ok | {:error, String.t()}
  def mkdir(%Session{} = session, path), do: Session.mkdir(session, path, parents: true)
  def mkdir(server, path), do: Server.mkdir(server, path, parents: true)

  @spec list_dir(t(), Path.t()) :: {:ok, [{String.t(), atom()}]} | {:error, String.t()}
  def list_dir(%Session{} = session, path), do: Session.list_dir(session, path)
  def list_dir(server, path), do: Server.list_dir(server, path)

  @spec snapshot(t()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(%Session{} = session), do: Session.snapshot(session)
  def snapshot(server), do: Server.snapshot(server)

  @spec restore(t(), binary()) :: :ok | {:error, String.t()}
  def restore(%Session{} = session, snapshot) do
    with {:ok, _same} <- Session.restore(session, snapshot), do: :ok
  end

  def restore(server, snapshot), do: Server.restore(server, snapshot)

  @doc """
  The shell's working directory, to resolve relative paths against: what
  `pwd` prints, or `/` when that cannot be learned.
  """
  @spec cwd(t()) :: String.t()
  def cwd(target) do
    case exec(target, "builtin pwd", []) do
      {:ok, %{exit_code: 0, stdout: "/" <> _ = out}} -> String.trim_trailing(out, "\n")
      _ -> "/"
    end
  end

  @doc "`path` made absolute against the shell's working directory."
  @spec absolute(t(), String.t()) :: String.t()
  def absolute(_target, "/" <> _ = path), do: path
  def absolute(target, path), do: Path.expand(path, cwd(target))
end
