defmodule ExBashkit.Code.Languages do
  @moduledoc false
  # One run of ExBashkit.Code.run/2 per language: a fresh sandbox (a
  # worker process forked for the run, closed after it), the code and the
  # input in, one JSON envelope out. JavaScript's driver is the worker's
  # `node --execute` (crates/worker/src/js.rs), Python's is runner.py.

  alias ExBashkit.{Error, JSON, Session}

  @python_runner File.read!(Path.join(__DIR__, "runner.py"))
  @external_resource Path.join(__DIR__, "runner.py")

  @doc false
  def python_runner, do: @python_runner

  @memory_limits %{
    javascript: :max_javascript_memory_bytes,
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
        failure(:timeout, "the code ran past its #{config.timeout_ms} ms", output)

      {:error, :noconnection, %{output: output}} ->
        failure(:error, "the peer node running the code went away", output)

      {:error, {kind, reason, stacktrace}, %{output: output}} ->
        failure(:exception, Exception.format_banner(kind, reason, stacktrace), output)
    end
  end

  def run(language, code, config) do
    # Python that calls tools runs on Monty, the Python that can call out.
    language = if language == :python and config.tools != [], do: :monty, else: language
    session = Session.new(session_options(language, code, config))

    try do
      session
      |> Session.exec(command(language, code, config), stdin: stdin(config), errors: :struct)
      |> answer(language)
    after
      Session.close(session)
    end
  end

  @doc "The syntax errors of `code`, parsed in a fresh worker and not run."
  def syntax(:elixir, code) do
    case Code.string_to_quoted(code) do
      {:ok, _} ->
        []

      {:error, {meta, message, token}} ->
        [syntax_error(meta_line(meta), "#{message_text(message)}#{token}")]
    end
  end

  def syntax(:bash, code) do
    case ExBashkit.Approval.analyze(code) do
      {:ok, _} -> []
      {:error, message} -> [syntax_error(nil, message)]
    end
  end

  def syntax(language, code) do
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
        :javascript -> "node --check /code/main.js"
        :python -> "python3 /code/.run.py --check"
      end

    try do
      case Session.exec(session, check, errors: :struct) do
        {:ok, %{exit_code: 0, stdout: ""}} ->
          []

        {:ok, %{stdout: "", stderr: stderr}} ->
          [first | _] = String.split(stderr, "\n")

          [
            syntax_error(
              stack_line(stderr),
              String.replace_prefix(first, "Uncaught SyntaxError: ", "")
            )
          ]

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

  defp meta_line(meta) when is_list(meta), do: meta[:line]
  defp meta_line(line) when is_integer(line), do: line

  defp message_text({prefix, suffix}), do: "#{prefix}#{suffix}"
  defp message_text(message), do: message

  defp session_options(language, code, config) do
    files =
      case language do
        :javascript -> [{"/code/main.js", code}]
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

  defp runtime(:javascript), do: [javascript: true]
  defp runtime(:python), do: [python: :cpython]
  defp runtime(:monty), do: [python: true]
  defp runtime(:bash), do: []

  defp command(:javascript, _code, config),
    do: "node --execute --allow=#{Enum.join(config.allow, ",")} /code/main.js"

  defp command(:python, _code, _config), do: "python3 /code/.run.py"
  defp command(:monty, _code, _config), do: "python3 /code/main.py"
  defp command(:bash, code, _config), do: code

  # Monty has no io or traceback: the value is printed after a marker,
  # below the code (its lines keep their numbers); a JSON string literal
  # is a Python one too.
  @marker "\x1eEX_BASHKIT_RESULT "
  defp monty_driver(input) do
    literal = input |> JSON.encode!() |> JSON.encode!()

    "\n\nimport json as __ex_bashkit_json\n" <>
      "print(#{JSON.encode!(@marker)} + __ex_bashkit_json.dumps(execute(__ex_bashkit_json.loads(#{literal}))))\n"
  end

  defp stdin(config), do: JSON.encode!(config.input)

  defp answer({:error, %Error{} = error}, _language), do: {:error, sandbox_error(error)}

  defp answer({:ok, %{truncated: true} = result}, _language),
    do:
      failure(:limit, "the code printed more than the output limit", result.stdout, result.stderr)

  defp answer({:ok, result}, :bash) do
    if result.exit_code == 0 do
      output =
        case JSON.decode(result.stdout) do
          {:ok, value} -> value
          {:error, _} -> result.stdout
        end

      {:ok, %{output: output, stdout: result.stdout, stderr: result.stderr}}
    else
      message = "the script exited with status #{result.exit_code}"
      failure(:exception, message, result.stdout, result.stderr)
    end
  end

  defp answer({:ok, %{exit_code: 0} = result}, :monty) do
    with [stdout, json] <- :binary.split(result.stdout, @marker),
         {:ok, value} <- JSON.decode(json) do
      {:ok, %{output: value, stdout: stdout, stderr: result.stderr}}
    else
      _ ->
        failure(
          :error,
          "the Python runtime failed: #{result.stderr}",
          result.stdout,
          result.stderr
        )
    end
  end

  # A traceback: its last line is the exception, its last frame in the
  # code the line.
  defp answer({:ok, result}, :monty) do
    last = result.stderr |> String.trim_trailing() |> String.split("\n") |> List.last("")

    lines =
      for [_, line] <- Regex.scan(~r{File "/code/main\.py", line (\d+)}, result.stderr),
          do: String.to_integer(line)

    {name, message} =
      case String.split(last, ": ", parts: 2) do
        [name, message] -> {name, message}
        [name] -> {name, ""}
      end

    if result.stderr =~ "timed out" and lines == [] do
      failure(
        :timeout,
        "the Python runtime failed: #{result.stderr}",
        result.stdout,
        result.stderr
      )
    else
      error = %{"name" => name, "message" => message, "line" => List.last(lines)}
      {:error, thrown(error, %{"stdout" => result.stdout, "stderr" => result.stderr})}
    end
  end

  defp answer({:ok, result}, language) do
    case JSON.decode(result.stdout) do
      {:ok, %{"result" => value} = envelope} ->
        {:ok, %{output: value, stdout: envelope["stdout"], stderr: envelope["stderr"]}}

      {:ok, %{"error" => error} = envelope} ->
        {:error, thrown(error, envelope)}

      _ ->
        # CPython stops itself at the run's deadline, just before the
        # session would.
        reason = if result.stderr =~ "timed out", do: :timeout, else: :error
        failure(reason, "the #{language} runtime failed: #{result.stderr}", "", result.stderr)
    end
  end

  # The language's exception, its line in the code when it has one.
  defp thrown(%{"name" => name, "message" => message} = error, envelope) do
    line = error["line"] || stack_line(error["stack"])

    reason =
      cond do
        name == "SyntaxError" -> :syntax
        name == "MemoryError" or message =~ "out of memory" -> :memory
        true -> :exception
      end

    text = if message == "", do: name, else: "#{name}: #{message}"
    text = if line, do: "#{text} (line #{line})", else: text

    %Error{
      reason: reason,
      message: text,
      line: line,
      stdout: envelope["stdout"],
      stderr: envelope["stderr"]
    }
  end

  defp stack_line(stack) when is_binary(stack) do
    case Regex.run(~r{/code/main\.js:(\d+)}, stack) do
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

  defp failure(reason, message, stdout, stderr \\ ""),
    do: {:error, %Error{reason: reason, message: message, stdout: stdout, stderr: stderr}}
end
