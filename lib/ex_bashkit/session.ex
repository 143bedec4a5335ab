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

  Malformed options raise `ArgumentError` naming the option. So does every
  function of this module given something that is not a session, or
  options that are not a keyword list. Two settings that would silently
  shadow each other are refused, naming both: two mounts (`:mounts` or
  `:virtual_fs`) at the same point or one inside the other, compared after
  normalizing (`"/d/"` and `"//d"` are `"/d"`; `.` and `..` components are
  refused), two `:builtins` whose names are equal once stringified
  (`"x"` and `:x`), and a `:python` command that is also a builtin.

      iex> backend = fn _ -> {:error, :enoent} end
      iex> ExBashkit.Session.new(virtual_fs: %{"/data/" => backend, "/data/raw" => backend})
      ** (ArgumentError) :virtual_fs mount "/data" and :virtual_fs mount "/data/raw" overlap ("/data" and "/data/raw"); mount points must be distinct and not nested

  ## Resource limits

  Every script runs under bashkit's limits; `:limits` tightens or loosens
  them. Each key is optional and an unset key keeps the default below. When a
  script exceeds a limit, `exec/2` returns `{:error, message}`, the message
  names the limit, and the session stays usable.

      iex> session = ExBashkit.Session.new(limits: [max_loop_iterations: 3])
      iex> ExBashkit.Session.exec(session, "for i in 1 2 3 4; do :; done")
      {:error, "resource limit exceeded: maximum loop iterations exceeded (3) (limit :max_loop_iterations)"}
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo still here")
      iex> result.stdout
      "still here\\n"

  Per script:

    * `:max_commands` — commands a script may run (default 10,000).
    * `:max_loop_iterations` — iterations of any single loop (default 10,000).
    * `:max_total_loop_iterations` — iterations across all loops, against
      nested-loop multiplication (default 1,000,000).
    * `:max_function_depth` — function recursion depth (default 100).
    * `:max_input_bytes` — size of the script itself (default 1,000,000;
      bashkit's own default is 10 MB, but its parser can take hundreds of
      times a hostile script's size in memory, and files belong in
      `write_file/3`, not in scripts).
    * `:max_ast_depth`, `:max_parser_operations` — bashkit's parser limits
      (defaults 100 and 100,000). Before parsing, a script that nests `(` or
      `{` (outside quotes and comments) deeper than twice `:max_ast_depth`
      is refused: such nesting made bashkit's parser and matchers run for
      minutes or take hundreds of MB.
    * `:parser_timeout_ms` — how long parsing may take (default 5,000). A
      parse past it answers with an error naming the key; the parse itself
      may go on in the background until it ends.
    * `:max_background_jobs` — concurrent `&` jobs (default 64); past it
      `&` fails.
    * `:timeout_ms` — wall-clock time (default 30,000; at least 1). A
      running script holds no BEAM scheduler, so a long timeout costs an
      interpreter thread, not a scheduler.
    * `:max_stdout_bytes`, `:max_stderr_bytes` — output kept per script
      (default 1,048,576 each). Past the cap output is dropped, the script
      goes on, and the result has `truncated: true`.
    * `:max_script_memory_bytes` — what a script may allocate, net of what
      it frees (default 268,435,456: 256 MiB). Everything the interpreter
      allocates while the script runs counts: its variables and output,
      its background jobs, jq, awk, Python. Past it the script is stopped at
      its next command and `exec/2` returns an error naming the key. Work
      that never reaches a next command (a jq filter that keeps building)
      is frozen at twice the cap: see "Memory" below.

  Per session:

    * `:max_fs_bytes` — total bytes in the in-memory filesystem
      (default 100,000,000).
    * `:max_file_bytes` — bytes in one file (default 10,000,000).
    * `:max_file_count` — files in the in-memory filesystem (default 10,000;
      the standard layout such as `/etc/passwd` counts too).
    * `:max_memory_bytes` — interpreter memory: variable and function-body
      bytes (default 10,000,000), so `x=$x$x` doubling ends in an error.

  And for snapshots:

    * `:max_snapshot_bytes` — the most a snapshot given to `restore/3` may
      decode to (default: `:max_fs_bytes` + `:max_memory_bytes` + 16 MiB,
      what this session could hold). It is measured before anything is
      decoded, so a small forged snapshot that would inflate to gigabytes is
      refused without allocating them.

      iex> source = ExBashkit.Session.new(files: %{"/blob" => :crypto.strong_rand_bytes(5_000)})
      iex> {:ok, bytes} = ExBashkit.Session.snapshot(source)
      iex> small = ExBashkit.Session.new(limits: [max_snapshot_bytes: 1_000])
      iex> {:error, message} = ExBashkit.Session.restore(small, bytes)
      iex> message
      "cannot restore the snapshot: the snapshot decodes to more than 1000 bytes (limit :max_snapshot_bytes)"

  A write past a filesystem cap fails like a full disk: the command exits
  non-zero with a message (`file too large`, `too many files`), and
  `write_file/3` returns `{:error, message}`.

      iex> session = ExBashkit.Session.new(limits: [max_stdout_bytes: 5, max_file_bytes: 4])
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo 1234567890; echo toolong > /f")
      iex> {result.stdout, result.truncated, result.exit_code}
      {"12345", true, 1}

  Counts are non-negative integers; a value too large for the platform means
  unlimited. Unknown keys raise `ArgumentError`.

  ## Host mounts

  By default nothing on the real host is reachable. `:mounts` maps real host
  directories into the sandbox:

      ExBashkit.Session.new(
        mounts: [
          {"/data", "/srv/app/data", :read_only},
          {"/work", "/tmp/sandbox-work", :read_write}
        ]
      )

  With `:read_only` scripts read host files and every write fails; with
  `:read_write` writes reach the real disk, so give it a dedicated directory.
  Host paths are canonicalized when the session is built. Every access is
  resolved on the host and refused if it leaves the mounted directory, so
  `..`, absolute or relative symlinks, and symlinked directories pointing
  outside all fail, and scripts cannot create symlinks that leave it.

  Sensitive host locations are refused by default: the host root, `/etc`,
  `/proc`, `/sys`, `/dev`, `/boot`, `/root`, `/home`, `/Users`, `/run`,
  `/var/run`, `/private`, and any path with a `.ssh`, `.aws`, `.kube`,
  `.docker`, `.gnupg` or `.gcloud` component. `:allowed_mount_paths` is a
  switch, not an addition: once set, the denylist is off and every mount's
  host path must sit under one of its prefixes (compared after resolving
  symlinks).

  A misconfigured mount raises `ArgumentError` from `new/1` with a message
  naming it: an unknown mode, a host path that is missing or not a directory,
  a sensitive path, or one outside the allowlist. A session is never built
  with a mount silently missing.

  ## Network access

  By default a session has no network: `curl`, `wget` and `http` fail without
  sending anything. `:allow_net` grants access to URL patterns:

      ExBashkit.Session.new(allow_net: ["https://api.example.com", "https://cdn.example.com/assets"])

  A request is allowed when its scheme, host and port equal a pattern's and
  its path starts with the pattern's path at a `/` boundary
  (`https://cdn.example.com/assets` allows `/assets/x.js`, not
  `/assetsx`). Matching is literal, without DNS. Redirects are never followed
  automatically, and `curl -L` checks every hop against the allowlist.
  `allow_net: :all` lifts the allowlist; use it only for trusted scripts.

  Independently, requests to loopback, 10/8, 172.16/12, 192.168/16,
  link-local and IPv6 unique-local addresses are refused even when
  allowlisted, both for literal addresses and for names that resolve to
  them, which stops server-side request forgery and DNS rebinding. To reach a
  private service on purpose, such as a development server on localhost, set
  `block_private_ips: false`.

      iex> session = ExBashkit.Session.new(allow_net: ["http://127.0.0.1:9/api"])
      iex> {:ok, result} = ExBashkit.Session.exec(session, "curl -s http://127.0.0.1:9/api")
      iex> result.stderr
      "curl: network error: access denied: request to private/reserved IP 127.0.0.1 blocked (SSRF protection)\\n"

  ## Custom builtins

  `:builtins` registers commands implemented in Elixir: a script line
  `name args…` calls back into your application. This is how a sandbox
  reaches capabilities you control — a database query, a key/value lookup,
  an approval prompt — without real process or network access.

      iex> store = %{"answer" => "42"}
      iex> session =
      ...>   ExBashkit.Session.new(
      ...>     builtins: %{
      ...>       "kv_get" => fn call ->
      ...>         case Map.fetch(store, hd(call.args)) do
      ...>           {:ok, value} -> {:ok, value <> "\\n"}
      ...>           :error -> {:error, "no such key\\n"}
      ...>         end
      ...>       end
      ...>     }
      ...>   )
      iex> {:ok, %ExBashkit.Result{stdout: "42\\n"}} =
      ...>   ExBashkit.Session.exec(session, "total=$(kv_get answer); echo $total")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "kv_get nope || echo failed")
      iex> {result.stdout, result.stderr}
      {"failed\\n", "no such key\\n"}

  The function receives one map:

    * `:args` — the arguments (strings), without the command name;
    * `:stdin` — the bytes piped in (`""` if none);
    * `:env` — the exported environment, `%{String.t() => String.t()}`;
    * `:cwd` — the working directory at the time of the call.

  It returns `{:ok, iodata}` (stdout, exit 0), `{:error, iodata}` (stderr,
  exit 1) or an `%ExBashkit.Result{}` for full control of stdout, stderr
  and the exit code (0..255).

  Anything else, a raise, an exit, a throw, a process that ends without
  answering (even with reason `:normal`), or a killed process fails only
  that command, with exit 1 and a stderr line saying what happened
  (`kv_get: raised RuntimeError: boom`). A call running longer than
  `:builtin_timeout_ms` is killed and the command exits 124. The session
  stays usable in every case.

  Each call runs in a short-lived process of its own, started for it by a
  server that lives as long as the `exec/2`, so a builtin must not rely on
  the caller's process dictionary or `self()`. When the script's
  `:timeout_ms` fires or its caller dies, a running call is killed: nothing
  outlives `exec/2`. No scheduler is held while a call runs, so builtins
  can drive other sessions, hundreds at once. A builtin that calls `exec/2`
  on its own session (directly, or from a Task it started) gets
  `{:error, message}` at once: that session is busy running the script that
  waits for the builtin.

  ## Virtual filesystem backends

  `:virtual_fs` mounts a filesystem your application serves: reads and
  writes under the mount become calls to a backend, with the failure model
  and timeout of builtins. A backend is a module implementing
  `ExBashkit.VirtualFs`, `{module, arg}`, or a function:

      iex> backend = fn
      ...>   %{op: :read, path: "/users/" <> id} -> {:ok, ["name=user", id, "\\n"]}
      ...>   _ -> {:error, :enotsup}
      ...> end
      iex> session = ExBashkit.Session.new(virtual_fs: %{"/api" => backend})
      iex> {:ok, result} = ExBashkit.Session.exec(session, "cut -d= -f2 /api/users/7")
      iex> result.stdout
      "user7\\n"

  It composes with the in-memory filesystem, `:files` and `:mounts`. The
  file API (`read_file/2`, `write_file/3`, ...) returns `{:error, _}` for
  paths under a virtual mount: backends serve scripts only.

  Backends follow the `ExBashkit.VirtualFs` contract of ex_bashkit 0.1.7
  (the mount's `arg` first, `use ExBashkit.VirtualFs` for defaults), so
  backends written for it work unchanged.

  ## Memory

  Every byte the interpreters allocate is counted. Two limits apply:

    * per script, `:max_script_memory_bytes` (above);
    * VM-wide, `config :ex_bashkit, memory_budget_bytes: n`: all
      interpreters together, their sessions' files and variables included
      (default: a quarter of the machine's physical memory; read when the
      application starts). A script that allocates while the total is over
      the budget is stopped with an error naming it.

  A stopped script ends at its next command, and the session stays usable.
  Some bashkit work never reaches a next command: a jq filter, a parse,
  a `[[ ]]` evaluation. An allocator can neither fail an allocation (Rust
  would abort the VM) nor unwind, so a stopped script that goes on
  allocating until it holds twice what it held when it was stopped (twice
  its cap; at least 32 MiB more) is *frozen*: its interpreter thread sleeps
  for good inside the allocation that went too far. Its caller gets the
  error at once, the memory stays bounded, and the price is that thread,
  the memory the script held, and the session, which answers every later
  call with an error (start a new one). Other sessions whose scripts were
  waiting on that thread (inside a `sleep`, a callback) at that moment are
  stuck with it and time out. `ExBashkit.stats/0` counts frozen scripts
  and the bytes they hold.

  So what the VM's interpreters hold stays under the budget plus, for each
  script running when it is reached, once more what that script held (32
  MiB at least); and what the allocator keeps cached for reuse comes on
  top. Not charged to a script, but counted in the total: bashkit's parse
  of a script over 16 KB (bounded by `:max_input_bytes` and the parser
  limits instead) and the file API.

      iex> session = ExBashkit.Session.new(limits: [max_script_memory_bytes: 2_000_000])
      iex> {:error, message} = ExBashkit.Session.exec(session, "x=a; while true; do x=$x$x; done")
      iex> message
      "memory limit exceeded: the script allocated more than 2000000 bytes (limit :max_script_memory_bytes)"
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo still here")
      iex> result.stdout
      "still here\\n"

  ## Operator ceilings

  Two application settings bound every session, whatever the code that
  builds it asks for (ex_bashkit 0.1.7's hardening knobs):

    * `config :ex_bashkit, max_reply_bytes: n` — the most one builtin or
      `:virtual_fs` reply may carry into the interpreter: a builtin's stdout
      plus stderr, a `read`'s data, a listing (names plus 32 bytes per
      entry). A larger reply fails that command or operation with a message
      saying so; the session lives on. Error text from callbacks (an
      exception message, an inspected term, an error reason) is cut to the
      cap instead. Default `16_000_000`. It fails closed: `nil` or a value
      that is not a positive integer means the default, never "unlimited".
      Read at each `exec/2`.
    * `config :ex_bashkit, max_timeout_ms: n` — a ceiling on `:timeout_ms`:
      a session asking for more raises `ArgumentError` in `new/1`, and
      sessions that do not ask (and `ExBashkit.exec/1`) get the ceiling when
      it is below the 30-second default. A value that is not a positive
      integer or `nil` raises. Unset, there is no ceiling.

  ## Python

  `:python` adds a Python builtin running [Monty](https://github.com/pydantic/monty),
  a Python 3 interpreter written in Rust that is compiled into this
  library: no CPython, no Elixir dependency, no process. It runs code from
  `-c`, from a script file, or from stdin, and reads and writes the session's
  filesystem, so bash and Python share files both ways:

      iex> session = ExBashkit.Session.new(python: true, files: %{"/n.txt" => "20\\n"})
      iex> {:ok, result} =
      ...>   ExBashkit.Session.exec(session, ~S|python3 -c "print(int(open('/n.txt').read()) + 1)"|)
      iex> result.stdout
      "21\\n"

  What runs: the core language (functions, closures, comprehensions,
  f-strings, exceptions, classes), and the modules `sys`, `os` (environment
  only), `pathlib`, `math`, `json`, `datetime` and `typing`. File access is
  the session's filesystem only. What fails, with the error a script sees:

    * `import re` — `python3: importing module 're' is disabled for security
      reasons (regex DoS risk)`;
    * any other module (`numpy`, `socket`, `subprocess`, `urllib`) —
      `ModuleNotFoundError`;
    * `str.format` — `AttributeError: 'str' object has no attribute 'format'`
      (use f-strings);
    * `sys.stdin` — `AttributeError` (stdin can carry the program, not data).

  An uncaught exception prints a traceback on stderr and exits 1. A Python
  program gets four fifths of the session's `:timeout_ms` (a runaway loop
  ends with `TimeoutError`, exit 1, and the script goes on within its own
  deadline), a 64 MB heap and a recursion depth of 200 (`RecursionError`).

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

  ## Panics

  A command that panics inside the interpreter (bashkit's `tomlq` does on
  some input) fails with exit 1 and the session lives on. The panic is
  logged through `Logger` as a warning: escaped, cut to 300 characters and
  limited to 10 reports a minute, so script bytes never reach the VM's
  stderr or a log unescaped.

  ## How scripts run

  `exec/2` hands the script to the NIF's own interpreter threads and waits
  for the answer in `receive`. No BEAM scheduler thread — normal or dirty —
  is held while a script runs or waits (`sleep`, a queued script), and the
  interpreter's deep recursion happens on threads with a large stack, so
  hostile nesting cannot overflow a scheduler's stack. If the calling process
  dies, its script is cancelled.

  The caller waits at most the session's `:timeout_ms` plus 0.5 s from the
  call, including any time queued behind the session's other scripts.
  bashkit stops a script at its deadline by itself, except inside work that
  never yields (a pathological `[[ … ]]` or parse); then the caller gets
  `{:error, message}` all the same, saying whether the script was running,
  waiting for the session, or not yet started, and the runaway goes on
  until it ends, keeping the session busy meanwhile. Other sessions move
  off a thread held by a runaway.

  After a script that failed, timed out or was dropped, the session tidies
  itself before the next script: background jobs it left are killed, and a
  pending expansion error cannot fail the next script.

  Most scripts answer within microseconds, so the caller stays runnable for
  about 30 µs (yielding to every other process) before it blocks in
  `receive`: waking a sleeping scheduler costs more than that once the VM
  has any port or socket open.
  """

  alias ExBashkit.{Callbacks, Execution, Native, Result}
  alias ExBashkit.Session.Options

  @enforce_keys [:resource]
  # `id` is the resource's number, read once: it names the session in
  # `inspect/1` and in errors without a NIF call.
  defstruct [:resource, :id, :callbacks, timeout_ms: 30_000]

  @opaque t :: %__MODULE__{
            resource: reference(),
            id: pos_integer(),
            callbacks: Callbacks.t() | nil,
            timeout_ms: pos_integer()
          }

  @typedoc "A filesystem entry's kind, as reported by `stat/2` and `list_dir/2`."
  @type fs_type :: :file | :dir | :symlink | :fifo

  @typedoc "A key of the `:limits` option."
  @type limit_key ::
          :max_commands
          | :max_loop_iterations
          | :max_total_loop_iterations
          | :max_function_depth
          | :max_input_bytes
          | :timeout_ms
          | :max_stdout_bytes
          | :max_stderr_bytes
          | :max_fs_bytes
          | :max_file_bytes
          | :max_file_count
          | :max_memory_bytes
          | :max_snapshot_bytes
          | :max_ast_depth
          | :max_parser_operations
          | :parser_timeout_ms
          | :max_background_jobs
          | :max_script_memory_bytes

  @typedoc "Access mode of a host directory mount."
  @type mount_mode :: :read_only | :read_write

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
          | {:builtins, %{optional(String.t() | atom()) => (map() -> term())}}
          | {:builtin_timeout_ms, pos_integer()}
          | {:virtual_fs, %{optional(Path.t()) => ExBashkit.VirtualFs.backend()}}
          | {:python, boolean() | [name: String.t()] | [names: [String.t()]]}

  @doc """
  Creates a new persistent session, optionally seeding its initial state.

  See the module documentation for the options. Raises `ArgumentError` for a
  malformed option (naming it), a `:files` entry that cannot be written, or a
  `:mounts` entry that cannot be attached (naming the mount).

      iex> session = ExBashkit.Session.new(env: [GREETING: "hi"], cwd: "/work", username: "ada")
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo $GREETING $(pwd) $(whoami)")
      iex> result.stdout
      "hi /work ada\\n"
  """
  @spec new([option()]) :: t()
  def new(opts \\ []) do
    %{native: native, files: files, callbacks: callbacks} = Options.validate!(opts)

    session =
      case Native.session_new(native) do
        {:ok, resource} ->
          %__MODULE__{
            resource: resource,
            id: Native.session_id(resource),
            callbacks: callbacks,
            timeout_ms: Options.timeout_ms(native)
          }

        {:error, message} ->
          raise ArgumentError, "cannot create session: #{message}"
      end

    Enum.each(files, fn {path, content} ->
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
  """
  @spec exec(t(), String.t()) :: {:ok, Result.t()} | {:error, String.t()}
  def exec(session, script) do
    resource = resource!(session)
    script = Execution.script!(script)

    case session.callbacks do
      nil ->
        run(session, resource, script, nil)

      callbacks ->
        Callbacks.serve(callbacks, resource, &run(session, resource, script, &1))
    end
  end

  defp run(session, resource, script, callback_server) do
    tag = make_ref()

    resource
    |> native(fn -> Native.session_exec(resource, script, self(), tag, callback_server) end)
    |> Execution.await(tag, timeout_ms(session))
  end

  # A hand-built struct may hold anything here; the deadline must be sane.
  defp timeout_ms(%__MODULE__{timeout_ms: ms}) when is_integer(ms) and ms > 0, do: ms
  defp timeout_ms(_session), do: Options.default_timeout_ms()

  @snapshot_options [
    key: [
      type: {:custom, &__MODULE__.key!/1},
      default: nil,
      doc:
        "a binary secret. The snapshot is sealed with HMAC-SHA256 under it, for bytes " <>
          "that cross a trust boundary (a database, the network). Without a key, a " <>
          "public SHA-256 tag detects accidental corruption only; anyone can forge it."
    ],
    exclude_filesystem: [
      type: :boolean,
      default: false,
      doc: "capture the shell state only."
    ],
    exclude_functions: [type: :boolean, default: false, doc: "leave shell functions out."]
  ]

  @restore_options [
    key: [
      type: {:custom, &__MODULE__.key!/1},
      default: nil,
      doc: "the secret the snapshot was taken with, if any."
    ]
  ]

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

  #{ExBashkit.Options.docs(@snapshot_options)}

  ## Examples

      iex> session = ExBashkit.Session.new()
      iex> {:ok, %ExBashkit.Result{}} = ExBashkit.Session.exec(session, "x=42")
      iex> {:ok, bytes} = ExBashkit.Session.snapshot(session)
      iex> is_binary(bytes)
      true
  """
  @spec snapshot(t(), keyword()) :: {:ok, binary()} | {:error, String.t()}
  def snapshot(session, opts \\ []) do
    resource = resource!(session)
    opts = ExBashkit.Options.validate!(opts, @snapshot_options, "ExBashkit.Session.snapshot/2")
    options = Map.take(opts, [:exclude_filesystem, :exclude_functions])
    tag = make_ref()
    key = opts.key

    resource
    |> native(fn -> Native.session_snapshot(resource, options, key, self(), tag) end)
    |> Execution.reply(tag)
  end

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
  `:max_snapshot_bytes` (see "Resource limits") is refused before it is
  decoded. The whole snapshot is checked before anything changes: malformed,
  truncated or tampered bytes, a wrong or missing key, and a key given for
  unkeyed bytes each return `{:error, message}` and leave the session as it
  was. bashkit also refuses a snapshot taken by a session with builtins
  this one lacks (python, custom builtins), since its state may rely on
  them. Like `exec/2`, a restore waits for a running script to finish.

  ## Options

  #{ExBashkit.Options.docs(@restore_options)}

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
  def restore(session, snapshot, opts \\ []) do
    resource = resource!(session)

    unless is_binary(snapshot) do
      raise ArgumentError, "snapshot must be a binary, got: #{inspect(snapshot)}"
    end

    key = ExBashkit.Options.validate!(opts, @restore_options, "ExBashkit.Session.restore/3").key
    tag = make_ref()

    resource
    |> native(fn -> Native.session_restore(resource, snapshot, key, self(), tag) end)
    |> Execution.reply(tag)
    |> case do
      {:ok, :ok} -> {:ok, session}
      {:error, _} = error -> error
    end
  end

  @doc false
  def key!(nil), do: nil
  def key!(key) when is_binary(key) and key != "", do: key

  def key!(other) do
    raise ArgumentError, ":key must be a non-empty binary, got: #{inspect(other)}"
  end

  @doc """
  Reads the contents of `path` from the session's filesystem.

  Returns `{:ok, binary}` — including for files a script wrote — or
  `{:error, message}` if the file does not exist or cannot be read. The
  result is a raw binary, so it round-trips arbitrary (including non-UTF-8)
  content.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "echo result > /out.txt")
      iex> ExBashkit.Session.read_file(session, "/out.txt")
      {:ok, "result\\n"}
  """
  @spec read_file(t(), Path.t()) :: {:ok, binary()} | {:error, String.t()}
  def read_file(session, path) do
    resource = resource!(session)

    with {:ok, path} <- normalize(path),
         do: native(resource, fn -> Native.session_read_file(resource, path) end)
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
    content = iodata!(content)

    with {:ok, path} <- normalize(path),
         do: native(resource, fn -> Native.session_write_file(resource, path, content) end)
  end

  @doc """
  Lists the entries of directory `path`.

  Returns `{:ok, [{name, type}]}` sorted by name (names are the immediate
  children, not full paths), or `{:error, message}` if `path` is not a
  readable directory.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "mkdir /d; echo x > /d/a.txt; mkdir /d/sub")
      iex> ExBashkit.Session.list_dir(session, "/d")
      {:ok, [{"a.txt", :file}, {"sub", :dir}]}
  """
  @spec list_dir(t(), Path.t()) :: {:ok, [{String.t(), fs_type()}]} | {:error, String.t()}
  def list_dir(session, path) do
    resource = resource!(session)

    with {:ok, path} <- normalize(path),
         do: native(resource, fn -> Native.session_list_dir(resource, path) end)
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
    parents = flag!(opts, :parents, "ExBashkit.Session.mkdir/3")

    with {:ok, path} <- normalize(path),
         do: native(resource, fn -> Native.session_mkdir(resource, path, parents) end)
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
    recursive = flag!(opts, :recursive, "ExBashkit.Session.remove/3")

    with {:ok, path} <- normalize(path),
         do: native(resource, fn -> Native.session_remove(resource, path, recursive) end)
  end

  @doc """
  Renames (moves) `from` to `to`.

  Returns `:ok` or `{:error, message}`.

      iex> session = ExBashkit.Session.new(files: %{"/draft.txt" => "v1"})
      iex> ExBashkit.Session.rename(session, "/draft.txt", "/final.txt")
      :ok
      iex> ExBashkit.Session.read_file(session, "/final.txt")
      {:ok, "v1"}
  """
  @spec rename(t(), Path.t(), Path.t()) :: :ok | {:error, String.t()}
  def rename(session, from, to) do
    resource = resource!(session)

    with {:ok, from} <- normalize(from),
         {:ok, to} <- normalize(to),
         do: native(resource, fn -> Native.session_rename(resource, from, to) end)
  end

  @doc """
  Returns metadata for `path`.

  `{:ok, %{type: type, size: bytes}}`, or `{:error, message}` if the path does
  not exist. It does not wait for a running script.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Session.exec(session, "printf 12345 > /f")
      iex> ExBashkit.Session.stat(session, "/f")
      {:ok, %{type: :file, size: 5}}
  """
  @spec stat(t(), Path.t()) ::
          {:ok, %{type: fs_type(), size: non_neg_integer()}} | {:error, String.t()}
  def stat(session, path) do
    resource = resource!(session)

    with {:ok, path} <- normalize(path),
         {:ok, {type, size}} <- native(resource, fn -> Native.session_stat(resource, path) end),
         do: {:ok, %{type: type, size: size}}
  end

  @doc false
  @spec id(t()) :: pos_integer()
  def id(session) do
    resource!(session)
    session.id
  end

  defp resource!(%__MODULE__{resource: resource}) when is_reference(resource), do: resource

  defp resource!(other) do
    # structs: false, since inspecting a bad session would come back here.
    raise ArgumentError,
          "expected an ExBashkit.Session (from ExBashkit.Session.new/1), " <>
            "got: #{inspect(other, structs: false)}"
  end

  # The NIFs answer badarg for anything but a live session resource (every
  # other argument has been checked by then): say which argument it was.
  defp native(resource, call) do
    call.()
  rescue
    ArgumentError ->
      reraise ArgumentError,
              "expected an ExBashkit.Session (from ExBashkit.Session.new/1), got a struct " <>
                "holding #{inspect(resource)}, which is not a session",
              __STACKTRACE__
  end

  # Paths are rooted at "/" whatever the session's cwd; bad types are a
  # programmer error, bad bytes an ordinary {:error, _}.
  defp normalize(path) when is_binary(path) do
    cond do
      not String.valid?(path) -> {:error, "#{inspect(path)}: path is not valid UTF-8"}
      String.contains?(path, <<0>>) -> {:error, "#{inspect(path)}: path contains a NUL byte"}
      String.starts_with?(path, "/") -> {:ok, path}
      true -> {:ok, "/" <> path}
    end
  end

  defp normalize(path) do
    raise ArgumentError, "path must be a string, got: #{inspect(path)}"
  end

  defp iodata!(content) do
    IO.iodata_to_binary(content)
  rescue
    ArgumentError ->
      reraise ArgumentError, "content must be iodata, got: #{inspect(content)}", __STACKTRACE__
  end

  defp flag!(opts, key, context) do
    schema = [{key, [type: :boolean, default: false]}]
    ExBashkit.Options.validate!(opts, schema, context) |> Map.fetch!(key)
  end

  defimpl Inspect do
    # A hand-built struct has no id: inspecting it must not raise.
    def inspect(%{resource: resource, id: id}, _opts)
        when is_reference(resource) and is_integer(id),
        do: "#ExBashkit.Session<#{id}>"

    def inspect(_session, _opts), do: "#ExBashkit.Session<invalid>"
  end
end
