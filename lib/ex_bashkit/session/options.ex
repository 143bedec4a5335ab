defmodule ExBashkit.Session.Options do
  @moduledoc false
  # The options of `ExBashkit.Session.new/1`: their schema (types, defaults
  # and the docs the Session moduledoc shows), the checks across options,
  # and the struct the NIF decodes (native/ex_bashkit/src/options.rs).
  # Every problem raises ArgumentError naming the option, before anything
  # native is built.

  alias ExBashkit.Options
  import ExBashkit.Options, only: [collection?: 1, entries!: 2, text?: 1, scalar: 1]

  @limit_keys [
    :max_commands,
    :max_loop_iterations,
    :max_total_loop_iterations,
    :max_function_depth,
    :max_input_bytes,
    :timeout_ms,
    :max_stdout_bytes,
    :max_stderr_bytes,
    :max_fs_bytes,
    :max_file_bytes,
    :max_file_count,
    :max_memory_bytes,
    :max_snapshot_bytes,
    :max_ast_depth,
    :max_parser_operations,
    :parser_timeout_ms,
    :max_background_jobs,
    :max_script_memory_bytes,
    :max_python_memory_bytes,
    :max_python_recursion
  ]

  # Counts travel to Rust as u64; anything larger means "unlimited" anyway.
  @max_u64 0xFFFF_FFFF_FFFF_FFFF

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
    files: [
      type: {:custom, &__MODULE__.files!/1},
      default: [],
      doc:
        "a map (or list) of `path => content` to seed into the virtual filesystem, " <>
          "creating parent directories as needed. Content is any `t:iodata/0`. " <>
          "Equivalent to calling `write_file/3` for each entry."
    ],
    limits: [
      type: {:custom, &__MODULE__.limits!/1},
      default: [],
      doc: "a keyword list or map of resource limits (see `guides/limits.md`)."
    ],
    mounts: [
      type: {:custom, &__MODULE__.mounts!/1},
      default: [],
      doc:
        "a list of `{vfs_path, host_path, mode}` mapping real host directories into " <>
          "the sandbox, `mode` being `:read_only` or `:read_write` (see `guides/host_access.md`)."
    ],
    allowed_mount_paths: [
      type: {:custom, &__MODULE__.allowed_mount_paths!/1},
      default: nil,
      doc:
        "host path prefixes that mounts must sit under; setting it replaces the " <>
          "default denylist (see `guides/host_access.md`)."
    ],
    allow_net: [
      type: {:custom, &__MODULE__.allow_net!/1},
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
    builtins: [
      type: {:custom, &__MODULE__.builtins!/1},
      default: %{},
      doc:
        "a map of `name => builtin` adding commands whose output Elixir code computes: " <>
          "a 1-arity function, a module, `{module, arg}` or `{module, function, args}` " <>
          "(see `ExBashkit.Builtin` and `guides/callbacks.md`)."
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
      type: {:custom, &__MODULE__.virtual_fs!/1},
      default: %{},
      doc:
        "a map of `mount_path => backend` mounting filesystems your application serves " <>
          "(see `guides/callbacks.md` and `ExBashkit.VirtualFs`)."
    ],
    python: [
      type: {:custom, &__MODULE__.python!/1},
      default: false,
      doc:
        "`true` or `:monty` (Monty, commands `python` and `python3`), `:cpython` " <>
          "(CPython 3.14 in a WebAssembly guest), or a keyword list of `runtime:` " <>
          "(`:monty` by default), `name: \"py\"` or `names: [...]` to add a " <>
          "sandboxed Python (see `guides/python.md`)."
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
    :credentials | Keyword.keys(@schema) -- [:files, :builtin_timeout_ms, :isolation, :approve]
  ]
  defstruct @enforce_keys

  @type t :: %__MODULE__{}

  @doc false
  @spec supported() :: [atom()]
  def supported, do: Keyword.keys(@schema)

  @doc false
  @spec limit_keys() :: [atom()]
  def limit_keys, do: @limit_keys

  @doc false
  # The optional parts this build has (`ExBashkit.features/0`).
  @spec built_features() :: [:python | :cpython | :jq | :network | :mounts]
  def built_features do
    built = ExBashkit.Native.features()
    # A fixed list, so no atom is made from what the library reports, and
    # none has to exist already (a fresh VM may never have seen :jq).
    for feature <- [:python, :cpython, :jq, :network, :mounts],
        Atom.to_string(feature) in built,
        do: feature
  end

  @doc false
  # What the NIF or a worker receives for `new(isolation: :process)`: the
  # session spare workers harden for ahead (ExBashkit.Worker.Spares).
  @spec default_native() :: t()
  def default_native, do: validate!(isolation: :process).native

  @doc false
  # The options as a Markdown list, for ExBashkit.Session's moduledoc.
  @spec docs() :: String.t()
  def docs, do: Options.docs(@schema)

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

    callbacks = %ExBashkit.Callbacks{
      builtins: opts.builtins,
      virtual_fs: opts.virtual_fs,
      timeout: opts.builtin_timeout_ms
    }

    no_overlaps!(
      Enum.map(opts.mounts, fn {point, _, _} = mount -> {point, "mount #{inspect(mount)}"} end) ++
        Enum.map(opts.virtual_fs, fn {point, _} ->
          {point, ":virtual_fs mount #{inspect(point)}"}
        end)
    )

    {python_runtime, python} = opts.python
    no_shadowing!(python, Map.keys(opts.builtins))
    python_memory!(python_runtime, opts.limits.max_python_memory_bytes)

    require_features!(
      python: python != [] and python_runtime == :monty,
      cpython: python != [] and python_runtime == :cpython,
      allow_net: opts.allow_net != :none,
      mounts: opts.mounts != []
    )

    {allow_net, secrets} = credentials(opts.allow_net)

    credentials =
      case resolve_credentials(secrets) do
        {:ok, credentials} -> credentials
        {:error, message} -> raise ArgumentError, message
      end

    native =
      struct!(
        __MODULE__,
        %{
          opts
          | builtins: Map.keys(opts.builtins),
            virtual_fs: Map.keys(opts.virtual_fs),
            python: python,
            allow_net: allow_net
        }
        |> Map.put(:credentials, credentials)
        |> Map.put(:python_runtime, python_runtime)
        |> Map.drop([:files, :builtin_timeout_ms, :isolation, :approve])
      )

    %{
      native: native,
      isolation: opts.isolation,
      files: opts.files,
      approval: {opts.approve, opts.builtin_timeout_ms},
      # Header functions are called again before each call.
      secrets: if(dynamic?(secrets), do: secrets),
      callbacks:
        if(callbacks.builtins == %{} and callbacks.virtual_fs == %{}, do: nil, else: callbacks)
    }
  end

  # The allowlist's patterns, and the headers injected for some of them.
  defp credentials({:only, entries}) do
    {{:only,
      Enum.map(entries, fn
        {pattern, _} -> pattern
        pattern -> pattern
      end)}, for({pattern, headers} <- entries, do: {pattern, headers})}
  end

  defp credentials(allow_net), do: {allow_net, []}

  defp dynamic?(rules),
    do: Enum.any?(rules, fn {_, headers} -> Enum.any?(headers, &is_function(elem(&1, 1))) end)

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
  # Whether a session with these options builds in tens of microseconds, on
  # a normal scheduler: no host mounts (they touch the disk) and few enough
  # entries that building cannot hold the scheduler long. Others are built
  # on a dirty scheduler.
  @light_entries 64
  @spec light?(t()) :: boolean()
  def light?(%__MODULE__{mounts: []} = options) do
    patterns = with {:only, patterns} <- options.allow_net, do: patterns, else: (_ -> [])

    [options.env, options.builtins, options.virtual_fs, options.python, patterns]
    |> Enum.map(&length/1)
    |> Enum.sum()
    |> Kernel.<=(@light_entries)
  end

  def light?(_options), do: false

  @doc false
  # The options of a fresh interpreter (ExBashkit.exec/1): a default session,
  # under the operator's timeout ceiling as it is configured now.
  @spec defaults(t()) :: t()
  def defaults(native) do
    %{native | limits: Map.put(native.limits, :timeout_ms, timeout!(nil))}
  end

  @doc false
  def cwd!(path), do: path!(:cwd, path)
  @doc false
  def username!(name), do: name!(:username, name)
  @doc false
  def hostname!(name), do: name!(:hostname, name)

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
  def limits!(limits) when collection?(limits) do
    given =
      entries!(":limits", limits)
      |> Enum.map(fn
        {key, value} when key in @limit_keys ->
          {key, limit_value!(key, value)}

        {key, _} ->
          raise ArgumentError,
                "unknown limit #{inspect(key)} in :limits, expected one of: #{inspect(@limit_keys)}"

        other ->
          raise ArgumentError, ":limits entries must be {key, value}, got: #{inspect(other)}"
      end)
      |> Map.new()

    @limit_keys
    |> Map.new(&{&1, nil})
    |> Map.merge(given)
    |> Map.put(:timeout_ms, timeout!(given[:timeout_ms]))
  end

  def limits!(other) do
    raise ArgumentError, ":limits must be a keyword list or map, got: #{inspect(other)}"
  end

  defp limit_value!(key, value) when key in [:timeout_ms, :parser_timeout_ms] do
    if is_integer(value) and value >= 1 do
      min(value, @max_u64)
    else
      raise ArgumentError,
            ":limits key #{inspect(key)} must be a positive integer (milliseconds), " <>
              "got: #{inspect(value)}"
    end
  end

  defp limit_value!(_key, value) when is_integer(value) and value >= 0, do: min(value, @max_u64)

  defp limit_value!(key, value) do
    raise ArgumentError,
          ":limits key #{inspect(key)} must be a non-negative integer, got: #{inspect(value)}"
  end

  # bashkit's own default, which the operator's ceiling may lower.
  @default_timeout_ms 30_000

  @doc false
  @spec default_timeout_ms() :: pos_integer()
  def default_timeout_ms, do: @default_timeout_ms

  @doc false
  # The wall-clock limit validated options run under.
  @spec timeout_ms(map()) :: pos_integer()
  def timeout_ms(%{limits: %{timeout_ms: ms}}) when is_integer(ms), do: ms
  def timeout_ms(_native), do: @default_timeout_ms

  # The session's :timeout_ms under `config :ex_bashkit, :max_timeout_ms`:
  # asking for more raises; the default is lowered to the ceiling.
  defp timeout!(requested) do
    case {requested, timeout_ceiling!()} do
      {nil, nil} ->
        nil

      {nil, ceiling} ->
        if ceiling < @default_timeout_ms, do: ceiling, else: nil

      {ms, ceiling} when ceiling == nil or ms <= ceiling ->
        ms

      {ms, ceiling} ->
        raise ArgumentError,
              ":limits key :timeout_ms of #{ms} exceeds the configured :max_timeout_ms " <>
                "ceiling of #{ceiling} (config :ex_bashkit, :max_timeout_ms)"
    end
  end

  defp timeout_ceiling! do
    case Application.get_env(:ex_bashkit, :max_timeout_ms) do
      nil ->
        nil

      ms when is_integer(ms) and ms > 0 ->
        ms

      other ->
        raise ArgumentError,
              "config :ex_bashkit, :max_timeout_ms must be a positive integer or nil, " <>
                "got: #{inspect(other)}"
    end
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

    unless mode in [:read_only, :read_write] do
      raise ArgumentError,
            "mount #{inspect(mount)}: unknown mode #{inspect(mode)}, " <>
              "expected :read_only or :read_write"
    end

    {vfs_path, host_path!("mount #{inspect(mount)}: the host path", host_path), mode}
  end

  defp mount!(other) do
    raise ArgumentError,
          ":mounts entries must be {vfs_path, host_path, mode}, got: #{inspect(other)}"
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
  def allow_net!(nil), do: :none
  def allow_net!(:all), do: :all

  def allow_net!(patterns) when is_list(patterns) do
    {:only, ":allow_net" |> entries!(patterns) |> Enum.map(&allow_net_entry!/1)}
  end

  def allow_net!(other) do
    raise ArgumentError,
          ":allow_net must be a list of URL patterns or :all, got: #{inspect(other)}"
  end

  # A pattern, or `{pattern, headers: headers}` whose headers are injected
  # into the requests it matches. Messages never show a header's value.
  defp allow_net_entry!({pattern, opts}) when is_list(opts) or is_map(opts) do
    pattern = url_pattern!(pattern)

    headers =
      case Enum.to_list(opts) do
        [headers: headers] when headers != [] and headers != %{} and collection?(headers) ->
          headers

        _ ->
          raise ArgumentError,
                ":allow_net entry for #{inspect(pattern)} must be {pattern, headers: " <>
                  "%{name => value}} with at least one header"
      end

    {pattern, Enum.map(entries!(":allow_net headers", headers), &header!(pattern, &1))}
  end

  defp allow_net_entry!(pattern), do: url_pattern!(pattern)

  defp header!(pattern, {name, value}) do
    name =
      if is_atom(name) and name not in [nil, true, false], do: Atom.to_string(name), else: name

    unless is_binary(name) and name =~ ~r/\A[!#$%&'*+.^_`|~0-9A-Za-z-]+\z/ do
      raise ArgumentError,
            ":allow_net header names for #{inspect(pattern)} must be HTTP header names, " <>
              "got: #{inspect(name)}"
    end

    unless is_function(value, 0) or header_value?(value) do
      raise ArgumentError,
            ":allow_net header #{inspect(name)} for #{inspect(pattern)} must be a string " <>
              "without control characters, or a 0-arity function returning one " <>
              "(its value is not shown)"
    end

    {name, value}
  end

  defp header!(pattern, _other),
    do:
      raise(
        ArgumentError,
        ":allow_net headers for #{inspect(pattern)} must be name => value pairs"
      )

  defp header_value?(value),
    do: is_binary(value) and String.valid?(value) and not (value =~ ~r/[\x00-\x1f\x7f]/)

  @doc """
  The injected headers with every function called for its current value:
  `{:ok, rules}`, or `{:error, message}` naming the header whose function
  failed (never a value).
  """
  @spec resolve_credentials([{String.t(), [{String.t(), String.t() | (() -> String.t())}]}]) ::
          {:ok, [{String.t(), [{String.t(), String.t()}]}]} | {:error, String.t()}
  def resolve_credentials(rules) do
    {:ok,
     for {pattern, headers} <- rules do
       {pattern, for({name, value} <- headers, do: {name, resolve!(pattern, name, value)})}
     end}
  catch
    {:bad_header, message} -> {:error, message}
  end

  defp resolve!(pattern, name, fun) when is_function(fun, 0) do
    value =
      try do
        fun.()
      catch
        kind, reason ->
          throw(
            {:bad_header,
             ":allow_net header function #{inspect(name)} for #{inspect(pattern)} failed: " <>
               Exception.format_banner(kind, reason, __STACKTRACE__)}
          )
      end

    if header_value?(value),
      do: value,
      else:
        throw(
          {:bad_header,
           ":allow_net header function #{inspect(name)} for #{inspect(pattern)} must return " <>
             "a string without control characters (its value is not shown)"}
        )
  end

  defp resolve!(_pattern, _name, value), do: value

  # Patterns that cannot match (no scheme or host) would silently deny; say so.
  defp url_pattern!(pattern) do
    with true <- text?(pattern),
         {:ok, %URI{scheme: scheme, host: host}} when scheme in ["http", "https"] <-
           URI.new(pattern),
         true <- is_binary(host) and host != "" do
      pattern
    else
      _ ->
        raise ArgumentError,
              ":allow_net pattern #{inspect(pattern)} must be an http:// or https:// URL " <>
                "with a host, like \"https://api.example.com/v1\""
    end
  end

  @doc false
  def builtins!(builtins) when collection?(builtins) do
    entries!(":builtins", builtins)
    |> Enum.map(fn
      {name, fun} ->
        name = command_name!(":builtins", name)
        {name, ExBashkit.Builtin.validate!(name, fun)}

      other ->
        raise ArgumentError, ":builtins entries must be {name, fun}, got: #{inspect(other)}"
    end)
    |> unique!(":builtins has more than one entry named")
  end

  def builtins!(other) do
    raise ArgumentError, ":builtins must be a map of name => fun, got: #{inspect(other)}"
  end

  # A name a script can type as a command word.
  defp command_name!(option, name) do
    text = scalar(name)

    cond do
      not is_binary(text) ->
        raise ArgumentError,
              "#{option} names must be strings or atoms, got: #{inspect(name)}"

      not String.valid?(text) ->
        raise ArgumentError, "#{option} names must be valid UTF-8, got: #{inspect(name)}"

      text == "" or String.contains?(text, ["/", "=", " ", "\t", "\n", "\r", <<0>>]) ->
        raise ArgumentError,
              "#{option} names must be non-empty, without whitespace, NUL, \"/\" or \"=\", " <>
                "got: #{inspect(name)}"

      true ->
        text
    end
  end

  # Entries are {normalized_key, value}; two that normalize alike would
  # silently shadow each other.
  defp unique!(entries, what) do
    Enum.reduce(entries, %{}, fn {key, value}, acc ->
      if Map.has_key?(acc, key) do
        raise ArgumentError, "#{what} #{inspect(key)}"
      else
        Map.put(acc, key, value)
      end
    end)
  end

  @features %{python: :python, cpython: :cpython, allow_net: :network, mounts: :mounts}
  @feature_options %{cpython: "python: :cpython"}

  @doc false
  # Raises for an option (`{option, asked?}`) whose part was left out of
  # this build (its Cargo feature). `built` is asked for only when needed:
  # it is a NIF call.
  def require_features!(asked, built \\ &built_features/0) do
    case for({option, true} <- asked, do: option) do
      [] ->
        :ok

      options ->
        built = built.()

        with option when option != nil <- Enum.find(options, &(@features[&1] not in built)) do
          feature = @features[option]

          option = Map.get_lazy(@feature_options, option, fn -> inspect(option) end)

          raise ArgumentError,
                "#{option} needs the #{inspect(feature)} part of ex_bashkit, which this " <>
                  "build was compiled without: add #{inspect(feature)} to " <>
                  "`config :ex_bashkit, features: [...]` and rebuild " <>
                  "(`mix deps.compile ex_bashkit --force`)"
        end

        :ok
    end
  end

  defp no_shadowing!(python, builtins) do
    case Enum.find(python, &(&1 in builtins)) do
      nil ->
        :ok

      name ->
        raise ArgumentError,
              "the :python command #{inspect(name)} is also a :builtins name; " <>
                "rename one of them (python: [name: \"py\"])"
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
  defp no_overlaps!(points) do
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

  @python_runtimes [:monty, :cpython]
  @python_names ["python", "python3"]

  @doc false
  # {runtime, command names}; no names for no Python.
  def python!(false), do: {:monty, []}
  def python!(true), do: {:monty, @python_names}
  def python!(runtime) when runtime in @python_runtimes, do: {runtime, @python_names}

  def python!(opts) when is_list(opts) and opts != [] do
    keys = if Keyword.keyword?(opts), do: Keyword.keys(opts), else: python_error!(opts)
    if Enum.uniq(keys) != keys, do: python_error!(opts)

    case keys -- [:runtime, :name, :names] do
      [] ->
        :ok

      [key | _] ->
        raise ArgumentError,
              "unknown :python key #{inspect(key)}, expected :runtime, :name or :names"
    end

    runtime = Keyword.get(opts, :runtime, :monty)

    unless runtime in @python_runtimes do
      raise ArgumentError,
            ":python runtime must be one of #{inspect(@python_runtimes)}, got: #{inspect(runtime)}"
    end

    names =
      case {Keyword.fetch(opts, :name), Keyword.fetch(opts, :names)} do
        {:error, :error} ->
          @python_names

        {{:ok, name}, :error} ->
          [name]

        {:error, {:ok, names}} when is_list(names) and names != [] ->
          entries!(":python names", names)

        _ ->
          python_error!(opts)
      end

    names =
      names
      |> Enum.map(&{command_name!(":python builtin", &1), true})
      |> unique!(":python names the command twice:")
      |> Map.keys()

    {runtime, names}
  end

  def python!(other), do: python_error!(other)

  defp python_error!(value) do
    raise ArgumentError,
          ":python must be true, false, :monty, :cpython or a keyword list of :runtime and " <>
            ":name or :names (a non-empty list), got: #{inspect(value)}"
  end

  # The CPython guest starts from a snapshot of about 40 MB of memory; a
  # smaller cap would fail every call, and wasmtime's pool honours at most
  # 1 GiB.
  @cpython_memory (64 * 1024 * 1024)..(1024 * 1024 * 1024)

  defp python_memory!(:cpython, bytes) when is_integer(bytes) and bytes not in @cpython_memory do
    raise ArgumentError,
          ":limits key :max_python_memory_bytes must be between 64 MiB and 1 GiB with " <>
            "python: :cpython, got: #{bytes}"
  end

  defp python_memory!(_runtime, _bytes), do: :ok
end
