defmodule Mix.Tasks.ExBashkit.Shell do
  @shortdoc "Opens an interactive shell on a sandboxed session"
  @moduledoc """
  Opens an interactive shell on a new sandboxed session (or attaches to a
  running session server), in this terminal:

      $ mix ex_bashkit.shell --mount ./data:/data --limit max_commands=100000
      sandbox@bashkit-sandbox:/$ ls /data | wc -l

  See `ExBashkit.Shell` for what the shell does: line editing and
  history, multi-line commands, streamed output, Ctrl-C to interrupt a
  running script, `exit` or Ctrl-D to leave.

  ## Flags

    * `--mount HOST:PATH[:rw]` — mounts a host directory, read-only unless
      `:rw` is given (repeatable).
    * `--allow-net URL` — allows HTTP requests to URLs under this prefix
      (repeatable); `--allow-net all` allows any.
    * `--limit KEY=VALUE` — sets a limit of `guides/limits.md`, e.g.
      `--limit timeout_ms=5000` (repeatable).
    * `--env NAME=VALUE` — sets an environment variable (repeatable).
    * `--python` — adds the sandboxed `python`/`python3` commands (Monty);
      `--cpython` adds them as CPython 3.14 in a WebAssembly guest.
    * `--cwd PATH` — the starting working directory.
    * `--snapshot FILE` — restores the session from FILE if it exists and
      saves it there on leaving.
    * `--isolated` — runs the session on a sandbox node, a separate VM
      under a memory limit (`ExBashkit.SandboxNode`).
    * `--attach ID` — uses the running `ExBashkit.Server` with this id
      instead of a new session; with `--connect NODE` (and `--cookie`),
      on another node of the cluster.
  """

  use Mix.Task

  @switches [
    mount: :keep,
    allow_net: :keep,
    limit: :keep,
    env: :keep,
    python: :boolean,
    cpython: :boolean,
    cwd: :string,
    snapshot: :string,
    isolated: :boolean,
    attach: :string,
    connect: :string,
    cookie: :string
  ]

  @impl Mix.Task
  def run(argv) do
    opts = parse!(argv)
    Mix.Task.run("app.start")
    connect(opts)

    result =
      try do
        ExBashkit.Shell.start(shell_options(opts))
      rescue
        error in ArgumentError -> {:error, Exception.message(error)}
      end

    with {:error, message} <- result, do: Mix.raise(message)
  end

  @doc false
  # The flags as `ExBashkit.Shell.start/1` options; a bad flag raises
  # Mix.Error naming it.
  @spec parse!([String.t()]) :: keyword()
  def parse!(argv) do
    case OptionParser.parse(argv, strict: @switches) do
      {opts, [], []} ->
        opts

      {_, [extra | _], _} ->
        Mix.raise("unexpected argument #{inspect(extra)}; see `mix help ex_bashkit.shell`")

      {_, _, [{flag, _} | _]} ->
        Mix.raise("unknown or malformed flag #{flag}; see `mix help ex_bashkit.shell`")
    end
  end

  @doc false
  # The options of `ExBashkit.Shell.start/1` that `argv` asks for.
  @spec argv_options([String.t()]) :: keyword()
  def argv_options(argv), do: argv |> parse!() |> shell_options()

  @doc false
  @spec shell_options(keyword()) :: keyword()
  def shell_options(opts) do
    session =
      [
        mounts: Enum.map(Keyword.get_values(opts, :mount), &mount!/1),
        allow_net: allow_net(Keyword.get_values(opts, :allow_net)),
        limits: Enum.map(Keyword.get_values(opts, :limit), &limit!/1),
        env: Enum.map(Keyword.get_values(opts, :env), &pair!(&1, "--env")),
        python: python(opts),
        cwd: opts[:cwd]
      ]
      |> Enum.reject(fn {_key, value} -> value in [nil, []] end)

    [
      session: session,
      isolated: Keyword.get(opts, :isolated, false),
      snapshot: opts[:snapshot],
      server: opts[:attach]
    ]
    |> Enum.reject(fn {key, value} -> key != :session and value in [nil, false] end)
    |> then(&if(&1[:server], do: Keyword.delete(&1, :session), else: &1))
  end

  defp mount!(spec) do
    case String.split(spec, ":") do
      [host, path] -> {Path.expand(host), path, :read_only}
      [host, path, "rw"] -> {Path.expand(host), path, :read_write}
      [host, path, "ro"] -> {Path.expand(host), path, :read_only}
      _ -> Mix.raise("--mount takes HOST:PATH or HOST:PATH:rw, got: #{inspect(spec)}")
    end
  end

  defp python(opts) do
    cond do
      opts[:cpython] -> :cpython
      opts[:python] -> true
      true -> nil
    end
  end

  defp allow_net([]), do: nil
  defp allow_net(urls), do: if("all" in urls, do: :all, else: urls)

  defp limit!(spec) do
    {key, value} = pair!(spec, "--limit")

    case Integer.parse(value) do
      {number, ""} when number >= 0 -> {String.to_atom(key), number}
      _ -> Mix.raise("--limit takes KEY=NUMBER, got: #{inspect(spec)}")
    end
  end

  defp pair!(spec, flag) do
    case String.split(spec, "=", parts: 2) do
      [key, value] when key != "" -> {key, value}
      _ -> Mix.raise("#{flag} takes NAME=VALUE, got: #{inspect(spec)}")
    end
  end

  defp connect(opts) do
    if node = opts[:connect] do
      ExBashkit.Peer.ensure_distributed!()
      if cookie = opts[:cookie], do: Node.set_cookie(String.to_atom(cookie))

      unless Node.connect(String.to_atom(node)) do
        Mix.raise("could not connect to #{node}")
      end

      :global.sync()
    end
  end
end
