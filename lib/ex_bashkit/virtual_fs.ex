defmodule ExBashkit.VirtualFs do
  @moduledoc """
  A filesystem served by your application, mounted into a session with the
  `:virtual_fs` option of `ExBashkit.Session.new/1`.

  Scripts use it with ordinary commands — `cat`, `echo >`, `>>`, `ls`,
  `mkdir`, `rm`, `mv`, `find` — and each filesystem operation under the
  mount becomes a call to your backend. "Files" can be computed on demand,
  or proxied to a database or an object store, without giving the script
  any real file or network access.

  ## Backends

  A backend is one of:

    * a module implementing this behaviour; its callbacks get `[]` as `arg`;
    * `{module, arg}`, passing `arg` to every callback;
    * a 1-arity function receiving a request map (see `t:request/0`), for
      inline use.

  Paths arrive rooted at the mount: with a backend mounted at `/api`, the
  script's `cat /api/users/1.json` calls `read("/users/1.json", arg)`.
  Every callback is optional; an operation a backend does not implement
  fails with `:enotsup`. A backend that cannot `stat` its root still shows
  it as a directory.

  ## Results and errors

  Errors are `{:error, reason}` where `reason` is a POSIX-style atom, which
  the shell's commands report the usual way, or a message string:

  | reason | the script sees |
  |---|---|
  | `:enoent` | `No such file or directory` |
  | `:eacces`, `:eperm` | `Permission denied` |
  | `:eexist` | `File exists` |
  | `:enotdir`, `:eisdir` | `Not a directory`, `Is a directory` |
  | `:enotempty` | `Directory not empty` |
  | `:erofs` | `Read-only file system` |
  | `:enotsup` | `Unsupported` |
  | a string | that message |

  The failure model is the one of custom builtins: a callback that raises,
  exits, throws, returns something outside its contract, or runs longer
  than the session's `:builtin_timeout_ms` fails only that operation (a
  timeout as `:etimedout`), and the session stays usable. Listings are
  checked before the shell sees them: an entry named `""`, `"."` or `".."`,
  or containing `/` or a NUL byte, makes the whole listing invalid.

  Callbacks run in a short-lived process of their own, not in the process
  that called `ExBashkit.Session.exec/2`, and only while a script runs:
  `ExBashkit.Session.read_file/2` and friends return `{:error, _}` for paths
  under a virtual mount. A callback must not call `exec/2` on the session it
  serves (that returns an error at once); driving another session is fine.

  ## Example

  A read-only key/value view, one file per key:

      defmodule MyApp.KvFs do
        @behaviour ExBashkit.VirtualFs

        @impl true
        def read("/" <> key, store) do
          case Map.fetch(store, key) do
            {:ok, value} -> {:ok, value}
            :error -> {:error, :enoent}
          end
        end

        @impl true
        def list("/", store), do: {:ok, Enum.map(store, fn {key, _} -> {key, :file} end)}
        def list(_path, _store), do: {:error, :enotdir}

        @impl true
        def stat("/", _store), do: {:ok, %{type: :dir, size: 0}}

        def stat("/" <> key, store) do
          case Map.fetch(store, key) do
            {:ok, value} -> {:ok, %{type: :file, size: byte_size(value)}}
            :error -> {:error, :enoent}
          end
        end

        @impl true
        def write(_path, _content, _store), do: {:error, :erofs}
      end

      session =
        ExBashkit.Session.new(
          virtual_fs: %{"/kv" => {MyApp.KvFs, %{"greeting" => "hello\\n"}}}
        )

      {:ok, %ExBashkit.Result{stdout: "greeting\\nhello\\n"}} =
        ExBashkit.Session.exec(session, "ls /kv; cat /kv/greeting")

  The same backend as a function:

      iex> store = %{"greeting" => "hello\\n"}
      iex> backend = fn
      ...>   %{op: :read, path: "/" <> key} -> with :error <- Map.fetch(store, key), do: {:error, :enoent}
      ...>   %{op: :list, path: "/"} -> {:ok, for({key, _} <- store, do: {key, :file})}
      ...>   _ -> {:error, :enotsup}
      ...> end
      iex> session = ExBashkit.Session.new(virtual_fs: %{"/kv" => backend})
      iex> {:ok, result} = ExBashkit.Session.exec(session, "ls /kv; cat /kv/greeting; cat /kv/nope")
      iex> {result.stdout, result.stderr}
      {"greeting\\nhello\\n", "cat: /kv/nope: No such file or directory\\n"}
  """

  @typedoc "A path inside the mount, starting with `/`."
  @type path :: String.t()

  @typedoc "Why an operation failed: a POSIX-style atom or a message."
  @type reason :: atom() | String.t()

  @typedoc "A directory entry's kind."
  @type kind :: :file | :dir

  @typedoc "What a function backend receives: one map per operation."
  @type request ::
          %{op: :read, path: path()}
          | %{op: :write, path: path(), content: binary()}
          | %{op: :append, path: path(), content: binary()}
          | %{op: :list, path: path()}
          | %{op: :stat, path: path()}
          | %{op: :mkdir, path: path(), parents: boolean()}
          | %{op: :remove, path: path(), recursive: boolean()}
          | %{op: :rename, path: path(), to: path()}

  @typedoc "A backend for one mount."
  @type backend :: module() | {module(), term()} | (request() -> term())

  @doc "The contents of the file at `path`."
  @callback read(path(), arg :: term()) :: {:ok, iodata()} | {:error, reason()}

  @doc "Replaces the contents of the file at `path`, creating it if needed."
  @callback write(path(), content :: binary(), arg :: term()) :: :ok | {:error, reason()}

  @doc "Appends to the file at `path`, creating it if needed."
  @callback append(path(), content :: binary(), arg :: term()) :: :ok | {:error, reason()}

  @doc "The entries of the directory at `path`: names, not paths."
  @callback list(path(), arg :: term()) ::
              {:ok,
               [{String.t(), kind()} | {String.t(), %{type: kind(), size: non_neg_integer()}}]}
              | {:error, reason()}

  @doc "The kind and size of `path`."
  @callback stat(path(), arg :: term()) ::
              {:ok, %{type: kind(), size: non_neg_integer()}} | {:error, reason()}

  @doc "Creates the directory `path`; with `parents`, its missing parents too (`mkdir -p`)."
  @callback mkdir(path(), parents :: boolean(), arg :: term()) :: :ok | {:error, reason()}

  @doc "Removes `path`; a non-empty directory only when `recursive`."
  @callback remove(path(), recursive :: boolean(), arg :: term()) :: :ok | {:error, reason()}

  @doc "Moves `path` to `to`, both inside this mount."
  @callback rename(path(), to :: path(), arg :: term()) :: :ok | {:error, reason()}

  @optional_callbacks read: 2,
                      write: 3,
                      append: 3,
                      list: 2,
                      stat: 2,
                      mkdir: 3,
                      remove: 3,
                      rename: 3

  @ops [:read, :write, :append, :list, :stat, :mkdir, :remove, :rename]

  @doc false
  @spec ops() :: [atom()]
  def ops, do: @ops

  @doc false
  # The request map for an operation as the NIF sends it.
  @spec request(atom(), path(), term()) :: request()
  def request(op, path, _extra) when op in [:read, :list, :stat], do: %{op: op, path: path}

  def request(op, path, content) when op in [:write, :append],
    do: %{op: op, path: path, content: content}

  def request(:mkdir, path, parents), do: %{op: :mkdir, path: path, parents: parents}
  def request(:remove, path, recursive), do: %{op: :remove, path: path, recursive: recursive}
  def request(:rename, path, to), do: %{op: :rename, path: path, to: to}

  @doc false
  @spec dispatch(backend(), request()) :: term()
  def dispatch(fun, request) when is_function(fun, 1), do: fun.(request)
  def dispatch(module, request) when is_atom(module), do: dispatch({module, []}, request)

  def dispatch({module, arg}, %{op: op} = request) do
    args = arguments(request) ++ [arg]

    if function_exported?(module, op, length(args)) do
      apply(module, op, args)
    else
      {:error, :enotsup}
    end
  end

  defp arguments(%{op: op, path: path}) when op in [:read, :list, :stat], do: [path]
  defp arguments(%{path: path, content: content}), do: [path, content]
  defp arguments(%{path: path, parents: parents}), do: [path, parents]
  defp arguments(%{path: path, recursive: recursive}), do: [path, recursive]
  defp arguments(%{path: path, to: to}), do: [path, to]

  @doc false
  # A backend's answer in the shape the NIF decodes, or :error when it breaks
  # the contract. Listings are checked here: names become paths in the shell.
  @spec reply(atom(), term()) :: {:ok, term()} | :error
  def reply(_op, {:error, reason}) when is_atom(reason), do: {:ok, {:error, reason}}

  def reply(_op, {:error, reason}) when is_binary(reason) do
    if String.valid?(reason), do: {:ok, {:error, reason}}, else: :error
  end

  def reply(:read, {:ok, iodata}) do
    {:ok, {:data, IO.iodata_to_binary(iodata)}}
  rescue
    ArgumentError -> :error
  end

  def reply(:list, {:ok, entries}) when is_list(entries) do
    entries
    |> Enum.reduce_while([], fn entry, acc ->
      case entry(entry) do
        {:ok, entry} -> {:cont, [entry | acc]}
        :error -> {:halt, :error}
      end
    end)
    |> case do
      :error -> :error
      entries -> {:ok, {:entries, Enum.reverse(entries)}}
    end
  end

  def reply(:stat, {:ok, %{type: type} = stat}) when type in [:file, :dir] do
    case Map.get(stat, :size, 0) do
      size when is_integer(size) and size >= 0 -> {:ok, {:stat, type, size}}
      _ -> :error
    end
  end

  def reply(op, :ok) when op in [:write, :append, :mkdir, :remove, :rename], do: {:ok, :ok}
  def reply(_op, _other), do: :error

  defp entry({name, type}) when type in [:file, :dir], do: entry({name, %{type: type}})

  defp entry({name, %{type: type} = stat}) when type in [:file, :dir] do
    size = Map.get(stat, :size, 0)

    if entry_name?(name) and is_integer(size) and size >= 0,
      do: {:ok, {name, type, size}},
      else: :error
  end

  defp entry(_), do: :error

  defp entry_name?(name) do
    is_binary(name) and name not in ["", ".", ".."] and String.valid?(name) and
      not String.contains?(name, ["/", <<0>>])
  end
end
