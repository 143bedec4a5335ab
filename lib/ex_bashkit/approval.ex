defmodule ExBashkit.Approval do
  @moduledoc false
  # `:approve`: a function that sees what a script would run, found by
  # static analysis (native/ex_bashkit/src/analysis.rs), and decides
  # before anything runs. It runs in a process of its own, bounded by the
  # session's `:builtin_timeout_ms`; one that raises, exits, answers
  # anything but `:ok` or `{:deny, reason}`, or takes too long denies.

  alias ExBashkit.Approval.Wrapped
  alias ExBashkit.Error

  @docs """
  ## Approval

  With `:approve` (on `new/1`, or on a call, which wins; `approve: nil`
  turns the session's off for a call), a function sees what the script
  would run before anything runs — `ExBashkit.analyze/1`'s analysis plus
  `:script`, and `:error` for a script that does not parse — and answers
  `:ok` or `{:deny, reason}`. A denied script runs nothing, not even the
  lines before the command the policy refused; the call answers
  `{:error, "denied: " <> reason}` (reason `:denied` as a struct). The
  function runs in a process of its own, with the caller in `$callers`; one
  that raises, exits, answers anything else, or takes longer than the
  session's `:builtin_timeout_ms` denies, saying why. Analysis cannot see
  through `eval`, `source` or a command name built at run time: those set
  `:opaque`, which a policy can refuse. See "Approval" in `guides/agent_tools.md`.

      iex> no_rm = fn %{commands: commands} ->
      ...>   if Enum.any?(commands, &(&1.name == "rm")), do: {:deny, "rm is not allowed"}, else: :ok
      ...> end
      iex> session = ExBashkit.Session.new(approve: no_rm)
      iex> ExBashkit.Session.exec(session, "echo kept > /f; rm /f")
      {:error, "denied: rm is not allowed"}
      iex> {:ok, result} = ExBashkit.Session.exec(session, "cat /f 2>&1")
      iex> result.stdout
      "cat: /f: No such file or directory\\n"
  """

  @doc false
  # The "Approval" section of ExBashkit.Session.exec/3's documentation.
  @spec docs() :: String.t()
  def docs, do: @docs

  @typedoc "What `ExBashkit.analyze/1` finds, and an `:approve` function gets."
  @type analysis :: ExBashkit.analysis()

  @contexts %{
    "direct" => :direct,
    "substitution" => :substitution,
    "function_body" => :function_body
  }
  @modes %{"read" => :read, "write" => :write, "append" => :append}

  @doc "The analysis of `script`, or `{:error, why}` when it does not parse."
  @spec analyze(binary()) :: {:ok, analysis()} | {:error, String.t()}
  def analyze(script) do
    with {:ok, found} <- base(script) do
      wrapped = Wrapped.expand(found.commands, &base/1)
      dynamic = found.dynamic_commands or wrapped.dynamic
      reentry = found.reentry or wrapped.reentry

      found = %{
        found
        | commands: found.commands ++ wrapped.commands,
          wrappers: Enum.uniq(found.wrappers ++ wrapped.wrappers),
          dynamic_commands: dynamic,
          reentry: reentry
      }

      {:ok, Map.put(found, :opaque, dynamic or reentry or found.truncated)}
    end
  end

  # bashkit's analysis, in our terms; the commands inside others are
  # Wrapped's.
  defp base(script) do
    with {:ok, found} <- analysis(script) do
      commands =
        for command <- found.commands,
            do:
              Map.merge(command, %{context: Map.fetch!(@contexts, command.context), wrapper: nil})

      redirects =
        for redirect <- found.redirects, do: %{redirect | mode: Map.fetch!(@modes, redirect.mode)}

      {:ok, %{found | commands: commands, redirects: redirects}}
    end
  end

  # The analysis thread answers by message (native/ex_bashkit/src/analysis.rs);
  # its parse is bounded, so the wait is a safety net, not a deadline.
  defp analysis(script) do
    tag = make_ref()

    with :ok <- ExBashkit.Native.script_analysis(script, self(), tag) do
      receive do
        {^tag, answer} -> answer
      after
        60_000 -> {:error, "internal error: the script's analysis did not answer"}
      end
    end
  end

  @doc "Checks an `:approve` value: `nil` or a 1-arity function."
  @spec approve!(term()) :: (map() -> term()) | nil
  def approve!(nil), do: nil
  def approve!(fun) when is_function(fun, 1), do: fun

  def approve!(other),
    do:
      raise(
        ArgumentError,
        ":approve must be a 1-arity function or nil, got: #{inspect(other)}"
      )

  @doc """
  `:ok` when `approve` (or no function) lets `script` run, else the denial
  as an `%ExBashkit.Error{reason: :denied}`.
  """
  @spec check((map() -> term()) | nil, binary(), pos_integer()) :: :ok | {:error, Error.t()}
  def check(nil, _script, _timeout_ms), do: :ok

  def check(approve, script, timeout_ms) do
    request =
      case analyze(script) do
        {:ok, analysis} ->
          Map.merge(analysis, %{script: script, error: nil})

        # A script that does not parse runs nothing, but is no script that
        # runs nothing: the function sees the error and an opaque script.
        {:error, why} ->
          %{
            script: script,
            error: why,
            commands: [],
            redirects: [],
            functions: [],
            wrappers: [],
            dynamic_commands: false,
            substitutions: false,
            reentry: false,
            truncated: false,
            opaque: true
          }
      end

    case decide(approve, request, timeout_ms) do
      :ok -> :ok
      {:deny, reason} -> {:error, %Error{reason: :denied, message: "denied: #{reason}"}}
    end
  end

  # The function runs under ExBashkit.Callbacks.Supervisor, with the caller
  # in `$callers`; a brutal kill at its deadline is no crash to report.
  defp decide(approve, request, timeout_ms) do
    caller = self()
    ref = make_ref()
    supervisor = ExBashkit.Callbacks.Supervisor.for_caller(caller)

    {:ok, pid} =
      Task.Supervisor.start_child(
        supervisor,
        fn ->
          answer =
            try do
              approve.(request)
            catch
              kind, reason -> {:failed, Exception.format_banner(kind, reason, __STACKTRACE__)}
            end

          send(caller, {ref, answer})
        end,
        shutdown: :brutal_kill
      )

    monitor = Process.monitor(pid)

    receive do
      {^ref, answer} ->
        Process.demonitor(monitor, [:flush])
        verdict(answer)

      {:DOWN, ^monitor, :process, ^pid, reason} ->
        {:deny, "the approve function failed: #{Exception.format_exit(reason)}"}
    after
      timeout_ms ->
        Task.Supervisor.terminate_child(supervisor, pid)
        Process.demonitor(monitor, [:flush])
        # An answer sent as the deadline passed must not linger.
        receive do
          {^ref, _} -> :ok
        after
          0 -> :ok
        end

        {:deny,
         "the approve function did not answer within #{timeout_ms} ms (:builtin_timeout_ms)"}
    end
  end

  defp verdict(:ok), do: :ok
  defp verdict({:failed, why}), do: {:deny, "the approve function failed: #{why}"}
  defp verdict({:deny, reason}) when is_binary(reason), do: {:deny, reason}
  defp verdict({:deny, reason}), do: {:deny, inspect(reason)}

  defp verdict(other),
    do: {:deny, "the approve function answered #{inspect(other)}, not :ok or {:deny, reason}"}
end
