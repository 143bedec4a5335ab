# Over 500 lines for its documentation: 210 are code, the rest the docs
# and doctests of the public API (the work lives in session/).
defmodule ExBashkit.Session do
  @moduledoc """
  A persistent, stateful sandbox.

  Unlike `ExBashkit.exec/1` — which runs each script in a fresh interpreter —
  a session is a long-lived bashkit interpreter whose state carries across
  calls: environment variables, the current working directory, the in-memory
  virtual filesystem, shell functions, and aliases all persist from one
  `exec/2` to the next, exactly as in an interactive shell.

  The handle is an opaque resource. Hold it for as long as you want the state
  to live; it is reclaimed when it is garbage-collected. A session serializes
  its own calls — concurrent `exec/2` calls on the same session run one at a
  time, in arrival order.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "export COUNT=1")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo $COUNT")
      iex> result.stdout
      "1\\n"

  A session is meant to last a whole agent conversation: there is no cap on
  the number of `exec/2` calls (bashkit's own per-instance cap of 1,000 calls
  is lifted); each script is bounded by the sandbox's per-script limits.

  ## Options

  `new/1` accepts options that seed the session's initial state and draw its
  security boundary:

  #{ExBashkit.Session.Options.docs()}

  ## Virtual filesystem

  A session's in-memory filesystem is shared between scripts and the host.
  Use `write_file/3` to place files (e.g. inputs) and `read_file/2` to pull
  files back out (e.g. results a script produced) without going through a
  script:

      iex> session = ExBashkit.Session.new(files: %{"/in.txt" => "data\\n"})
      iex> {:ok, _} = ExBashkit.Session.exec(session, "wc -l < /in.txt > /out.txt")
      iex> ExBashkit.Session.read_file(session, "/out.txt")
      {:ok, "1\\n"}

  The file functions resolve paths from the filesystem root, independent of
  the session's working directory (a relative `"out.txt"` means
  `"/out.txt"`). They do not queue behind a running script: `read_file/2` and
  `stat/2` answer while one runs.

  ## Guides

  Long-form topics live in the guides, whose examples run as tests:

    * `guides/limits.md` — every `:limits` key, memory bounds, operator ceilings.
    * `guides/host_access.md` — host directories (`:mounts`), the network (`:allow_net`).
    * `guides/callbacks.md` — `:builtins` and `:virtual_fs`: Elixir code scripts call.
    * `guides/python.md` — the sandboxed Pythons: Monty and CPython side by side.
    * `guides/javascript.md` — `node` in a worker process: what it has, its limits.
    * `guides/how_scripts_run.md` — threads, timeouts, cancellation and panics.
    * `guides/isolation.md` — `isolation: :process`: sessions in worker processes.
    * `guides/sandbox_per_conversation.md` — sessions as supervised processes (`ExBashkit.Server`).
    * `guides/live_control.md` — per-call options, streaming, `cancel/1`, `ExBashkit.Error`, what each call cost.
    * `guides/fork_and_checkpoint.md` — `fork/2`, `checkpoint/1` and `rollback/2`.
  """

  alias ExBashkit.{Callbacks, Interpreter, Result}
  alias ExBashkit.Session.{Exec, Files, Fork, Options, Prepared, Snapshot}

  @enforce_keys [:resource]
  # `id` is the resource's number, read once: it names the session in
  # `inspect/1` and in errors without a NIF call.
  # `approval`: the `:approve` function (or nil) and how long it may take.
  # `secrets`: `:allow_net` headers given as functions, called before each call.
  defstruct [:resource, :id, :callbacks, :secrets, approval: {nil, 30_000}, timeout_ms: 30_000]

  @opaque t :: %__MODULE__{
            resource: Interpreter.t(),
            id: pos_integer(),
            callbacks: Callbacks.t() | nil,
            timeout_ms: pos_integer()
          }

  @typedoc "A filesystem entry's kind, as reported by `stat/2` and `list_dir/2`."
  @type fs_type :: :file | :dir | :symlink | :fifo

  @typedoc """
  An entry with `details: true` (`stat/3`, `list_dir/3`): its permission
  bits (`0o644`) and when it was last modified, in Unix seconds.
  """
  @type entry :: %{
          optional(:name) => String.t(),
          type: fs_type(),
          size: non_neg_integer(),
          mode: non_neg_integer(),
          mtime: integer()
        }

  @typedoc "A key of the `:limits` option."
  @type limit_key ::
          unquote(
            ExBashkit.Session.Options.Limits.keys()
            |> Enum.reverse()
            |> Enum.reduce(&{:|, [], [&1, &2]})
          )

  @typedoc """
  Access mode of a host directory mount. `:read_write` keeps each
  repository's git metadata (hooks, config) for the sandbox's own git;
  `{:read_write, git_metadata: :writable}` lets every writer change it
  (see "What the sandbox may write on your disk" in `guides/security.md`).
  """
  @type mount_mode ::
          :read_only | :read_write | {:read_write, [{:git_metadata, :writable | :protected}]}

  @type option ::
          {:env, %{optional(String.t() | atom()) => String.t()} | keyword()}
          | {:cwd, Path.t()}
          | {:username, String.t()}
          | {:hostname, String.t()}
          | {:files, %{optional(Path.t()) => iodata()} | [{Path.t(), iodata()}]}
          | {:limits,
             [{limit_key(), non_neg_integer()}] | %{optional(limit_key()) => non_neg_integer()}}
          | {:mounts, [{Path.t(), Path.t(), mount_mode()}]}
          | {:allowed_mount_paths, [Path.t()]}
          | {:allow_net, [String.t()] | :all}
          | {:block_private_ips, boolean()}
          | {:builtins, %{optional(String.t() | atom()) => ExBashkit.Builtin.t()}}
          | {:builtin_timeout_ms, pos_integer()}
          | {:virtual_fs, %{optional(Path.t()) => ExBashkit.VirtualFs.backend()}}
          | {:python,
             boolean()
             | :monty
             | :cpython
             | [runtime: :monty | :cpython, name: String.t(), names: [String.t()]]}

  @doc """
  Creates a new persistent session, optionally seeding its initial state.

  See the module documentation for the options. Raises `ArgumentError` for a
  malformed option (naming it), a `:files` entry that cannot be written, or a
  `:mounts` entry that cannot be attached (naming the mount).

  ## Prepared interpreters

  `new()` without options takes an interpreter built ahead of need, a
  hand-over of a few microseconds instead of a build of tens: the library
  keeps `config :ex_bashkit, prepared_sessions: n` of them (default 4, 0 for
  none), built with the default options on a thread of its own while no
  script runs (or 100 ms after a hand-over, if scripts keep running), and
  refilled when it runs low or once hand-overs pause. When a burst of `new()` calls empties it, the
  callers still do not wait for a build: each gets its session at once, and
  its interpreter is built next by that thread, or by the session's first
  call if the thread has not started on it (then that call waits for one
  build, what `new()` would have cost). Sessions with
  options, and isolated ones, are built when asked. `ExBashkit.stats/0`
  reports how many wait (`:prepared`); they are not counted as sessions
  until handed over and built. `ExBashkit.exec/2` without options runs on a
  prepared interpreter when one is ready, and drops it after.

      iex> session = ExBashkit.Session.new(env: [GREETING: "hi"], cwd: "/work", username: "ada")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo $GREETING $(pwd) $(whoami)")
      iex> result.stdout
      "hi /work ada\\n"
  """
  @spec new([option()]) :: t()
  def new(opts \\ []) do
    {opts, prepared} =
      if opts == [], do: Prepared.defaults(), else: {Options.validate!(opts), nil}

    session =
      case Interpreter.start(opts.native, opts.isolation, prepared) do
        {:ok, interpreter} ->
          %__MODULE__{
            resource: interpreter,
            id: Interpreter.id(interpreter),
            callbacks: opts.callbacks,
            approval: opts.approval,
            secrets: opts.secrets,
            timeout_ms: Options.Limits.timeout_ms(opts.native)
          }

        {:error, message} ->
          raise ArgumentError, "cannot create session: #{message}"
      end

    Enum.each(opts.files, fn {path, content} ->
      with {:error, message} <- write_file(session, path, content) do
        raise ArgumentError, "cannot seed :files entry #{inspect(path)}: #{message}"
      end
    end)

    session
  end

  @doc """
  Executes `script` against `session`, mutating it in place.

  Any env/cwd/filesystem/function changes the script makes persist for the
  next call. Returns `{:ok, %ExBashkit.Result{}}` on success — a non-zero
  `exit_code` is still `{:ok, ...}`, just like a real shell — or
  `{:error, message}` if the script could not be parsed, is not valid UTF-8,
  or the interpreter itself failed (a sandbox limit, for instance). The
  session stays usable after an error.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "cd /tmp")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "pwd")
      iex> result.stdout
      "/tmp\\n"

  ## Options

  Options apply to this call only (see `guides/live_control.md`):

  #{ExBashkit.Session.ExecOptions.docs()}

  Input, arguments and a variable for one call:

      iex> session = ExBashkit.Session.new()
      iex> {:ok, result} =
      ...>   ExBashkit.Session.exec(session, ~S(read -r line; echo "$1 $GREETING $line"),
      ...>     stdin: "world\\n", args: ["hello"], env: %{"GREETING" => "dear"}
      ...>   )
      iex> result.stdout
      "hello dear world\\n"
      iex> {:ok, result} = ExBashkit.Session.exec(session, ~S(echo "[$GREETING]"))
      iex> result.stdout
      "[]\\n"

  Output as it is produced, and why a script ended, as data:

      iex> session = ExBashkit.Session.new()
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo a; echo b", into: [])
      iex> result.stdout
      ["a\\n", "b\\n"]
      iex> {:error, %ExBashkit.Error{reason: :timeout, stdout: "before\\n"}} =
      ...>   ExBashkit.Session.exec(session, "echo before; sleep 30",
      ...>     timeout_ms: 1_000, errors: :struct
      ...>   )

  #{ExBashkit.Approval.docs()}
  """
  @spec exec(t(), String.t(), keyword()) ::
          {:ok, Result.t()} | {:error, String.t() | ExBashkit.Error.t()}
  def exec(session, script, opts \\ []), do: Exec.run(session, resource!(session), script, opts)

  @doc false
  # `ExBashkit.Code.run/2`'s way in: `execute(input)` of the session's code.
  @spec run_code(t(), ExBashkit.Interpreter.Backend.run(), keyword()) ::
          {:ok, {Result.t(), term()}} | {:error, ExBashkit.Error.t()}
  def run_code(session, run, opts \\ []),
    do: Exec.run_code(session, resource!(session), run, opts)

  @doc """
  Stops the script running on `session`, from any process.

  The script stops within milliseconds wherever it is — in a `sleep`, a
  pending builtin or virtual_fs callback (whose process is killed), a
  network request or a Python loop — and its caller gets an error whose
  reason is `:cancelled` (as a message: `"execution cancelled by …"`).
  Scripts queued behind it still run, and the session stays usable.
  Returns `:ok`, or `:idle` when no script was running.

      iex> session = ExBashkit.Session.new()
      iex> task = Task.async(fn -> ExBashkit.Session.exec(session, "sleep 10", errors: :struct) end)
      iex> Process.sleep(100)
      iex> ExBashkit.Session.cancel(session)
      :ok
      iex> {:error, %ExBashkit.Error{reason: :cancelled}} = Task.await(task)
      iex> ExBashkit.Session.cancel(session)
      :idle
  """
  @spec cancel(t()) :: :ok | :idle
  def cancel(session), do: Exec.cancel(resource!(session))

  @doc """
  Captures the session's state as a binary you can store and later load
  with `restore/3`, here or in another VM.

  The snapshot holds the shell state — variables, exported environment,
  cwd, arrays, aliases and, unless excluded, functions — and the in-memory
  filesystem. (Traps are part of bashkit's snapshot format, but bashkit
  clears them when each `exec/2` ends, so between scripts there are none to
  carry.) It does not hold the session's configuration:
  builtins, virtual_fs backends, host mounts (their files stay on the host),
  limits and network settings belong to the session you restore into.

  A snapshot is taken between scripts: asked for while a script runs, it
  waits for that script (and any queued before it) to finish, like
  `exec/2`. Returns `{:ok, binary}` or `{:error, message}`.

  ## Options

  #{ExBashkit.Session.Snapshot.take_docs()}

  ## Examples

      iex> session = ExBashkit.Session.new()
      iex> {:ok, %ExBashkit.Result{}} = ExBashkit.Session.exec(session, "x=42")
      iex> {:ok, bytes} = ExBashkit.Session.snapshot(session)
      iex> is_binary(bytes)
      true
  """
  @spec snapshot(t(), keyword()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(session, opts \\ []), do: Snapshot.take(session, resource!(session), opts)

  @doc """
  Loads a snapshot taken by `snapshot/2` into `session`, replacing its
  shell state and in-memory filesystem. Returns `{:ok, session}` or
  `{:error, message}`.

  The session keeps its own capabilities — builtins, virtual_fs backends,
  host mounts, limits, network settings — so resuming means building a
  session with the capabilities you want, then restoring into it:

      {:ok, bytes} = ExBashkit.Session.snapshot(original)
      # ...later, or on another node...
      resumed = ExBashkit.Session.new(builtins: same, limits: same)
      {:ok, resumed} = ExBashkit.Session.restore(resumed, bytes)

  A snapshot whose content decodes to more than the session's
  `:max_snapshot_bytes` (see `guides/limits.md`) is refused before it is
  decoded. The whole snapshot is checked before anything changes: malformed,
  truncated or tampered bytes, a wrong or missing key, and a key given for
  unkeyed bytes each return `{:error, message}` and leave the session as it
  was. bashkit also refuses a snapshot taken by a session with builtins
  this one lacks (python, custom builtins), since its state may rely on
  them. Like `exec/2`, a restore waits for a running script to finish.

  ## Options

  #{ExBashkit.Session.Snapshot.restore_docs()}

  ## Examples

      iex> session = ExBashkit.Session.new()
      iex> {:ok, %ExBashkit.Result{}} = ExBashkit.Session.exec(session, "x=42")
      iex> {:ok, bytes} = ExBashkit.Session.snapshot(session)
      iex> fresh = ExBashkit.Session.new()
      iex> {:ok, fresh} = ExBashkit.Session.restore(fresh, bytes)
      iex> {:ok, result} = ExBashkit.Session.exec(fresh, "echo $x")
      iex> result.stdout
      "42\\n"
  """
  @spec restore(t(), binary(), keyword()) :: {:ok, t()} | {:error, String.t()}
  def restore(session, snapshot, opts \\ []),
    do: Snapshot.restore(session, resource!(session), snapshot, opts)

  @doc """
  Copies the session: a new, independent session with the same files,
  variables, exported environment, cwd, functions and aliases, and the same
  options (limits, builtins, mounts, network, `:approve`). `fork(session, n)`
  makes `n` of them at once and returns them in a list.

  Use it to try several approaches from one state, or to hand a prepared
  workspace to many agents. What a copy does from then on is its own: the
  original and every copy see only their own changes.

  In this VM the copies share the original's file contents until one of
  them changes a file, so a fork costs tens of microseconds however many
  bytes the session holds, and memory grows only with what the copies
  change. Host mounts are the same host directories in every copy. An
  `isolation: :process` session forks into new worker processes, each given
  a snapshot of it: milliseconds, and a copy of every file.

  A fork is taken between scripts: asked for while a script runs, it waits
  for that script (and any queued before it), like `snapshot/2`. Returns
  `{:ok, session}` (or `{:ok, [session]}` for `fork/2`) or
  `{:error, message}`; raises `ArgumentError` for a count that is not a
  positive integer.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "cd /tmp && echo draft > plan.txt && n=1")
      iex> {:ok, copy} = ExBashkit.Session.fork(session)
      iex> {:ok, _} = ExBashkit.Session.exec(copy, "echo final > plan.txt && n=2")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo $n $(pwd) $(cat plan.txt)")
      iex> result.stdout
      "1 /tmp draft\\n"
      iex> {:ok, result} = ExBashkit.Session.exec(copy, "echo $n $(pwd) $(cat plan.txt)")
      iex> result.stdout
      "2 /tmp final\\n"
  """
  @spec fork(t()) :: {:ok, t()} | {:error, String.t()}
  def fork(session) do
    with {:ok, [copy]} <- fork(session, 1), do: {:ok, copy}
  end

  @doc """
  Makes `count` copies of the session at once, as `fork/1` makes one, and
  returns them in a list: `{:ok, [session]}` or `{:error, message}`.

      iex> session = ExBashkit.Session.new(env: [ROLE: "planner"])
      iex> {:ok, copies} = ExBashkit.Session.fork(session, 2)
      iex> for copy <- copies, do: elem(ExBashkit.Session.exec(copy, "echo $ROLE"), 1).stdout
      ["planner\\n", "planner\\n"]
  """
  @spec fork(t(), pos_integer()) :: {:ok, [t()]} | {:error, String.t()}
  def fork(session, count) when is_integer(count) and count > 0,
    do: Fork.run(session, resource!(session), count)

  def fork(_session, count) do
    raise ArgumentError, "fork count must be a positive integer, got: #{inspect(count)}"
  end

  @doc """
  Records the session's state — files, variables, exported environment,
  cwd, functions and aliases — as a checkpoint, and returns its id:
  `{:ok, id}` or `{:error, message}`. `rollback/2` puts it back.

  Take one before a risky step, or after every turn of an agent, and roll
  back when it goes wrong. A checkpoint shares every file with the session
  and with the checkpoints before it, so taking one costs microseconds and
  keeping one costs what changed after it. A session keeps its latest 100,
  and at most as many bytes of files it no longer has as its `:max_fs_bytes`
  allows; the oldest go first. Checkpoints live in memory with the session
  (a snapshot is what outlives it), and an `isolation: :process` session
  has none (`{:error, message}`).

  Like `snapshot/2`, a checkpoint is taken between scripts: asked for while
  a script runs, it waits for that script.

      iex> session = ExBashkit.Session.new(isolation: :none)
      iex> {:ok, _} = ExBashkit.Session.exec(session, "echo v1 > /tmp/app.conf; stage=one")
      iex> {:ok, before} = ExBashkit.Session.checkpoint(session)
      iex> {:ok, _} = ExBashkit.Session.exec(session, "rm /tmp/app.conf; stage=two")
      iex> ExBashkit.Session.rollback(session, before)
      :ok
      iex> {:ok, result} = ExBashkit.Session.exec(session, "cat /tmp/app.conf; echo $stage")
      iex> result.stdout
      "v1\\none\\n"
  """
  @spec checkpoint(t()) :: {:ok, pos_integer()} | {:error, String.t()}
  def checkpoint(session), do: Interpreter.checkpoint(resource!(session), :take)

  @doc """
  Puts checkpoint `id` back (see `checkpoint/1`): the session's files and
  shell state become what they were when it was taken. The checkpoints
  taken after it stay, so you can go forward again. Returns `:ok`, or
  `{:error, message}` for an id the session does not keep.

      iex> session = ExBashkit.Session.new(isolation: :none)
      iex> {:ok, first} = ExBashkit.Session.checkpoint(session)
      iex> {:ok, _} = ExBashkit.Session.exec(session, "touch /tmp/made")
      iex> {:ok, second} = ExBashkit.Session.checkpoint(session)
      iex> :ok = ExBashkit.Session.rollback(session, first)
      iex> {:error, _} = ExBashkit.Session.stat(session, "/tmp/made")
      iex> :ok = ExBashkit.Session.rollback(session, second)
      iex> {:ok, %{type: :file}} = ExBashkit.Session.stat(session, "/tmp/made")
      iex> {:error, "no checkpoint 99" <> _} = ExBashkit.Session.rollback(session, 99)
  """
  @spec rollback(t(), pos_integer()) :: :ok | {:error, String.t()}
  def rollback(session, id) when is_integer(id) and id > 0 do
    with {:ok, :ok} <- Interpreter.checkpoint(resource!(session), id), do: :ok
  end

  def rollback(_session, id) do
    raise ArgumentError, "checkpoint id must be a positive integer, got: #{inspect(id)}"
  end

  @doc """
  The ids of the checkpoints the session keeps, oldest first:
  `{:ok, [id]}`, or `{:error, message}` for an `isolation: :process`
  session.

      iex> session = ExBashkit.Session.new(isolation: :none)
      iex> {:ok, a} = ExBashkit.Session.checkpoint(session)
      iex> {:ok, b} = ExBashkit.Session.checkpoint(session)
      iex> ExBashkit.Session.checkpoints(session) == {:ok, [a, b]}
      true
  """
  @spec checkpoints(t()) :: {:ok, [pos_integer()]} | {:error, String.t()}
  def checkpoints(session), do: Interpreter.checkpoints(resource!(session))

  @doc """
  Reads the contents of `path` from the session's filesystem.

  Returns `{:ok, binary}` — including for files a script wrote — or
  `{:error, message}` if the file does not exist or cannot be read. The
  result is a raw binary, so it round-trips arbitrary (including non-UTF-8)
  content. A file larger than the session's `:max_file_bytes` (a host file
  under a mount) is refused with `{:error, message}` naming the limit.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "echo result > /out.txt")
      iex> ExBashkit.Session.read_file(session, "/out.txt")
      {:ok, "result\\n"}
  """
  @spec read_file(t(), Path.t()) :: {:ok, binary()} | {:error, String.t()}
  def read_file(session, path) do
    resource = resource!(session)
    with {:ok, args} <- Files.args([path]), do: Interpreter.file(resource, :read_file, args)
  end

  @doc """
  Writes `content` (any `t:iodata/0`) to `path`, creating parent directories
  as needed.

  Returns `:ok`, or `{:error, message}` if the write was rejected. The file is
  immediately visible to subsequent `exec/2` calls and to `read_file/2`.

      iex> session = ExBashkit.Session.new()
      iex> ExBashkit.Session.write_file(session, "/etc/motd", "welcome\\n")
      :ok
      iex> {:ok, result} = ExBashkit.Session.exec(session, "cat /etc/motd")
      iex> result.stdout
      "welcome\\n"
  """
  @spec write_file(t(), Path.t(), iodata()) :: :ok | {:error, String.t()}
  def write_file(session, path, content) do
    resource = resource!(session)

    with {:ok, args} <- Files.write_args(path, content),
         do: Interpreter.file(resource, :write_file, args)
  end

  @doc """
  Lists the entries of directory `path`.

  Returns `{:ok, [{name, type}]}` sorted by name (names are the immediate
  children, not full paths), or `{:error, message}` if `path` is not a
  readable directory or holds more than 100,000 entries (a host directory
  under a mount). With `details: true`, each entry is a map with its
  `:name`, `:type`, `:size`, `:mode` and `:mtime` (see `t:entry/0`).

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "mkdir /d; echo x > /d/a.txt; mkdir /d/sub")
      iex> ExBashkit.Session.list_dir(session, "/d")
      {:ok, [{"a.txt", :file}, {"sub", :dir}]}
      iex> {:ok, [file, _dir]} = ExBashkit.Session.list_dir(session, "/d", details: true)
      iex> {file.name, file.size, file.mode, is_integer(file.mtime)}
      {"a.txt", 2, 0o644, true}
  """
  @spec list_dir(t(), Path.t(), details: boolean()) ::
          {:ok, [{String.t(), fs_type()} | entry()]} | {:error, String.t()}
  def list_dir(session, path, opts \\ []) do
    resource = resource!(session)
    details? = Files.flag!(opts, :details, "ExBashkit.Session.list_dir/3")

    with {:ok, args} <- Files.args([path]),
         do: Files.entries(Interpreter.file(resource, :list_dir, args), details?)
  end

  @doc """
  Creates directory `path`.

  Returns `:ok` or `{:error, message}`. With `parents: true` it creates any
  missing parent directories (like `mkdir -p`) and succeeds if the directory
  already exists; without it, a missing parent is an error.

  ## Options

    * `:parents` — create missing parents (default `false`).

  ## Examples

      iex> session = ExBashkit.Session.new()
      iex> ExBashkit.Session.mkdir(session, "/a/b/c", parents: true)
      :ok
      iex> {:error, _} = ExBashkit.Session.mkdir(session, "/x/y")
      iex> ExBashkit.Session.stat(session, "/a/b/c")
      {:ok, %{type: :dir, size: 0}}
  """
  @spec mkdir(t(), Path.t(), parents: boolean()) :: :ok | {:error, String.t()}
  def mkdir(session, path, opts \\ []) do
    resource = resource!(session)
    parents = Files.flag!(opts, :parents, "ExBashkit.Session.mkdir/3")

    with {:ok, args} <- Files.args([path], [parents]),
         do: Interpreter.file(resource, :mkdir, args)
  end

  @doc """
  Removes `path`.

  Returns `:ok` or `{:error, message}`. Removing a non-empty directory
  requires `recursive: true`.

  ## Options

    * `:recursive` — remove a directory and its contents (default `false`).

  ## Examples

      iex> session = ExBashkit.Session.new(files: %{"/d/f.txt" => "x"})
      iex> {:error, _} = ExBashkit.Session.remove(session, "/d")
      iex> ExBashkit.Session.remove(session, "/d", recursive: true)
      :ok
      iex> {:error, _} = ExBashkit.Session.stat(session, "/d/f.txt")
  """
  @spec remove(t(), Path.t(), recursive: boolean()) :: :ok | {:error, String.t()}
  def remove(session, path, opts \\ []) do
    resource = resource!(session)
    recursive = Files.flag!(opts, :recursive, "ExBashkit.Session.remove/3")

    with {:ok, args} <- Files.args([path], [recursive]),
         do: Interpreter.file(resource, :remove, args)
  end

  @doc """
  Renames (moves) `from` to `to`.

  Returns `:ok` or `{:error, message}`. An existing `to` is an error
  unless `overwrite: true`.

      iex> session = ExBashkit.Session.new(files: %{"/draft.txt" => "v1", "/old.txt" => "v0"})
      iex> ExBashkit.Session.rename(session, "/draft.txt", "/final.txt")
      :ok
      iex> ExBashkit.Session.read_file(session, "/final.txt")
      {:ok, "v1"}
      iex> {:error, _} = ExBashkit.Session.rename(session, "/final.txt", "/old.txt")
      iex> ExBashkit.Session.rename(session, "/final.txt", "/old.txt", overwrite: true)
      :ok

  ## Options

    * `:overwrite` — replace an existing `to` (default `false`).
  """
  @spec rename(t(), Path.t(), Path.t(), overwrite: boolean()) :: :ok | {:error, String.t()}
  def rename(session, from, to, opts \\ []) do
    resource = resource!(session)
    overwrite = Files.flag!(opts, :overwrite, "ExBashkit.Session.rename/4")

    with {:ok, args} <- Files.args([from, to], [overwrite]),
         do: Interpreter.file(resource, :rename, args)
  end

  @doc """
  Sets the permission bits of `path` (`0o644`); with `recursive: true`,
  of everything below it too (symbolic links are not followed).

  Returns `:ok` or `{:error, message}`; a `mode` that is not an integer
  from 0 to `0o7777` raises `ArgumentError`.

      iex> session = ExBashkit.Session.new(files: %{"/bin/tool" => "echo hi"})
      iex> ExBashkit.Session.chmod(session, "/bin/tool", 0o755)
      :ok
      iex> {:ok, %{mode: mode}} = ExBashkit.Session.stat(session, "/bin/tool", details: true)
      iex> Integer.to_string(mode, 8)
      "755"
  """
  @spec chmod(t(), Path.t(), non_neg_integer(), recursive: boolean()) ::
          :ok | {:error, String.t()}
  def chmod(session, path, mode, opts \\ []) do
    resource = resource!(session)

    with {:ok, args} <- Files.chmod_args(path, mode, opts),
         do: Interpreter.file(resource, :chmod, args)
  end

  @doc """
  Returns metadata for `path`.

  `{:ok, %{type: type, size: bytes}}`, or `{:error, message}` if the path does
  not exist. It does not wait for a running script. With `details: true`
  the map has the `:mode` and `:mtime` too (`t:entry/0`).

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "printf 12345 > /f")
      iex> ExBashkit.Session.stat(session, "/f")
      {:ok, %{type: :file, size: 5}}
      iex> {:ok, %{mode: 0o644, mtime: mtime}} = ExBashkit.Session.stat(session, "/f", details: true)
      iex> mtime > 1_700_000_000
      true
  """
  @spec stat(t(), Path.t(), details: boolean()) ::
          {:ok, %{type: fs_type(), size: non_neg_integer()} | entry()} | {:error, String.t()}
  def stat(session, path, opts \\ []) do
    resource = resource!(session)
    details? = Files.flag!(opts, :details, "ExBashkit.Session.stat/3")

    with {:ok, args} <- Files.args([path]),
         do: Files.stat(Interpreter.file(resource, :stat, args), details?)
  end

  @doc """
  Where `session`'s interpreter lives: `:isolation` is `:none` (in this VM)
  or `:process` (a worker process, see `guides/isolation.md`); `:os_pid`
  the worker's OS pid — `nil` in the VM, and once a worker was killed;
  `:layers` the kernel's layers in force around the worker
  (`:no_new_privs`, `:unprivileged_user`, `:seccomp`, `:landlock`,
  `:network_namespace`, `:rlimits`; see `ExBashkit.isolation_info/0`).

      iex> ExBashkit.Session.info(ExBashkit.Session.new(isolation: :none))
      %{isolation: :none, os_pid: nil, layers: []}
      iex> info = ExBashkit.Session.info(ExBashkit.Session.new(isolation: :process))
      iex> {info.isolation, is_integer(info.os_pid)}
      {:process, true}
  """
  @spec info(t()) :: %{
          isolation: :none | :process,
          os_pid: pos_integer() | nil,
          layers: [atom()]
        }
  def info(session), do: session |> resource!() |> Interpreter.info()

  @doc """
  What `session`'s scripts have cost so far, summed: an
  `ExBashkit.Result.Stats` whose times, commands and `runs` add up every
  script that ran on it (each result's own `stats`) and whose
  `peak_memory_bytes` is the most any one of them held. Returns
  `{:ok, stats}`, or `{:error, message}` when an `isolation: :process`
  session's worker is gone (its figures went with it).

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "echo one")
      iex> {:ok, _} = ExBashkit.Session.exec(session, "echo two; echo three")
      iex> {:ok, stats} = ExBashkit.Session.stats(session)
      iex> {stats.runs, stats.commands >= 3}
      {2, true}
  """
  @spec stats(t()) :: {:ok, ExBashkit.Result.Stats.t()} | {:error, String.t()}
  def stats(session) do
    with {:ok, totals} <- session |> resource!() |> Interpreter.stats(),
         do: {:ok, ExBashkit.Result.Stats.from_tuple(totals)}
  end

  @doc """
  Closes the session at once, rather than when it is garbage collected: a
  running script is cancelled, an `isolation: :process` session's worker
  process is killed (the kernel takes back whatever it held), and every
  later call on the session returns `{:error, message}` saying it was
  closed. Closing a closed session is `:ok`.

      iex> session = ExBashkit.Session.new()
      iex> ExBashkit.Session.close(session)
      :ok
      iex> ExBashkit.Session.close(session)
      :ok
      iex> {:error, message} = ExBashkit.Session.exec(session, "echo hi")
      iex> message =~ "closed"
      true
  """
  @spec close(t()) :: :ok
  def close(session), do: session |> resource!() |> Interpreter.close()

  @doc false
  @spec id(t()) :: pos_integer()
  def id(session) do
    resource!(session)
    session.id
  end

  # The session's interpreter: `%ExBashkit.Interpreter.InVM{}` or
  # `%ExBashkit.Worker{}`, which `ExBashkit.Interpreter` dispatches on.
  defp resource!(%__MODULE__{resource: interpreter}) do
    if Interpreter.interpreter?(interpreter) do
      interpreter
    else
      raise ArgumentError,
            "expected an ExBashkit.Session (from ExBashkit.Session.new/1), got a struct " <>
              "holding #{inspect(interpreter)}, which is not a session"
    end
  end

  defp resource!(other), do: not_a_session!(other)

  defp not_a_session!(other) do
    # structs: false, since inspecting a bad session would come back here.
    raise ArgumentError,
          "expected an ExBashkit.Session (from ExBashkit.Session.new/1), " <>
            "got: #{inspect(other, structs: false)}"
  end

  defimpl Inspect do
    alias ExBashkit.Interpreter

    # A hand-built struct has no id: inspecting it must not raise.
    def inspect(%{resource: interpreter, id: id}, _opts) when is_integer(id) do
      if Interpreter.interpreter?(interpreter) do
        case Interpreter.describe(interpreter) do
          nil -> "#ExBashkit.Session<#{id}>"
          where -> "#ExBashkit.Session<#{id} #{where}>"
        end
      else
        "#ExBashkit.Session<invalid>"
      end
    end

    def inspect(_session, _opts), do: "#ExBashkit.Session<invalid>"
  end
end
