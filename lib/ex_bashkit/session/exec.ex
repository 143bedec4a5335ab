defmodule ExBashkit.Session.Exec do
  @moduledoc false
  # The body of `ExBashkit.Session.exec/3` and `cancel/1`: the call's
  # options, approval, fresh secrets, callbacks served if the session has
  # any, then one interpreter call awaited by `ExBashkit.Caller`.

  alias ExBashkit.{Approval, Callbacks, Caller, Interpreter}
  alias ExBashkit.Session.{ExecOptions, Options}

  @spec run(ExBashkit.Session.t(), term(), String.t(), keyword()) ::
          {:ok, ExBashkit.Result.t()} | {:error, String.t() | ExBashkit.Error.t()}
  def run(session, resource, script, opts) do
    script = Caller.script!(script)
    {approve, opts} = approve(session, opts)
    call = ExecOptions.validate!(opts, timeout_ms(session), "ExBashkit.Session.exec/3")

    Caller.observe(session, script, call, fn ->
      with :ok <- Approval.check(approve, script, approve_timeout_ms(session)),
           {:ok, call} <- fresh_secrets(session, call) do
        case session.callbacks do
          nil -> start(resource, script, call, nil)
          callbacks -> Callbacks.serve(callbacks, resource, &start(resource, script, call, &1))
        end
      end
    end)
  end

  @doc """
  Runs `execute(input)` of the session's code (`ExBashkit.Code`): as
  `run/4`, with the engine's outcome beside the result.
  """
  @spec run_code(ExBashkit.Session.t(), term(), ExBashkit.Interpreter.Backend.run(), keyword()) ::
          {:ok, {ExBashkit.Result.t(), term()}} | {:error, ExBashkit.Error.t()}
  def run_code(session, resource, {_language, input, _allow} = run, opts) do
    call = ExecOptions.validate!(opts, timeout_ms(session), "ExBashkit.Code.run/2")

    Caller.observe(session, input, call, fn ->
      queue = &Interpreter.run_code(resource, run, self(), &1, &2, call.native)

      case session.callbacks do
        nil -> await(queue, call, nil)
        callbacks -> Callbacks.serve(callbacks, resource, &await(queue, call, &1))
      end
    end)
  end

  @spec cancel(term()) :: :ok | :idle
  def cancel(resource) do
    if Interpreter.cancel(resource), do: :ok, else: :idle
  end

  # Header functions of `:allow_net` give their values for this call.
  defp fresh_secrets(%{secrets: rules}, call) when is_list(rules) do
    case Options.Network.resolve_credentials(rules) do
      {:ok, credentials} -> {:ok, ExecOptions.with_credentials(call, credentials)}
      {:error, message} -> {:error, %ExBashkit.Error{reason: :error, message: message}}
    end
  end

  defp fresh_secrets(_session, call), do: {:ok, call}

  # The call's `:approve` wins over the session's; `approve: nil` turns it off.
  defp approve(%{approval: {fun, _}}, opts) when is_list(opts) do
    case Keyword.keyword?(opts) && Keyword.pop(opts, :approve, :session) do
      {:session, opts} -> {fun, opts}
      {approve, opts} -> {Approval.approve!(approve), opts}
      false -> {fun, opts}
    end
  end

  defp approve(_session, opts), do: {nil, opts}

  defp approve_timeout_ms(%{approval: {_, ms}}) when is_integer(ms) and ms > 0, do: ms
  defp approve_timeout_ms(_session), do: 30_000

  # A hand-built struct may hold anything here; the deadline must be sane.
  defp timeout_ms(%{timeout_ms: ms}) when is_integer(ms) and ms > 0, do: ms
  defp timeout_ms(_session), do: Options.Limits.default_timeout_ms()

  defp start(resource, script, call, forward),
    do: await(&Interpreter.exec(resource, script, self(), &1, &2, call.native), call, forward)

  # With callbacks, the script sends its first call here, to `forward`.
  defp await(queue, call, forward) do
    tag = make_ref()
    callbacks_to = if forward, do: self()
    queue.(tag, callbacks_to) |> Caller.await(tag, call, forward)
  end
end
