defmodule ExBashkit.Session.ExecOptions do
  @moduledoc false
  # The per-call options of `ExBashkit.Session.exec/3`: their schema, and
  # the struct the NIF decodes (native/ex_bashkit/src/exec_options.rs).
  # `:into`, `:stream_to` and `:errors` are the caller's business and stay
  # in Elixir; the NIF sees the processes that follow the output.

  alias ExBashkit.Options
  alias ExBashkit.Session.Options.CommandPolicy

  @schema [
    timeout_ms: [
      type: {:or, [:pos_integer, {:in, [nil]}]},
      default: nil,
      doc:
        "milliseconds this call may run, at most the session's own `:timeout_ms` " <>
          "(a larger value is that limit). The script stops there like at the " <>
          "session's limit: `{:error, _}` with reason `:timeout`."
    ],
    stdin: [
      type: {:custom, &__MODULE__.stdin!/1},
      default: nil,
      doc:
        "iodata the script's standard input reads (`cat`, `read`, `wc` with no file), " <>
          "unless the script redirects or pipes into the command."
    ],
    env: [
      type: :env,
      default: [],
      doc:
        "variables exported for this call only (a map or keyword list); afterwards " <>
          "each is back as it was, whatever the script did to it."
    ],
    cwd: [
      type: {:custom, &__MODULE__.cwd!/1},
      default: nil,
      doc:
        "the working directory for this call only, relative to the session's " <>
          "(it must exist); afterwards the session is back where it was."
    ],
    args: [
      type: {:custom, &__MODULE__.args!/1},
      default: nil,
      doc: "the positional parameters `$1`, `$2`, … (`$@`, `$#`) for this call."
    ],
    arg0: [
      type: {:custom, &__MODULE__.arg0!/1},
      default: nil,
      doc:
        "`$0` for this call (a script's own name, as `bash script.sh` gives it); " <>
          "without it `$0` is `bash`."
    ],
    into: [
      type: {:custom, &__MODULE__.into!/1},
      default: nil,
      doc:
        "a `Collectable` that stdout chunks go into as the script produces them " <>
          "(`IO.stream()`, `File.stream!/1`, `[]`, `\"\"`), as in `System.cmd/3`; " <>
          "the result's `:stdout` is then what collecting returned."
    ],
    stream_to: [
      type: {:custom, &__MODULE__.stream_to!/1},
      default: nil,
      doc:
        "a pid, or `{pid, tag}`, sent each chunk of output as " <>
          "`{:ex_bashkit, tag, {:stdout | :stderr, chunk}}` while the script runs, then " <>
          "`{:ex_bashkit, tag, {:exit, outcome}}` (`tag` is `nil` for a bare pid; " <>
          "`outcome` is `{:ok, %ExBashkit.Result{}}` or `{:error, %ExBashkit.Error{}}`)."
    ],
    command_policy: [
      type: {:custom, &CommandPolicy.policy!/1},
      default: nil,
      doc:
        "a `:command_policy` for this call only, in place of the session's (see " <>
          "`ExBashkit.Session.new/1`). The session must have been created with one " <>
          "(`{:deny, []}` denies nothing): only a policed session checks its commands."
    ],
    command_policy_abort: [
      type: {:in, [true, false]},
      default: false,
      doc: "`:command_policy_abort` for this call's own `:command_policy`."
    ],
    errors: [
      type: {:in, [:message, :struct]},
      default: :message,
      doc:
        "`:struct` returns `{:error, %ExBashkit.Error{}}` (why, which limit, and the " <>
          "output so far) instead of `{:error, message}`."
    ]
  ]

  # What the NIF decodes.
  defstruct [
    :timeout_ms,
    :stdin,
    :cwd,
    :args,
    :arg0,
    :credentials,
    :command_policy,
    env: [],
    stream_to: [],
    keep_output: false
  ]

  @typedoc "A validated call: the NIF's part and the caller's."
  @type call :: %{
          native: %__MODULE__{} | nil,
          timeout_ms: pos_integer(),
          into: Collectable.t() | nil,
          output_tag: reference() | nil,
          stream_to: {pid(), term()} | nil,
          errors: :message | :struct
        }

  @doc "The options as Markdown, for the docs."
  def docs, do: Options.docs(@schema)

  @doc """
  Checks `opts` for a call on a session whose limit is `timeout_ms`. No
  options at all leave the NIF's part `nil`: the fast path.
  """
  @spec validate!(keyword(), pos_integer(), String.t()) :: call()
  def validate!([], timeout_ms, _context),
    do: %{
      native: nil,
      timeout_ms: timeout_ms,
      into: nil,
      output_tag: nil,
      stream_to: nil,
      errors: :message
    }

  def validate!(opts, timeout_ms, context) do
    opts = Options.validate!(opts, @schema, context)
    output_tag = if opts.into != nil, do: make_ref()
    listeners = Enum.reject([opts.stream_to, output_tag && {self(), output_tag}], &is_nil/1)

    %{
      native: %__MODULE__{
        timeout_ms: opts.timeout_ms && min(opts.timeout_ms, timeout_ms),
        stdin: opts.stdin,
        env: opts.env,
        cwd: opts.cwd,
        args: opts.args,
        arg0: opts.arg0,
        stream_to: listeners,
        keep_output: opts.errors == :struct or opts.stream_to != nil,
        command_policy:
          opts.command_policy
          |> CommandPolicy.listed!()
          |> CommandPolicy.native(opts.command_policy_abort)
      },
      timeout_ms: min(opts.timeout_ms || timeout_ms, timeout_ms),
      into: opts.into,
      output_tag: output_tag,
      stream_to: opts.stream_to,
      errors: opts.errors
    }
  end

  @doc false
  def arg0!(nil), do: nil
  def arg0!(name) when is_binary(name) and name != "", do: name

  def arg0!(other),
    do: raise(ArgumentError, ":arg0 must be a non-empty string, got: #{inspect(other)}")

  @doc false
  def stdin!(nil), do: nil

  def stdin!(data) do
    IO.iodata_to_binary(data)
  rescue
    ArgumentError -> reraise ArgumentError, ":stdin must be iodata, got: #{inspect(data)}", []
  end

  @doc false
  def cwd!(nil), do: nil

  def cwd!(path) do
    if Options.text?(path) and path != "" do
      path
    else
      raise ArgumentError,
            ":cwd must be a non-empty string (UTF-8, no NUL), got: #{inspect(path)}"
    end
  end

  @doc false
  def args!(nil), do: nil

  def args!(args) when is_list(args) do
    if List.improper?(args), do: bad_args!(args)

    Enum.map(args, fn arg ->
      case Options.scalar(arg) do
        text when is_binary(text) -> if Options.text?(text), do: text, else: bad_args!(args)
        nil -> bad_args!(args)
      end
    end)
  end

  def args!(other), do: bad_args!(other)

  defp bad_args!(args) do
    raise ArgumentError,
          ":args must be a list of strings, atoms or numbers (UTF-8, no NUL), " <>
            "got: #{inspect(args)}"
  end

  @doc false
  def into!(nil), do: nil

  def into!(collectable) do
    if Collectable.impl_for(collectable) do
      collectable
    else
      raise ArgumentError, ":into must be a Collectable, got: #{inspect(collectable)}"
    end
  end

  @doc false
  def stream_to!(nil), do: nil
  def stream_to!(pid) when is_pid(pid) and node(pid) == node(), do: {pid, nil}
  def stream_to!({pid, _tag} = target) when is_pid(pid) and node(pid) == node(), do: target

  def stream_to!(other) do
    raise ArgumentError, ":stream_to must be a local pid or {pid, tag}, got: #{inspect(other)}"
  end

  @doc """
  `call` carrying fresh values of the session's injected headers (see
  `ExBashkit.Session.Options.Network.resolve_credentials/1`).
  """
  @spec with_credentials(call(), list()) :: call()
  def with_credentials(%{native: nil} = call, credentials),
    do: with_credentials(%{call | native: %__MODULE__{timeout_ms: nil}}, credentials)

  def with_credentials(%{native: native} = call, credentials),
    do: %{call | native: %{native | credentials: credentials}}
end
