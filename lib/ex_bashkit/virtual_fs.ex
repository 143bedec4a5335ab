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

    * a module implementing this behaviour; its callbacks get `nil` as `arg`;
    * `{module, arg}`, passing `arg` to every callback;
    * a 1-arity function receiving a request map (see `t:request/0`), for
      inline use.

  Every callback takes the per-mount `arg` first, then a path rooted at the
  mount: with a backend mounted at `/api`, the script's
  `cat /api/users/1.json` calls `read(arg, "/users/1.json")`, and the mount
  point itself arrives as `"/"`. This is the contract of ex_bashkit 0.1.7,
  so its backends work unchanged.

  `use ExBashkit.VirtualFs` declares the behaviour and gives every callback
  an overridable default: `{:error, :enotsup}` for all of them except
  `stat/2`, which is derived from `read/2` (a file whose content `read/2`
  returns is a file of that size). A backend that implements only `read/2`
  therefore gets working `cat`, `test -f` and `stat`; override `stat/2` to
  avoid fetching content just to size it. A module that declares
  `@behaviour ExBashkit.VirtualFs` without `use` gets `:enotsup` for the
  callbacks it leaves out, and no derived `stat/2`. A backend that cannot
  `stat` its root still shows it as a directory.

  | script | callback |
  |---|---|
  | `cat f`, `source f`, `$(<f)`, `cp f …` | `read/2` |
  | `echo x > f` | `write/3` (replaces the file) |
  | `echo x >> f` | `append/3` |
  | `ls d`, `find d`, globs | `list/2` |
  | `mkdir d`, `mkdir -p a/b` | `mkdir/3` (`recursive` is `true` for `-p`) |
  | `rm f`, `rm -r d` | `remove/3` (`recursive` is `true` for `-r`) |
  | `test -e f`, `[ -d d ]`, `stat f` | `stat/2` |
  | `mv a b` inside the mount | `rename/3` (beyond 0.1.7; optional) |

  ## Results and errors

  A listing entry is a bare name (a file), `{name, :file | :dir}`, or
  `{name, %{type: :file | :dir, size: bytes}}`. Errors are
  `{:error, reason}` where `reason` is a POSIX-style atom, which the
  shell's commands report the usual way, or a message string:

  | reason | the script sees |
  |---|---|
  | `:enoent` | `No such file or directory` |
  | `:eacces`, `:eperm` | `Permission denied` |
  | `:eexist` | `File exists` |
  | `:enotdir`, `:eisdir` | `Not a directory`, `Is a directory` |
  | `:enotempty` | `Directory not empty` |
  | `:erofs` | `Read-only file system` |
  | `:enotsup` | `Operation not supported` |
  | a string | that message |

  The failure model is the one of custom builtins: a callback that raises,
  exits, throws, returns something outside its contract, or runs longer
  than the session's `:builtin_timeout_ms` fails only that operation (a
  timeout as `:etimedout`), and the session stays usable. Replies are
  checked before the shell sees them: a listing entry named `""`, `"."` or
  `".."`, or containing `/` or a NUL byte, or a size that is not a
  non-negative 64-bit integer makes the whole reply invalid, and a reply
  larger than `config :ex_bashkit, :max_reply_bytes` (see
  `ExBashkit.Session`, "Operator ceilings") fails that operation.

  Callbacks run in a short-lived process of their own, not in the process
  that called `ExBashkit.Session.exec/2`, and only while a script runs:
  `ExBashkit.Session.read_file/2` and friends return `{:error, _}` for paths
  that lead into a virtual mount, directly or through a symlink. A callback
  must not call `exec/2` on the session it serves (that returns an error at
  once); driving another session is fine.

  ## Example

  A key/value store held by an `Agent`, one file per key:

      defmodule MyApp.KvFs do
        use ExBashkit.VirtualFs

        @impl true
        def read(store, "/" <> key) do
          case Agent.get(store, &Map.fetch(&1, key)) do
            {:ok, value} -> {:ok, value}
            :error -> {:error, :enoent}
          end
        end

        @impl true
        def write(store, "/" <> key, data), do: Agent.update(store, &Map.put(&1, key, data))

        @impl true
        def list(store, "/"), do: {:ok, Agent.get(store, &Map.keys/1)}
        def list(_store, _path), do: {:error, :enotdir}

        # stat/2 is derived from read/2; remove/3 and the rest are :enotsup.
      end

      {:ok, store} = Agent.start_link(fn -> %{"greeting" => "hello\\n"} end)
      session = ExBashkit.Session.new(virtual_fs: %{"/kv" => {MyApp.KvFs, store}})

      {:ok, %ExBashkit.Result{stdout: "greeting\\nhello\\n"}} =
        ExBashkit.Session.exec(session, "ls /kv; cat /kv/greeting")

      {:ok, %ExBashkit.Result{exit_code: 0}} =
        ExBashkit.Session.exec(session, "echo 42 > /kv/answer; test -f /kv/answer")

      %{"answer" => "42\\n"} = Agent.get(store, & &1)

  The function form receives `%{op: op, path: path}`, plus `:data` for
  `:write` and `:append`, `:recursive` for `:mkdir` and `:remove`, and
  `:to` for `:rename`:

      iex> store = %{"greeting" => "hello\\n"}
      iex> backend = fn
      ...>   %{op: :read, path: "/" <> key} -> with :error <- Map.fetch(store, key), do: {:error, :enoent}
      ...>   %{op: :list, path: "/"} -> {:ok, Map.keys(store)}
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

  @typedoc "A listing entry: a bare name is a file."
  @type entry ::
          String.t()
          | {String.t(), kind()}
          | {String.t(), %{type: kind(), size: non_neg_integer()}}

  @typedoc "What a function backend receives: one map per operation."
  @type request ::
          %{op: :read, path: path()}
          | %{op: :write, path: path(), data: binary()}
          | %{op: :append, path: path(), data: binary()}
          | %{op: :list, path: path()}
          | %{op: :stat, path: path()}
          | %{op: :mkdir, path: path(), recursive: boolean()}
          | %{op: :remove, path: path(), recursive: boolean()}
          | %{op: :rename, path: path(), to: path()}

  @typedoc "A backend for one mount."
  @type backend :: module() | {module(), term()} | (request() -> term())

  @doc "The contents of the file at `path`."
  @callback read(arg :: term(), path()) :: {:ok, iodata()} | {:error, reason()}

  @doc "Replaces the contents of the file at `path`, creating it if needed."
  @callback write(arg :: term(), path(), data :: binary()) :: :ok | {:error, reason()}

  @doc "Appends to the file at `path`, creating it if needed."
  @callback append(arg :: term(), path(), data :: binary()) :: :ok | {:error, reason()}

  @doc "Creates the directory `path`; with `recursive`, its missing parents too (`mkdir -p`)."
  @callback mkdir(arg :: term(), path(), recursive :: boolean()) :: :ok | {:error, reason()}

  @doc "Removes `path`; a non-empty directory only when `recursive`."
  @callback remove(arg :: term(), path(), recursive :: boolean()) :: :ok | {:error, reason()}

  @doc "The entries of the directory at `path`: names, not paths."
  @callback list(arg :: term(), path()) :: {:ok, [entry()]} | {:error, reason()}

  @doc "The kind and size of `path`."
  @callback stat(arg :: term(), path()) ::
              {:ok, %{type: kind(), size: non_neg_integer()}} | {:error, reason()}

  @doc "Moves `path` to `to`, both inside this mount. Optional; not part of 0.1.7."
  @callback rename(arg :: term(), path(), to :: path()) :: :ok | {:error, reason()}

  # Each operation's callback arity, and the request key of its third value.
  @ops %{
    read: {2, nil},
    list: {2, nil},
    stat: {2, nil},
    write: {3, :data},
    append: {3, :data},
    mkdir: {3, :recursive},
    remove: {3, :recursive},
    rename: {3, :to}
  }

  @arities for {op, {arity, _}} <- @ops, do: {op, arity}

  @optional_callbacks @arities

  @doc """
  Declares the behaviour and defines every callback with an overridable
  default: `{:error, :enotsup}`, except `stat/2`, derived from `read/2`.
  """
  defmacro __using__(_opts) do
    quote do
      @behaviour ExBashkit.VirtualFs

      @impl ExBashkit.VirtualFs
      def read(_arg, _path), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def write(_arg, _path, _data), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def append(_arg, _path, _data), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def mkdir(_arg, _path, _recursive), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def remove(_arg, _path, _recursive), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def list(_arg, _path), do: {:error, :enotsup}
      @impl ExBashkit.VirtualFs
      def rename(_arg, _path, _to), do: {:error, :enotsup}

      # A file is whatever read/2 returns content for; anything else read/2
      # answers (an error) is the answer.
      @impl ExBashkit.VirtualFs
      def stat(arg, path), do: ExBashkit.VirtualFs.stat_from_read(read(arg, path))

      defoverridable unquote(@arities)
    end
  end

  @doc false
  # The stat/2 that `use` derives from a read/2 result.
  @spec stat_from_read(term()) :: term()
  def stat_from_read({:ok, content}) do
    {:ok, %{type: :file, size: IO.iodata_length(content)}}
  rescue
    ArgumentError -> {:ok, content}
  end

  def stat_from_read(other), do: other

  @doc false
  @spec ops() :: [{atom(), 2 | 3}]
  def ops, do: @arities

  @doc false
  @spec dispatch(backend(), request()) :: term()
  def dispatch(fun, request) when is_function(fun, 1), do: fun.(request)
  def dispatch(module, request) when is_atom(module), do: dispatch({module, nil}, request)

  def dispatch({module, arg}, %{op: op, path: path} = request) do
    args =
      case Map.fetch!(@ops, op) do
        {2, nil} -> [arg, path]
        {3, key} -> [arg, path, Map.fetch!(request, key)]
      end

    if function_exported?(module, op, length(args)) do
      apply(module, op, args)
    else
      {:error, :enotsup}
    end
  end

  # Sizes cross into the interpreter as u64.
  @max_size 0xFFFF_FFFF_FFFF_FFFF

  defguardp size?(size) when is_integer(size) and size >= 0 and size <= @max_size

  # The POSIX-style reasons the shell reports the usual way (the protocol
  # crate's `Errno`); any other atom is reported by its name.
  @codes ~w(enoent eacces eperm eexist enotdir eisdir enotempty enotsup eopnotsupp
            etimedout erofs enospc einval)a

  @doc false
  # A backend's answer in the shape the NIF decodes, or :error when it breaks
  # the contract. Listings are checked here: names become paths in the shell.
  @spec reply(atom(), term()) :: {:ok, term()} | :error
  def reply(_op, {:error, reason}) when reason in @codes, do: {:ok, {:error, reason}}

  def reply(_op, {:error, reason}) when is_atom(reason),
    do: {:ok, {:error, "virtual_fs error: #{reason}"}}

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
  rescue
    # An improper list.
    FunctionClauseError -> :error
  end

  def reply(:stat, {:ok, %{type: type} = stat}) when type in [:file, :dir] do
    case Map.get(stat, :size, 0) do
      size when size?(size) -> {:ok, {:stat, type, size}}
      _ -> :error
    end
  end

  def reply(op, :ok) when op in [:write, :append, :mkdir, :remove, :rename], do: {:ok, :ok}
  def reply(_op, _other), do: :error

  defp entry(name) when is_binary(name), do: entry({name, %{type: :file}})
  defp entry({name, type}) when type in [:file, :dir], do: entry({name, %{type: type}})

  defp entry({name, %{type: type} = stat}) when type in [:file, :dir] do
    size = Map.get(stat, :size, 0)

    if entry_name?(name) and size?(size),
      do: {:ok, {name, type, size}},
      else: :error
  end

  defp entry(_), do: :error

  defp entry_name?(name) do
    is_binary(name) and name not in ["", ".", ".."] and String.valid?(name) and
      not String.contains?(name, ["/", <<0>>])
  end
end
