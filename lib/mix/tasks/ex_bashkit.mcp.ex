defmodule Mix.Tasks.ExBashkit.Mcp do
  @shortdoc "Serves a sandbox to MCP clients over stdio"
  @moduledoc """
  Serves a new sandboxed session to a Model Context Protocol client over
  stdio (`ExBashkit.MCP`, revision 2025-06-18): the client starts this
  task, and its model gets the tools bash, read_file, write_file,
  edit_file and list_dir on one persistent session for the connection.

      $ mix ex_bashkit.mcp --mount ./data:/data --timeout-ms 10000

  The session runs in a worker process (`isolation: :process`) where the
  platform has the worker executable, in this VM otherwise (say so with
  `--isolation none`). Only protocol messages go to stdout; everything
  else — Mix's and cargo's messages while compiling, logs — goes to
  stderr. A first build prints from Mix before this task starts, so build
  once (`mix compile`) before pointing a client at the project.

  In a client's configuration (Claude Desktop's `claude_desktop_config.json`,
  Cursor's `mcp.json`, …):

      {
        "mcpServers": {
          "sandbox": {
            "command": "mix",
            "args": ["ex_bashkit.mcp", "--mount", "/home/me/data:/data"],
            "cwd": "/path/to/your/project"
          }
        }
      }

  and for Claude Code, `claude mcp add sandbox -- mix ex_bashkit.mcp`
  run in the project's directory.

  ## Flags

    * `--timeout-ms N` — the time limit of each script (the session's
      `:timeout_ms`; a call may ask for less).
    * `--mount HOST:PATH[:rw]` — mounts a host directory, read-only unless
      `:rw` is given (repeatable).
    * `--allow-net URL` — allows HTTP requests to URLs under this prefix
      (repeatable); `--allow-net all` allows any.
    * `--python` — adds the sandboxed `python`/`python3` commands (Monty);
      `--cpython` adds them as CPython 3.14 in a WebAssembly guest.
    * `--limit KEY=VALUE` — sets a limit of `guides/limits.md` (repeatable).
    * `--env NAME=VALUE` — sets an environment variable (repeatable).
    * `--cwd PATH` — the starting working directory.
    * `--isolation process|none` — where the session's interpreter runs
      (default: `process` where the platform supports it).
    * `--max-output-bytes N` — the byte budget of each stream the model
      gets back from a tool (default 16384).
    * `--run-code` — adds the `run_code` tool: a JavaScript, Python or bash
      program run once in a fresh sandbox of its own (`ExBashkit.Code`).
  """

  use Mix.Task

  alias Mix.ExBashkit.Flags

  @switches Flags.switches(
              timeout_ms: :integer,
              isolation: :string,
              max_output_bytes: :integer,
              run_code: :boolean
            )

  @impl Mix.Task
  def run(argv) do
    protocol = Process.group_leader()
    # stdout carries the protocol alone: whatever else this VM prints
    # (Mix and cargo while compiling, IO.puts, logs) goes to stderr.
    Process.group_leader(self(), Process.whereis(:standard_error))
    log_to_stderr()

    opts = Flags.parse!(argv, @switches, "ex_bashkit.mcp")
    Mix.Task.run("app.start")

    mcp =
      try do
        ExBashkit.MCP.new(ExBashkit.Session.new(session_options(opts)),
          tool_options: Keyword.take(opts, [:max_output_bytes]),
          run_code: Keyword.get(opts, :run_code, false)
        )
      rescue
        error in ArgumentError -> Mix.raise(Exception.message(error))
      end

    ExBashkit.MCP.Stdio.serve(mcp, input: protocol, output: protocol)
  end

  @doc false
  # The session's options that the flags in `opts` ask for.
  @spec session_options(keyword()) :: keyword()
  def session_options(opts) do
    session = Flags.session_options(opts)

    session
    |> Keyword.put(:isolation, isolation!(opts[:isolation]))
    |> then(fn session ->
      case opts[:timeout_ms] do
        nil -> session
        ms -> Keyword.put(session, :limits, Keyword.put(session[:limits] || [], :timeout_ms, ms))
      end
    end)
  end

  defp isolation!(nil) do
    case ExBashkit.Worker.executable() do
      {:ok, _path} ->
        :process

      {:error, why} ->
        Mix.shell().error("ex_bashkit.mcp: the session runs in this VM: #{why}")
        :none
    end
  end

  defp isolation!("process"), do: :process
  defp isolation!("none"), do: :none

  defp isolation!(other),
    do: Mix.raise("--isolation takes process or none, got: #{inspect(other)}")

  # Elixir 1.15 and later log through the :logger handler :default;
  # earlier ones through Logger's console backend.
  defp log_to_stderr do
    case :logger.get_handler_config(:default) do
      {:ok, %{module: :logger_std_h, config: %{type: type}} = handler}
      when type != :standard_error ->
        :ok = :logger.remove_handler(:default)
        config = Map.take(handler, [:level, :filters, :filter_default, :formatter])

        :ok =
          :logger.add_handler(
            :default,
            :logger_std_h,
            Map.put(config, :config, %{type: :standard_error})
          )

      _ ->
        :ok
    end

    if Version.match?(System.version(), "< 1.15.0") do
      # Called by name: Elixir 1.15 deprecates the console backend, and
      # would warn about a call it can see.
      {logger, configure} = {Logger, :configure_backend}
      apply(logger, configure, [:console, [device: :standard_error]])
    end
  end
end
