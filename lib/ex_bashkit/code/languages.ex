defmodule ExBashkit.Code.Languages do
  @moduledoc false
  # One run of ExBashkit.Code.run/2 per language: a fresh sandbox (a
  # worker process forked for the run, closed after it), the code in its
  # files, then one code run (`Session.run_code/3`): the worker runs the
  # language's driver and answers the engine's typed outcome, the value's
  # JSON or the error with its kind and line, beside the code's own
  # stdout and stderr (crates/worker/src/code.rs). JavaScript's driver is
  # the worker's `node --execute`, CPython's runner.py, Monty's a few
  # lines below the code.

  alias ExBashkit.{Error, JSON, Session}

  @python_runner File.read!(Path.join(__DIR__, "runner.py"))
  @external_resource Path.join(__DIR__, "runner.py")

  @doc false
  def python_runner, do: @python_runner

  @memory_limits %{
    javascript: :max_javascript_memory_bytes,
    typescript: :max_javascript_memory_bytes,
    python: :max_python_memory_bytes,
    monty: :max_python_memory_bytes,
    bash: :max_script_memory_bytes
  }

  @doc "Runs `code` as `config` says; see `ExBashkit.Code.run/2`."
  def run(:elixir, code, config) do
    # The input as the other languages see it: through JSON.
    {:ok, input} = config.input |> JSON.encode!() |> JSON.decode()
    setup = quote(do: var!(input) = unquote(Macro.escape(input)))
    opts = [setup: setup, timeout: config.timeout_ms, env: config.env]

    case ExBashkit.Peer.run(code, opts) do
      {:ok, %{output: output, result: result}} ->
        {:ok, %{output: result, stdout: output, stderr: ""}}

      {:error, :timeout, %{output: output}} ->
        failure(:timeout, "the code ran past its #{config.timeout_ms} ms", printed(output))

      {:error, :noconnection, %{output: output}} ->
        failure(:error, "the peer node running the code went away", printed(output))

      {:error, {kind, reason, stacktrace}, %{output: output}} ->
        failure(:exception, Exception.format_banner(kind, reason, stacktrace), printed(output))
    end
  end

  def run(:bash, code, config) do
    in_sandbox(:bash, code, config, fn session ->
      Session.exec(session, code, stdin: JSON.encode!(config.input), errors: :struct)
    end)
  end

  def run(language, code, config) do
    run = {language, JSON.encode!(config.input), config.allow}

    in_sandbox(language, code, config, &Session.run_code(&1, run, errors: :struct))
  end

  defp in_sandbox(language, code, config, run) do
    session = Session.new(session_options(language, code, config))

    try do
      session |> run.() |> answer(language)
    after
      Session.close(session)
    end
  end

  @doc """
  What `code` would be refused for, without running it: its syntax
  errors, and the uses of APIs a run with `allow` refuses. JavaScript is
  checked by the worker's `node --check` (its syntax by the engine, its
  uses in oxc's syntax tree, `js/scan.rs`); Python's syntax by CPython in a
  fresh worker, its uses by `ExBashkit.Code.Scan`.
  """
  def check(language, code, allow) when language in [:javascript, :typescript],
    do: syntax(language, code, allow)

  # Monty's syntax is checked as Python's.
  def check(:monty, code, allow), do: check(:python, code, allow)

  def check(language, code, allow),
    do: syntax(language, code, allow) ++ ExBashkit.Code.Scan.forbidden(language, code, allow)

  defp syntax(:elixir, code, _allow) do
    case Code.string_to_quoted(code) do
      {:ok, _} ->
        []

      {:error, {meta, message, token}} ->
        [syntax_error(meta_line(meta), "#{message_text(message)}#{token}")]
    end
  end

  defp syntax(:bash, code, _allow) do
    case ExBashkit.Approval.analyze(code) do
      {:ok, _} -> []
      {:error, message} -> [syntax_error(nil, message)]
    end
  end

  defp syntax(language, code, allow) do
    config = %{
      input: nil,
      timeout_ms: 5_000,
      memory_mb: 64,
      files: [],
      env: [],
      mounts: [],
      allow: [],
      tools: []
    }

    session = Session.new(session_options(language, code, config))

    check =
      case language do
        :javascript -> "node --check --allow=#{Enum.join(allow, ",")} /code/main.js"
        :typescript -> "node --check --allow=#{Enum.join(allow, ",")} /code/main.ts"
        :python -> "python3 /code/.run.py --check"
      end

    try do
      case Session.exec(session, check, errors: :struct) do
        {:ok, %{exit_code: 0, stdout: ""}} ->
          []

        # `node --check --allow=…`: its findings on stdout, after its
        # syntax error (on stderr) if it has one.
        {:ok, %{exit_code: code, stdout: "[" <> _ = findings, stderr: stderr}} ->
          {:ok, findings} = JSON.decode(findings)
          syntax = if code == 0, do: [], else: [node_syntax_error(stderr)]

          syntax ++
            for %{"message" => message, "line" => line} <- findings,
                do: %{kind: :forbidden, message: message, line: line}

        {:ok, %{stdout: "", stderr: stderr}} ->
          [node_syntax_error(stderr)]

        {:ok, %{stdout: stdout}} ->
          {:ok, %{"error" => error}} = JSON.decode(stdout)
          [syntax_error(error["line"], error["message"])]

        {:error, error} ->
          [syntax_error(nil, error.message)]
      end
    after
      Session.close(session)
    end
  end

  defp syntax_error(line, message), do: %{kind: :syntax, message: message, line: line}

  defp node_syntax_error(stderr) do
    [first | _] = String.split(stderr, "\n")
    syntax_error(stack_line(stderr), String.replace_prefix(first, "Uncaught SyntaxError: ", ""))
  end

  defp meta_line(meta) when is_list(meta), do: meta[:line]
  defp meta_line(line) when is_integer(line), do: line

  defp message_text({prefix, suffix}), do: "#{prefix}#{suffix}"
  defp message_text(message), do: message

  defp session_options(language, code, config) do
    files =
      case language do
        :javascript -> [{"/code/main.js", code}]
        :typescript -> [{"/code/main.ts", code}]
        :python -> [{"/code/main.py", code}, {"/code/.run.py", @python_runner}]
        :monty -> [{"/code/main.py", [code, monty_driver(config.input)]}]
        :bash -> []
      end

    [
      isolation: :process,
      files: files ++ config.files,
      env: config.env,
      mounts: config.mounts,
      tools: config.tools,
      limits: [
        {:timeout_ms, config.timeout_ms},
        {Map.fetch!(@memory_limits, language), config.memory_mb * 1024 * 1024}
      ]
    ]
    |> Keyword.merge(runtime(language))
    |> Keyword.merge(network(config))
  end

  defp network(%{allow: allow} = config) do
    if :fetch in allow,
      do: [allow_net: config.allow_net, block_private_ips: config.block_private_ips],
      else: []
  end

  defp runtime(language) when language in [:javascript, :typescript], do: [javascript: true]
  defp runtime(:python), do: [python: :cpython]
  defp runtime(:monty), do: [python: true]
  defp runtime(:bash), do: []

  # Monty has no io or traceback: its driver sits below the code (whose
  # lines keep their numbers) and leaves the value where the worker reads
  # it; a raise is read from its traceback. A JSON string literal is a
  # Python one too.
  defp monty_driver(input) do
    literal = input |> JSON.encode!() |> JSON.encode!()

    "\n\nimport json as __ex_bashkit_json\nfrom pathlib import Path as __ex_bashkit_path\n" <>
      "__ex_bashkit_value = __ex_bashkit_json.dumps(execute(__ex_bashkit_json.loads(#{literal})))\n" <>
      "_ = __ex_bashkit_path(\"/code/.outcome.json\").write_text(" <>
      "__ex_bashkit_json.dumps({\"value\": __ex_bashkit_value}))\n"
  end

  defp answer({:error, %Error{} = error}, _language), do: {:error, sandbox_error(error)}

  defp answer({:ok, {%{truncated: true} = result, _outcome}}, _language),
    do: truncated(result)

  defp answer({:ok, %{truncated: true} = result}, _language), do: truncated(result)

  defp answer({:ok, {result, {:value, json}}}, language) do
    case JSON.decode(json) do
      {:ok, value} ->
        {:ok, %{output: value, stdout: result.stdout, stderr: result.stderr}}

      {:error, _} ->
        failure(:error, "the #{language} runtime answered a value that is not JSON", result)
    end
  end

  defp answer({:ok, {result, {:error, %{kind: :timeout, message: message}}}}, language),
    do: failure(:timeout, "the #{language} runtime failed: #{message}", result)

  defp answer({:ok, {result, {:error, %{kind: :denied, message: message, line: line}}}}, _),
    do:
      {:error,
       %Error{
         reason: :denied,
         message: message,
         line: line,
         stdout: result.stdout,
         stderr: result.stderr
       }}

  defp answer({:ok, {result, {:error, error}}}, _language), do: {:error, thrown(error, result)}

  defp answer({:ok, {result, nil}}, language),
    do: failure(:error, "the #{language} runtime failed: #{result.stderr}", result)

  defp answer({:ok, result}, :bash) do
    if result.exit_code == 0 do
      output =
        case JSON.decode(result.stdout) do
          {:ok, value} -> value
          {:error, _} -> result.stdout
        end

      {:ok, %{output: output, stdout: result.stdout, stderr: result.stderr}}
    else
      failure(:exception, "the script exited with status #{result.exit_code}", result)
    end
  end

  defp truncated(result),
    do: failure(:limit, "the code printed more than the output limit", result)

  # The engine's error, in the library's words (its kind is one of
  # `ExBashkit.Error`'s reasons), its line in the code when it has one.
  defp thrown(%{kind: kind, name: name, message: message, line: line}, result) do
    text = if message == "", do: name, else: "#{name}: #{message}"
    text = if line, do: "#{text} (line #{line})", else: text
    %Error{reason: kind, message: text, line: line, stdout: result.stdout, stderr: result.stderr}
  end

  defp stack_line(stack) when is_binary(stack) do
    case Regex.run(~r{/code/main\.[jt]s:(\d+)}, stack) do
      [_, line] -> String.to_integer(line)
      nil -> nil
    end
  end

  defp stack_line(_none), do: nil

  defp sandbox_error(%Error{reason: :limit, limit: limit} = error)
       when limit in [
              :max_javascript_memory_bytes,
              :max_python_memory_bytes,
              :max_script_memory_bytes
            ],
       do: %{error | reason: :memory}

  defp sandbox_error(%Error{reason: :parse_error} = error), do: %{error | reason: :syntax}
  defp sandbox_error(error), do: error

  defp printed(stdout), do: %{stdout: stdout, stderr: ""}

  defp failure(reason, message, result),
    do:
      {:error,
       %Error{reason: reason, message: message, stdout: result.stdout, stderr: result.stderr}}
end
