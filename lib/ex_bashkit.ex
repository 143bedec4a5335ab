defmodule ExBashkit do
  @moduledoc """
  Safe places for AI agents to run code.

    * `exec/1` runs a bash script in a fresh, throw-away interpreter.
    * `ExBashkit.Session` keeps one interpreter alive across calls: env, cwd,
      functions, aliases and an in-memory filesystem persist.

  The interpreter is [bashkit](https://crates.io/crates/bashkit), a bash
  reimplementation in Rust with its own virtual filesystem: scripts never
  touch the host's processes, files or network unless a session grants it.
  A script's first steps run on its caller's dirty scheduler (most scripts
  end there); one that has to wait goes on on the NIF's own threads while
  the caller waits in `receive` (`guides/how_scripts_run.md`).

      iex> {:ok, result} = ExBashkit.exec("echo hello | tr a-z A-Z")
      iex> result.stdout
      "HELLO\\n"
  """

  @typedoc """
  What `analyze/1` finds in a script: each command with its arguments
  (`nil` where a word is only known when the script runs) and where it
  sits, the files redirected to or from, the functions it defines, and the
  wrappers (`env`, `xargs`, `timeout`, ...) that run other commands.
  """
  @type analysis :: %{
          commands: [
            %{
              name: String.t() | nil,
              args: [String.t() | nil],
              context: :direct | :substitution | :function_body | :wrapped,
              assignments: [String.t()],
              wrapper: String.t() | nil
            }
          ],
          redirects: [%{path: String.t() | nil, mode: :read | :write | :append}],
          functions: [String.t()],
          wrappers: [String.t()],
          dynamic_commands: boolean(),
          substitutions: boolean(),
          reentry: boolean(),
          truncated: boolean(),
          opaque: boolean()
        }

  alias ExBashkit.{Caller, Error, Native, Result, Session}
  alias ExBashkit.Session.{ExecOptions, Options}

  @doc """
  Runs `script` in a fresh interpreter that is discarded afterwards.
  Without options, that is one of the interpreters prepared ahead for
  `ExBashkit.Session.new/0` when one is ready (never used before, dropped
  after), so a one-off costs a session's `exec` instead of a build.

  Returns `{:ok, %ExBashkit.Result{}}` — also when the script exits non-zero —
  or `{:error, message}` when the script cannot be parsed, is not valid UTF-8,
  or hits a sandbox limit. Nothing persists between calls: use
  `ExBashkit.Session` for that.

      iex> {:ok, result} = ExBashkit.exec("x=41; echo $((x + 1))")
      iex> result.stdout
      "42\\n"
      iex> {:ok, result} = ExBashkit.exec("echo ${x:-unset}")
      iex> result.stdout
      "unset\\n"
      iex> {:ok, %ExBashkit.Result{exit_code: 7}} = ExBashkit.exec("exit 7")
      iex> {:error, message} = ExBashkit.exec("if then fi")
      iex> message =~ "parse error"
      true

  ## Options

  `opts` takes the options of `ExBashkit.Session.new/1` (limits, mounts,
  network, python, builtins, virtual_fs, files, env, cwd, …) for the fresh
  interpreter, and those of `ExBashkit.Session.exec/3` for the call
  (`:timeout_ms`, `:stdin`, `:args`, `:into`, `:stream_to`, `:errors`).

      iex> {:ok, result} =
      ...>   ExBashkit.exec("upcase < /in.txt",
      ...>     files: %{"/in.txt" => "shout"},
      ...>     builtins: %{"upcase" => fn %{stdin: text} -> {:ok, String.upcase(text)} end}
      ...>   )
      iex> result.stdout
      "SHOUT"
      iex> {:error, %ExBashkit.Error{reason: :parse_error}} = ExBashkit.exec("if then fi", errors: :struct)
  """
  @spec exec(String.t(), keyword()) :: {:ok, Result.t()} | {:error, String.t() | Error.t()}
  def exec(script, opts \\ [])

  def exec(script, []) do
    if Application.get_env(:ex_bashkit, :isolation, :none) == :none,
      do: exec_in_vm(script),
      # The configured isolation holds for every entry point.
      else: exec(script, isolation: Application.get_env(:ex_bashkit, :isolation))
  end

  def exec(script, opts) do
    unless is_list(opts) and Keyword.keyword?(opts) do
      raise ArgumentError,
            "ExBashkit.exec/2 expects a keyword list of options, got: #{inspect(opts)}"
    end

    {session_opts, call_opts} = Keyword.split(opts, Options.supported())
    session = Session.new(session_opts)

    try do
      Session.exec(session, script, call_opts)
    after
      # A worker process goes at once, not when the session is collected.
      Session.close(session)
    end
  end

  defp exec_in_vm(script) do
    tag = make_ref()

    script = Caller.script!(script)
    # The session defaults, and the interpreters prepared with them: a
    # one-off takes one when it is ready, as Session.new() does.
    {%{native: options}, generation} = Session.Prepared.defaults()
    call = ExecOptions.validate!([], Options.Limits.timeout_ms(options), "ExBashkit.exec/2")

    Caller.observe(nil, script, call, fn ->
      options |> Native.exec_once(generation, script, self(), tag) |> Caller.await(tag, call)
    end)
  end

  @doc """
  The optional parts this build of the library has: `:python` (Monty,
  the sandboxed Python), `:cpython` (CPython 3.14 in a WebAssembly guest),
  `:jq`, `:network` (`curl`/`wget` under `:allow_net`), `:mounts`
  (host directories), `:javascript` (`node` in worker processes),
  `:git` (`git` on the session's files) and `:sqlite` (`sqlite3`, in
  worker processes). All of them unless the build was
  configured with fewer (`config :ex_bashkit, features: [...]`, see the
  README's "Installing"); a session that asks for a part that is missing
  raises `ArgumentError` saying how to add it.

      iex> ExBashkit.features()
      [:python, :cpython, :jq, :network, :mounts, :javascript, :git, :sqlite]
  """
  @spec features() :: [
          :python | :cpython | :jq | :network | :mounts | :javascript | :git | :sqlite
        ]
  def features, do: ExBashkit.Session.Options.Capabilities.built_features()

  @doc """
  Loads the CPython guest (`python: :cpython`) and builds its memory
  image now, once per VM, instead of in the first Python call: 20 to 50 ms
  of work on a dirty scheduler.
  Call it at boot when the first agent call should not pay it. Answers
  `:ok` at once when it is already loaded or not built in (see
  `features/0`), `{:error, message}` when the guest cannot be loaded.

      iex> ExBashkit.warm_up()
      :ok
  """
  @spec warm_up() :: :ok | {:error, String.t()}
  def warm_up, do: Native.python_warm_up()

  @typedoc """
  What `stats/0` reports:

    * `:threads` — interpreter threads started, `:hogged` — how many are
      inside work that has not yielded for over 10 ms;
    * `:live_bytes` — memory the interpreters hold now (sessions, their
      files and variables, running scripts), `:budget_bytes` — the
      VM-wide budget it is held to;
    * `:frozen_scripts`, `:frozen_bytes` — scripts frozen over a memory
      limit inside work that cannot be interrupted, and what they hold
      (see "Memory" in `guides/limits.md`);
    * `:prepared` — interpreters built ahead of need for `Session.new/1`
      with the default options, waiting to be handed over (see
      "Prepared interpreters" in `ExBashkit.Session.new/1`);
    * `:caller_slots` — how many scripts may run their first steps on
      their callers' dirty schedulers at once: one fewer than the cores
      and than the VM's dirty CPU schedulers when the library loaded
      (see `guides/how_scripts_run.md`);
    * `:workers` — the worker processes of `isolation: :process` sessions:
      `:count`, `:rss_bytes` (their resident memory), and `:kills`, how
      many were ended so far, by reason (see `guides/isolation.md`).
  """
  @type stats :: %{
          threads: pos_integer(),
          hogged: non_neg_integer(),
          live_bytes: integer(),
          budget_bytes: pos_integer(),
          frozen_scripts: non_neg_integer(),
          frozen_bytes: integer(),
          prepared: non_neg_integer(),
          caller_slots: non_neg_integer(),
          workers: %{
            count: non_neg_integer(),
            rss_bytes: non_neg_integer(),
            kills: %{atom() => non_neg_integer()}
          }
        }

  @doc """
  What the interpreters of this VM are doing and the memory they hold.

      iex> stats = ExBashkit.stats()
      iex> stats.live_bytes < stats.budget_bytes
      true
  """
  @spec stats() :: stats()
  def stats do
    workers = Map.put(ExBashkit.Worker.stats(), :kills, ExBashkit.Telemetry.worker_kills())
    Map.put(Native.stats(), :workers, workers)
  end

  @doc """
  What `script` would run, found by static analysis before anything runs
  (bashkit's parser; nothing is executed): every command with its literal
  arguments (`nil` for one built at run time) and where it sits (`:direct`,
  inside a `:substitution`, or in a `:function_body`), file redirects,
  functions defined, command wrappers used (`env`, `xargs`, `timeout`, …,
  which run a command named in their arguments), and what analysis cannot
  see: `:dynamic_commands` (a name built at run time), `:reentry` (`eval`,
  `source`, a nested `bash`), `:truncated`; `:opaque` is any of those.
  `{:error, why}` for a script that does not parse.

  This is what an `:approve` function gets (`ExBashkit.Session.exec/3`).

      iex> {:ok, found} = ExBashkit.analyze("cat notes.txt | grep -c todo > count")
      iex> for %{name: name, args: args} <- found.commands, do: {name, args}
      [{"cat", ["notes.txt"]}, {"grep", ["-c", "todo"]}]
      iex> found.redirects
      [%{path: "count", mode: :write}]
      iex> {:ok, found} = ExBashkit.analyze(~S(cmd=rm; $cmd -rf /; eval "$x"))
      iex> {found.dynamic_commands, found.reentry, found.opaque}
      {true, true, true}
      iex> {:error, _why} = ExBashkit.analyze("if then fi")
  """
  @spec analyze(binary()) :: {:ok, analysis()} | {:error, String.t()}
  def analyze(script) when is_binary(script), do: ExBashkit.Approval.analyze(script)

  def analyze(other),
    do: raise(ArgumentError, "expected a script (a binary), got: #{inspect(other)}")

  @doc """
  What this host offers the worker processes of `isolation: :process`
  sessions, the kernel's layers around each one (see "What isolation:
  :process defends against" in `guides/isolation.md`):

    * `:seccomp` — system call filters;
    * `:landlock_abi` — the Landlock ABI version, `0` without Landlock;
    * `:user_namespaces`, `:network_namespaces` — whether a worker can
      have a network (and user) namespace of its own;
    * `:cgroup` — whether workers get a cgroup of their own (a VM running
      as root, with cgroup v1's `memory` and `pids` or a v2 parent that
      delegates them);
    * `:root` — whether the VM runs as root, and then `:worker_user`, the
      `{uid, gid}` its workers become (`config :ex_bashkit, :worker_user`);
    * `:hardening` — `false` when `config :ex_bashkit, harden_workers:
      false` turned the layers off.

  `ExBashkit.Session.info/1` says which layers are in force on a worker.

      iex> info = ExBashkit.isolation_info()
      iex> is_boolean(info.seccomp) and is_integer(info.landlock_abi)
      true
  """
  @spec isolation_info() :: %{
          seccomp: boolean(),
          landlock_abi: non_neg_integer(),
          user_namespaces: boolean(),
          network_namespaces: boolean(),
          cgroup: boolean(),
          root: boolean(),
          worker_user: {non_neg_integer(), non_neg_integer()} | :keep | nil,
          hardening: boolean()
        }
  def isolation_info, do: ExBashkit.Worker.Hardening.host()
end
