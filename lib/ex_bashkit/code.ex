defmodule ExBashkit.Code do
  @moduledoc """
  Runs a program an agent wrote, once, in a sandbox of its own, and
  answers its value as data: the "run this code" tool agent frameworks
  give a model.

  The code defines `execute(input)` in JavaScript (it may be `async`) or
  `def execute(input)` in Python; a bash script reads the input as JSON on
  stdin and its output is what it prints (decoded when that is JSON).
  `input` is any JSON-encodable term; the value comes back decoded.

      iex> {:ok, %{output: output}} =
      ...>   ExBashkit.Code.run("function execute(input) { return input.a + input.b; }",
      ...>     language: :javascript, input: %{a: 2, b: 3})
      iex> output
      5

  Each run gets a fresh worker process (`isolation: :process`: a fork of
  a warm zygote, not a VM boot) that nothing else has touched and that
  goes away with the run, with the run's own memory cap and deadline. A
  JavaScript run sees `console`, the ECMAScript built-ins and nothing of
  the machine: no `require`, no `process`, no files, no network, unless
  `:allow` grants them one by one:

    * `:read_files` — a global `fs` that reads (`readFileSync`,
      `readFile`, `existsSync`, `readdirSync`, `statSync`) the `:files`
      and `:mounts` of the run, at most 1 MiB a file; never writes.
    * `:crypto` — a global `crypto`: `createHash`, `createHmac`
      (sha256, sha384, sha512, sha1, md5) and `randomUUID`.
    * `:fetch` — a global `fetch`, to the URLs `:allow_net` allows
      (through the host, which keeps any credentials to itself).
    * `:commands` — a global `child_process` (`execSync`, `spawnSync`,
      `execFileSync`, `exec`, `execFile`, `spawn`) whose commands run in
      the run's own shell, on its files, within its deadline.

  Python (CPython) and bash runs have no network without `:fetch`
  either; their files are the run's `:files` and `:mounts`, and
  `validate/2` checks their grants in the source.

  Before anything runs, `run/2` scans the code as `validate/2` does for
  APIs it refuses (`eval`, `new Function`, `require`, `import`,
  `process`, `fs` writes, and what `:allow` does not grant); a finding is
  an `{:error, %ExBashkit.Error{reason: :denied}}`. JavaScript is scanned
  in its syntax tree (the oxc parser, in the worker that would run it),
  so a name in a comment or a string is not a use and one inside a
  template's `${…}` is. The sandbox, not the scan, is the boundary: code
  that hides a use from the scan still finds nothing there to use.

  `language: :elixir` evaluates Elixir on a fresh peer node
  (`ExBashkit.Peer`) with `input` bound. That is not a sandbox: the code
  has the host user's full access. It runs only with `trusted: true`.

  ## Results

    * `{:ok, %{output: term, stdout: binary, stderr: binary, duration_ms: integer}}`
    * `{:error, %ExBashkit.Error{}}` with `:reason` one of `:syntax` (the
      code does not parse), `:exception` (it threw, or a bash script
      exited non-zero), `:timeout` (`:timeout_ms`), `:memory`
      (`:memory_mb`), `:limit` (another sandbox limit, such as the output
      caps), `:denied` (the scan refused it), or `:error`; its `:message`
      is the language's own (`"TypeError: x is not a function (line 3)"`),
      `:line` the line of the code where that applies, `:stdout` and
      `:stderr` what the code printed first.

  ## Options

  #{ExBashkit.Options.docs(ExBashkit.Code.Config.schema())}
  """

  alias ExBashkit.Code.{Config, Languages, Scan}
  alias ExBashkit.Error

  @type language :: :javascript | :typescript | :python | :monty | :bash | :elixir

  @type result ::
          {:ok,
           %{output: term(), stdout: binary(), stderr: binary(), duration_ms: non_neg_integer()}}
          | {:error, Error.t()}

  @doc """
  Runs `code` once in a fresh sandbox; see the module documentation.

      iex> ExBashkit.Code.run("async function execute({n}) { console.log('hi'); return [n, n * 2]; }",
      ...>   language: :javascript, input: %{n: 21})
      ...> |> then(fn {:ok, run} -> Map.delete(run, :duration_ms) end)
      %{output: [21, 42], stdout: "hi\\n", stderr: ""}

      iex> {:ok, %{output: output}} =
      ...>   ExBashkit.Code.run("def execute(input):\\n    return {'sum': sum(input)}\\n",
      ...>     language: :python, input: [1, 2, 3])
      iex> output
      %{"sum" => 6}

      iex> {:ok, %{output: output}} =
      ...>   ExBashkit.Code.run(~S(jq '{count: length}'), language: :bash, input: ["a", "b"])
      iex> output
      %{"count" => 2}

      iex> {:ok, %{output: output}} =
      ...>   ExBashkit.Code.run("Enum.map(input, &(&1 * 2))",
      ...>     language: :elixir, input: [1, 2], trusted: true)
      iex> output
      [2, 4]

      iex> {:error, error} =
      ...>   ExBashkit.Code.run("function execute(input) {\\n  return input.missing.field;\\n}",
      ...>     language: :javascript)
      iex> {error.reason, error.line}
      {:exception, 2}
  """
  @spec run(String.t(), keyword()) :: result()
  def run(code, opts \\ []) when is_binary(code) do
    config = Config.new!(opts, "ExBashkit.Code.run/2")
    started = System.monotonic_time()

    with :ok <- scan(code, config) do
      case Languages.run(config.language, code, config) do
        {:ok, run} ->
          elapsed = System.monotonic_time() - started

          {:ok,
           Map.put(run, :duration_ms, System.convert_time_unit(elapsed, :native, :millisecond))}

        {:error, _} = error ->
          error
      end
    end
  end

  # JavaScript is scanned by the worker that runs it (in its syntax tree).
  defp scan(_code, %{language: language}) when language in [:javascript, :typescript], do: :ok

  defp scan(code, config) do
    case Scan.forbidden(config.language, code, config.allow) do
      [] ->
        :ok

      found ->
        message = Enum.map_join(found, "; ", &describe/1)
        {:error, %Error{reason: :denied, message: message, line: hd(found).line}}
    end
  end

  defp describe(%{message: message, line: nil}), do: message
  defp describe(%{message: message, line: line}), do: "#{message} (line #{line})"

  @doc """
  Checks `code` without running it: its syntax (parsed in a fresh worker,
  nothing of it executed) and the uses of APIs `run/2` would refuse with
  the same `:allow`. Answers `:ok` or `{:error, violations}`, each a map
  with `:kind` (`:syntax` or `:forbidden`), `:message` and `:line`.

      iex> ExBashkit.Code.validate("function execute(input) { return input; }", language: :javascript)
      :ok
      iex> ExBashkit.Code.validate(~S|function execute() { return eval("1") }|, language: :javascript)
      {:error, [%{kind: :forbidden, message: "eval() is forbidden", line: 1}]}
      iex> ExBashkit.Code.validate("def execute(input):\\n    return (\\n", language: :python)
      {:error, [%{kind: :syntax, message: "'(' was never closed", line: 2}]}

  It takes the options of `run/2`; those about running are ignored.
  """
  @spec validate(String.t(), keyword()) ::
          :ok
          | {:error,
             [%{kind: :syntax | :forbidden, message: String.t(), line: pos_integer() | nil}]}
  def validate(code, opts \\ []) when is_binary(code) do
    config = Config.new!(opts, "ExBashkit.Code.validate/2", :validate)

    case Languages.check(config.language, code, config.allow) do
      [] -> :ok
      found -> {:error, found}
    end
  end
end
