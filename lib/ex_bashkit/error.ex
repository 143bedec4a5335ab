defmodule ExBashkit.Error do
  @moduledoc """
  Why a script ended without a result, as data.

  `ExBashkit.Session.exec/3` and `ExBashkit.exec/2` return
  `{:error, %ExBashkit.Error{}}` instead of `{:error, message}` when given
  `errors: :struct`; a streaming listener (`:stream_to`) always gets one in
  its final message. `exec/2` and `exec/1` keep returning the message, a
  binary, which is this struct's `:message`.

    * `:reason` — `:timeout` (the script's `:timeout_ms`), `:cancelled`
      (`ExBashkit.Session.cancel/1`), `:limit` (a sandbox limit: `:limit`
      names its key), `:parse_error`, `:busy` (the session was still running
      another script when the call's time was up), `:denied` (the session's
      or the call's `:approve` function refused the script, which ran
      nothing; or, with `:command_policy_abort`, the command policy
      stopped it at a command it denies), `:protocol` (an `isolation: :process` session's worker sent
      something no honest worker sends, and was killed: see
      `guides/isolation.md`); for `ExBashkit.Code.run/2` also `:syntax` (the
      code does not parse in its language), `:exception` (it threw, whatever
      it threw) and `:memory` (its engine's memory cap ran out); or `:error`
      (anything else: a runtime failure, a bad `:cwd`, a caller that exited).
      These are the library's one list of reasons: the NIF, a worker and
      every language engine answer in these words.
    * `:limit` — for `:limit` and `:timeout`, the key of the limit that
      tripped, as in `guides/limits.md` (`:max_commands`, `:timeout_ms`,
      …; `:memory_budget_bytes` is the VM-wide config key); else `nil`.
    * `:message` — the message `exec/2` would have returned.
    * `:line` — for `ExBashkit.Code.run/2`'s `:syntax`, `:exception` and
      `:denied`, the line of the code it is about, when known; else `nil`.
    * `:stdout`, `:stderr` — what the script printed before it ended,
      within the output caps (empty for a script that never started).

  It is an exception, so `raise error` works where failing is the right
  answer:

      iex> session = ExBashkit.Session.new(limits: [max_loop_iterations: 2])
      iex> {:error, error} =
      ...>   ExBashkit.Session.exec(session, "echo started; for i in 1 2 3; do echo $i; done",
      ...>     errors: :struct
      ...>   )
      iex> {error.reason, error.limit, error.stdout}
      {:limit, :max_loop_iterations, "started\\n1\\n2\\n"}
  """

  defexception [:reason, :limit, :message, :line, stdout: "", stderr: ""]

  @type reason ::
          :timeout
          | :cancelled
          | :limit
          | :parse_error
          | :busy
          | :denied
          | :protocol
          | :error
          | :syntax
          | :exception
          | :memory

  @type t :: %__MODULE__{
          reason: reason(),
          limit: atom() | nil,
          message: String.t(),
          line: pos_integer() | nil,
          stdout: binary(),
          stderr: binary()
        }

  @doc false
  # From what a script's job answers: `{reason, limit, message, stdout,
  # stderr}`, or a message for a call refused before it started.
  @spec from_job({reason(), atom() | nil, String.t(), binary(), binary()} | String.t()) :: t()
  def from_job({reason, limit, message, stdout, stderr}),
    do: %__MODULE__{
      reason: reason,
      limit: limit,
      message: message,
      stdout: stdout,
      stderr: stderr
    }

  def from_job(message) when is_binary(message), do: %__MODULE__{reason: :error, message: message}
end
