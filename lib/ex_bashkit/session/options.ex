defmodule ExBashkit.Session.Options do
  @moduledoc false
  # The options of `ExBashkit.Session.new/1`: their schema (types, defaults
  # and the docs the Session moduledoc shows), the checks across options,
  # and the struct the NIF decodes (native/ex_bashkit/src/convert.rs).
  # Every problem raises ArgumentError naming the option, before anything
  # native is built.

  alias ExBashkit.Options
  alias ExBashkit.Session.Options.{Capabilities, CommandPolicy, Filesystem, Limits, Network}
  import ExBashkit.Options, only: [text?: 1]

  @schema [
    env: [
      type: :env,
      default: [],
      doc:
        "a map or keyword list of environment variables to pre-set. Keys and values " <>
          "are stringified (`env: %{\"LANG\" => \"C\"}` or `env: [LANG: \"C\"]`)."
    ],
    cwd: [
      type: {:custom, &__MODULE__.cwd!/1},
      default: "/",
      doc: "the starting working directory, created if missing."
    ],
    username: [
      type: {:custom, &__MODULE__.username!/1},
      default: "sandbox",
      doc: "the virtual user reported by `whoami`/`id`."
    ],
    hostname: [
      type: {:custom, &__MODULE__.hostname!/1},
      default: "bashkit-sandbox",
      doc: "the virtual host reported by `hostname`/`uname -n`."
    ],
    profile: [
      type: {:custom, &__MODULE__.profile!/1},
      default: nil,
      doc:
        "a script run once when the session is built, after `:mounts` and `:cwd` are in " <>
          "place: the functions, variables, `shopt` options and working directory every " <>
          "later script starts with (`\"shopt -s nullglob; ll() { ls -l \\\"$@\\\"; }\"`); " <>
          "`set -o` options start afresh with each script, as with `bash -c`. It runs under the " <>
          "session's limits and `:command_policy`; it cannot reach `:builtins`, `:tools` or " <>
          "`:virtual_fs`, which nothing serves yet. If it fails (a non-zero status, an error) " <>
          "`new/1` raises `ArgumentError` with its status and stderr. A snapshot keeps what it set."
    ],
    files: [
      type: {:custom, &Filesystem.files!/1},
      default: [],
      doc:
        "a map (or list) of `path => content` to seed into the virtual filesystem, " <>
          "creating parent directories as needed. Content is any `t:iodata/0`. " <>
          "Equivalent to calling `write_file/3` for each entry."
    ],
    limits: [
      type: {:custom, &Limits.limits!/1},
      default: [],
      doc:
        "a keyword list or map of resource limits (see `guides/limits.md`):\n\n" <>
          Limits.docs() <> "\n"
    ],
    mounts: [
      type: {:custom, &Filesystem.mounts!/1},
      default: [],
      doc:
        "a list of `{vfs_path, host_path, mode}` mapping real host directories into " <>
          "the sandbox, `mode` being `:read_only`, `:read_write` (git metadata kept for the " <>
          "sandbox's git) or `{:read_write, git_metadata: :writable}` (see " <>
          "`guides/host_access.md` and `guides/security.md`)."
    ],
    allowed_mount_paths: [
      type: {:custom, &Filesystem.allowed_mount_paths!/1},
      default: nil,
      doc:
        "host path prefixes that mounts must sit under; setting it replaces the " <>
          "default denylist (see `guides/host_access.md`)."
    ],
    allow_net: [
      type: {:custom, &Network.allow_net!/1},
      default: nil,
      doc:
        "a list of URL patterns `curl`/`wget`/`http` may reach, or `:all`. Omitted, " <>
          "the network is unreachable (see `guides/host_access.md`). An entry " <>
          "`{pattern, headers: %{name => value}}` adds those headers to every request " <>
          "that pattern matches, after the allowlist check: secrets the script can use " <>
          "but never sees (\"Secrets\" in `guides/host_access.md`)."
    ],
    block_private_ips: [
      type: {:in, [true, false]},
      default: true,
      doc: "refuse requests to private and reserved addresses even when allowlisted."
    ],
    approve: [
      type: {:custom, &ExBashkit.Approval.approve!/1},
      default: nil,
      doc:
        "a 1-arity function that sees what each script would run before it runs " <>
          "(`ExBashkit.analyze/1`) and answers `:ok` or `{:deny, reason}`: a denied " <>
          "script runs nothing (see \"Approval\" in `ExBashkit.Session.exec/3`)."
    ],
    command_policy: [
      type: {:custom, &CommandPolicy.policy!/1},
      default: nil,
      doc: CommandPolicy.doc()
    ],
    command_policy_abort: [
      type: {:in, [true, false]},
      default: false,
      doc: CommandPolicy.abort_doc()
    ],
    builtins: [
      type: {:custom, &Capabilities.builtins!/1},
      default: %{},
      doc:
        "a map of `name => builtin` adding commands whose output Elixir code computes: " <>
          "a 1-arity function, a module, `{module, arg}` or `{module, function, args}` " <>
          "(see `ExBashkit.Builtin` and `guides/callbacks.md`)."
    ],
    tools: [
      type: {:custom, &Capabilities.tools!/1},
      default: [],
      doc:
        "a list of `ExBashkit.Tool.new/1` tools of your application, each a command " <>
          "(`orders list --customer acme`) and, with `javascript: true`, a function of " <>
          "`tools` in JavaScript (see \"Code mode\" in `guides/code.md`)."
    ],
    builtin_timeout_ms: [
      type: :pos_integer,
      default: 30_000,
      doc:
        "how long one builtin or `:virtual_fs` call may run, in milliseconds; past " <>
          "2^32 - 1 (about 49 days) there is no per-call timer and only the script's " <>
          "`:timeout_ms` bounds a call."
    ],
    virtual_fs: [
      type: {:custom, &Filesystem.virtual_fs!/1},
      default: %{},
      doc:
        "a map of `mount_path => backend` mounting filesystems your application serves " <>
          "(see `guides/callbacks.md` and `ExBashkit.VirtualFs`)."
    ],
    python: [
      type: {:custom, &Capabilities.python!/1},
      default: false,
      doc:
        "`true` or `:monty` (Monty, commands `python` and `python3`), `:cpython` " <>
          "(CPython 3.14 in a WebAssembly guest), or a keyword list of `runtime:` " <>
          "(`:monty` by default), `name: \"py\"` or `names: [...]` to add a " <>
          "sandboxed Python (see `guides/python.md`)."
    ],
    javascript: [
      type: {:in, [true, false]},
      default: false,
      doc:
        "`true` adds a `node` command: real JavaScript (ES2023, QuickJS-ng) with " <>
          "`console`, `process`, `require(\"fs\")` and `require(\"path\")` on the session's " <>
          "files (see `guides/javascript.md`). It needs `isolation: :process`: the engine " <>
          "runs only in worker processes."
    ],
    git: [
      type: {:in, [true, false]},
      default: false,
      doc:
        "`true` adds a `git` command on the session's files: `init`, `add`, `commit`, " <>
          "`status`, `log`, `diff`, `show`, `branch`, `checkout`, `reset`, `restore`, " <>
          "`merge`, `ls-files`, `rev-parse`, `grep` and more, with git's output (see " <>
          "`guides/git.md`). " <>
          "Commits are authored by `:username` until `git config user.name` says otherwise."
    ],
    sqlite: [
      type: {:in, [true, false]},
      default: false,
      doc:
        "`true` adds `sqlite3` (and `sqlite`) on the session's files: SQL as an argument " <>
          "or on stdin, `-header`, `-csv`, `-json`, `-line`, `.tables`, `.schema`, `.mode`, " <>
          "`.import FILE TABLE` (Turso's engine, see `guides/sqlite.md`). It needs " <>
          "`isolation: :process`: the engine is beta upstream, so it runs only in worker " <>
          "processes. `:max_sqlite_bytes` bounds a database; the script's deadline, each statement."
    ],
    package_cache: [
      type: {:custom, &__MODULE__.package_cache!/1},
      default: :config,
      doc:
        "the host directory where `npm` keeps what it downloads, each package named by " <>
          "its digest and checked again when read, shared by every session: a lockfile's " <>
          "next install copies instead of downloading. `false` for none. Defaults to " <>
          "`config :ex_bashkit, package_cache: dir`, else `ex_bashkit_packages` in the " <>
          "system's temporary directory."
    ],
    isolation: [
      type: {:in, [:none, :process]},
      default: :none,
      doc:
        "where the interpreter runs: `:none` in this VM, `:process` in a worker OS " <>
          "process of its own, which is killed when a script outlives its deadline or " <>
          "its memory limit, taking everything the script held with it (see " <>
          "`guides/isolation.md`). `config :ex_bashkit, isolation: :process` changes " <>
          "the default."
    ]
  ]

  # What the NIF decodes: every field checked and normalized.
  # Injected header values are secrets: never shown.
  @derive {Inspect, except: [:credentials]}
  @enforce_keys [
    :python_runtime,
    :credentials
    | Keyword.keys(@schema) --
        [:files, :builtin_timeout_ms, :isolation, :approve, :command_policy_abort]
  ]
  defstruct @enforce_keys

  @type t :: %__MODULE__{}

  @doc false
  @spec supported() :: [atom()]
  def supported, do: Keyword.keys(@schema)

  @doc false
  @spec limit_keys() :: [atom()]
  def limit_keys, do: Limits.keys()

  @doc false
  # What the NIF or a worker receives for `new(isolation: :process)`: the
  # session spare workers harden for ahead (ExBashkit.Worker.Spares).
  @spec default_native() :: t()
  def default_native, do: validate!(isolation: :process).native

  @refused """
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
  """

  @doc false
  # The options as a Markdown list, and what a malformed set raises, for
  # ExBashkit.Session's moduledoc.
  @spec docs() :: String.t()
  def docs, do: Options.docs(@schema) <> "\n\n" <> @refused

  @typedoc """
  What the NIF receives, the files to seed afterwards, and the Elixir side
  of the callbacks (`nil` when there are none).
  """
  @type validated :: %{
          native: t(),
          isolation: :none | :process,
          files: [{String.t(), binary()}],
          callbacks: ExBashkit.Callbacks.t() | nil,
          approval: {(map() -> term()) | nil, pos_integer()},
          secrets: [{String.t(), [{String.t(), String.t() | (() -> String.t())}]}] | nil
        }

  @spec validate!(term()) :: validated()
  def validate!(opts) do
    opts = Options.validate!(default_isolation(opts), @schema, "ExBashkit.Session.new/1")
    CommandPolicy.where!(opts.command_policy, opts.isolation)
    opts = %{opts | builtins: Capabilities.with_tools(opts.builtins, opts.tools)}
    check_across!(opts)

    {allow_net, secrets} = Network.credentials(opts.allow_net)

    credentials =
      case Network.resolve_credentials(secrets) do
        {:ok, credentials} -> credentials
        {:error, message} -> raise ArgumentError, message
      end

    %{
      native: native(opts, allow_net, credentials),
      isolation: opts.isolation,
      files: opts.files,
      approval: {opts.approve, opts.builtin_timeout_ms},
      # Header functions are called again before each call.
      secrets: if(Network.dynamic?(secrets), do: secrets),
      callbacks: callbacks(opts)
    }
  end

  # The checks that span several options.
  defp check_across!(opts) do
    Filesystem.no_overlaps!(
      Enum.map(opts.mounts, fn {point, _, _} = mount -> {point, "mount #{inspect(mount)}"} end) ++
        Enum.map(opts.virtual_fs, fn {point, _} ->
          {point, ":virtual_fs mount #{inspect(point)}"}
        end)
    )

    Filesystem.workers_can_write!(opts.mounts, opts.isolation)

    {python_runtime, python} = opts.python
    Capabilities.no_shadowing!(python, Map.keys(opts.builtins))
    Capabilities.python_memory!(python_runtime, opts.limits.max_python_memory_bytes)

    Capabilities.require_features!(
      python: python != [] and python_runtime == :monty,
      cpython: python != [] and python_runtime == :cpython,
      allow_net: opts.allow_net != :none,
      mounts: opts.mounts != [],
      javascript: opts.javascript,
      git: opts.git,
      sqlite: opts.sqlite
    )

    Capabilities.worker_only!(
      :javascript,
      opts.javascript,
      opts.isolation,
      "the JavaScript engine (QuickJS) runs"
    )

    Capabilities.worker_only!(
      :sqlite,
      opts.sqlite,
      opts.isolation,
      "its engine (Turso) is beta upstream, so it runs"
    )
  end

  # The struct the NIF (or a worker) decodes: names where Elixir keeps
  # functions, and nothing only Elixir reads.
  defp native(opts, allow_net, credentials) do
    {python_runtime, python} = opts.python

    struct!(
      __MODULE__,
      %{
        opts
        | builtins: Map.keys(opts.builtins),
          tools: Enum.map(opts.tools, & &1.name),
          virtual_fs: Map.keys(opts.virtual_fs),
          python: python,
          allow_net: allow_net
      }
      |> Map.put(:credentials, credentials)
      |> Map.put(:python_runtime, python_runtime)
      |> Map.put(
        :command_policy,
        CommandPolicy.native(opts.command_policy, opts.command_policy_abort)
      )
      |> Map.drop([:files, :builtin_timeout_ms, :isolation, :approve, :command_policy_abort])
    )
  end

  # The Elixir side of the callbacks, or nil when a script has none to make.
  defp callbacks(opts) do
    callbacks = %ExBashkit.Callbacks{
      builtins: opts.builtins,
      virtual_fs: opts.virtual_fs,
      policy: CommandPolicy.function(opts.command_policy),
      timeout: opts.builtin_timeout_ms
    }

    if callbacks.builtins == %{} and callbacks.virtual_fs == %{} and callbacks.policy == nil,
      do: nil,
      else: callbacks
  end

  # `config :ex_bashkit, isolation: :process` isolates every session that
  # does not say otherwise.
  defp default_isolation(opts) when is_list(opts) do
    case Application.get_env(:ex_bashkit, :isolation) do
      nil ->
        opts

      isolation ->
        if Keyword.keyword?(opts), do: Keyword.put_new(opts, :isolation, isolation), else: opts
    end
  end

  defp default_isolation(opts), do: opts

  @doc false
  def cwd!(path), do: path!(:cwd, path)
  @doc false
  def username!(name), do: name!(:username, name)
  @doc false
  def hostname!(name), do: name!(:hostname, name)

  @doc false
  def package_cache!(:config) do
    default = Path.join(System.tmp_dir!(), "ex_bashkit_packages")
    package_cache!(Application.get_env(:ex_bashkit, :package_cache, default))
  end

  def package_cache!(false), do: nil
  def package_cache!(nil), do: nil

  def package_cache!(dir) do
    if text?(dir) and dir != "" do
      Path.expand(dir)
    else
      raise ArgumentError,
            ":package_cache must be a directory path or false, got: #{inspect(dir)}"
    end
  end

  @doc false
  def profile!(nil), do: nil

  def profile!(script) do
    if text?(script),
      do: script,
      else: raise(ArgumentError, ":profile must be a UTF-8 string, got: #{inspect(script)}")
  end

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
end
