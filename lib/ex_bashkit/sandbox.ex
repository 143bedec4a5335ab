defprotocol ExBashkit.Sandbox do
  @moduledoc """
  One contract for whatever runs scripts: a session (in the VM or in a
  worker process), a session server, or a backend of your own.

  The LLM tools (`ExBashkit.Tool`), the interactive shell
  (`mix ex_bashkit.shell`) and the MCP server (`ExBashkit.MCP`) take a
  sandbox and call nothing but these functions, so they work the same on
  every backend, and each function answers the same shape whichever
  backend serves it.

  Implemented for:

    * `ExBashkit.Session`, every isolation;
    * servers (`ExBashkit.Server`): a pid, a registered name,
      `{:global, term}`, `{:via, module, term}` or `{name, node}`, as
      `t:GenServer.server/0` names them.

  Implement it for your own struct to put the tools in front of another
  backend: every function below, with the answers its `@spec` gives.

      iex> sandbox = ExBashkit.Session.new()
      iex> :ok = ExBashkit.Sandbox.write_file(sandbox, "/note.txt", "hi")
      iex> {:ok, result} = ExBashkit.Sandbox.exec(sandbox, "cat /note.txt", [])
      iex> result.stdout
      "hi"
      iex> {:ok, server} = ExBashkit.Server.start()
      iex> ExBashkit.Sandbox.mkdir(server, "/a/b", parents: true)
      :ok
      iex> ExBashkit.Sandbox.list_dir(server, "/a", [])
      {:ok, [{"b", :dir}]}
      iex> ExBashkit.Server.stop(server)
      :ok
  """

  @typedoc "Anything that implements the protocol."
  @type t :: term()

  @doc "Runs `script`, as `ExBashkit.Session.exec/3` with its options."
  @spec exec(t(), String.t(), keyword()) ::
          {:ok, ExBashkit.Result.t()} | {:error, String.t() | ExBashkit.Error.t()}
  def exec(sandbox, script, opts)

  @doc "Stops the running script: `:ok`, or `:idle` when none runs."
  @spec cancel(t()) :: :ok | :idle | {:error, String.t()}
  def cancel(sandbox)

  @doc "The content of the file at `path`."
  @spec read_file(t(), Path.t()) :: {:ok, binary()} | {:error, String.t()}
  def read_file(sandbox, path)

  @doc "Writes `content` to `path`, replacing the file."
  @spec write_file(t(), Path.t(), iodata()) :: :ok | {:error, String.t()}
  def write_file(sandbox, path, content)

  @doc """
  The entries of the directory at `path`, with their types; with
  `details: true`, maps with their size, mode and mtime too.
  """
  @spec list_dir(t(), Path.t(), keyword()) ::
          {:ok, [{String.t(), ExBashkit.Session.fs_type()} | ExBashkit.Session.entry()]}
          | {:error, String.t()}
  def list_dir(sandbox, path, opts)

  @doc "Makes a directory; `parents: true` makes its missing parents too."
  @spec mkdir(t(), Path.t(), keyword()) :: :ok | {:error, String.t()}
  def mkdir(sandbox, path, opts)

  @doc "Removes a file, or a directory with `recursive: true`."
  @spec remove(t(), Path.t(), keyword()) :: :ok | {:error, String.t()}
  def remove(sandbox, path, opts)

  @doc "Moves `from` to `to`; an existing `to` only with `overwrite: true`."
  @spec rename(t(), Path.t(), Path.t(), keyword()) :: :ok | {:error, String.t()}
  def rename(sandbox, from, to, opts)

  @doc "The type and size of what is at `path`; with `details: true`, its mode and mtime too."
  @spec stat(t(), Path.t(), keyword()) ::
          {:ok,
           %{type: ExBashkit.Session.fs_type(), size: non_neg_integer()}
           | ExBashkit.Session.entry()}
          | {:error, String.t()}
  def stat(sandbox, path, opts)

  @doc "Sets the permission bits of `path`; `recursive: true` below it too."
  @spec chmod(t(), Path.t(), non_neg_integer(), keyword()) :: :ok | {:error, String.t()}
  def chmod(sandbox, path, mode, opts)

  @doc "The session's state as bytes, as `ExBashkit.Session.snapshot/2`."
  @spec snapshot(t(), keyword()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(sandbox, opts)

  @doc "Replaces the session's state with a snapshot's, in place."
  @spec restore(t(), binary(), keyword()) :: :ok | {:error, String.t()}
  def restore(sandbox, snapshot, opts)
end

# A server, as GenServer names one, generated from the one list of
# operations. In this file because the protocol refers to its
# implementations for built-in types by name: elsewhere, that file and this
# one would depend on each other.
defimpl ExBashkit.Sandbox, for: PID do
  alias ExBashkit.Sandbox.Contract

  for {name, arguments} <- Contract.operations() do
    variables = Contract.variables(arguments)

    def unquote(name)(server, unquote_splicing(variables)),
      do: ExBashkit.Server.unquote(name)(server, unquote_splicing(variables))
  end
end

# A registered server: an atom or a tuple is a sandbox only when it has the
# shape of a GenServer name (`nil`, booleans and other tuples are not).
defimpl ExBashkit.Sandbox, for: [Atom, Tuple] do
  alias ExBashkit.Sandbox.Contract

  for {name, arguments} <- Contract.operations() do
    variables = Contract.variables(arguments)

    def unquote(name)(server, unquote_splicing(variables)),
      do: ExBashkit.Server.unquote(name)(name!(server), unquote_splicing(variables))
  end

  defp name!(name) when is_atom(name) and name not in [nil, true, false], do: name
  defp name!({:global, _} = name), do: name
  defp name!({:via, module, _} = name) when is_atom(module), do: name
  defp name!({name, node} = server) when is_atom(name) and is_atom(node), do: server

  defp name!(other) do
    raise Protocol.UndefinedError,
      protocol: ExBashkit.Sandbox,
      value: other,
      description:
        "an atom or a tuple is a sandbox only as a server's name: a registered name, " <>
          "{:global, term}, {:via, module, term} or {name, node}"
  end
end
