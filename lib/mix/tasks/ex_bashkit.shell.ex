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

  alias Mix.ExBashkit.Flags

  @switches Flags.switches(
              snapshot: :string,
              isolated: :boolean,
              attach: :string,
              connect: :string,
              cookie: :string
            )

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
  def parse!(argv), do: Flags.parse!(argv, @switches, "ex_bashkit.shell")

  @doc false
  # The options of `ExBashkit.Shell.start/1` that `argv` asks for.
  @spec argv_options([String.t()]) :: keyword()
  def argv_options(argv), do: argv |> parse!() |> shell_options()

  @doc false
  @spec shell_options(keyword()) :: keyword()
  def shell_options(opts) do
    [
      session: Flags.session_options(opts),
      isolated: Keyword.get(opts, :isolated, false),
      snapshot: opts[:snapshot],
      server: opts[:attach]
    ]
    |> Enum.reject(fn {key, value} -> key != :session and value in [nil, false] end)
    |> then(&if(&1[:server], do: Keyword.delete(&1, :session), else: &1))
  end

  defp connect(opts) do
    if node = opts[:connect] do
      ExBashkit.Peer.ensure_distributed!()
      if cookie = opts[:cookie], do: Node.set_cookie(String.to_atom(cookie))

      unless Node.connect(String.to_atom(node)) do
        Mix.raise("could not connect to #{node}")
      end

      :global.sync()
      # Servers of ids are found through their owners, once the ring knows the node.
      ExBashkit.Server.Ring.await(String.to_atom(node), 5_000)
    end
  end
end
