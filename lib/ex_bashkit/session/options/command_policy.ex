defmodule ExBashkit.Session.Options.CommandPolicy do
  @moduledoc false
  # `:command_policy` and `:command_policy_abort`, of `new/1` and of one
  # `exec/3`: checked here, enforced in Rust each time a command is about
  # to run (native/ex_bashkit/crates/core/src/policy.rs), in the VM and in
  # worker processes alike. Both decode `{:deny | :allow, names, abort}`.

  import ExBashkit.Options, only: [text?: 1]

  @typedoc """
  A policy as given: the commands denied, the only ones allowed, or a
  function asked before each command.
  """
  @type t :: {:deny, [String.t()]} | {:allow, [String.t()]} | (map() -> term())

  @doc "The docs of `:command_policy`."
  def doc do
    "`{:deny, names}` (those commands never run) or `{:allow, names}` (only those " <>
      "run), checked each time a command is about to run, however the script reaches it: " <>
      "directly, through `env`, `command`, `timeout`, `xargs`, `find -exec`, `eval`, a " <>
      "trap, a function or a script file. A denied command fails with exit status 1 and " <>
      "`NAME: cancelled by before_tool hook` on stderr (see \"Command policy\" in " <>
      "`guides/agent_tools.md`). A session without one checks nothing (and pays " <>
      "nothing); with one, each call may bring its own. With `isolation: :process`, " <>
      "a 1-arity function instead decides each command: it gets `%{name: name, args: " <>
      "args}` and answers `:ok` or `{:deny, reason}` (anything else, a raise, or no " <>
      "answer within `:builtin_timeout_ms` denies), at the cost of a round trip to " <>
      "Elixir per command."
  end

  @doc "The docs of `:command_policy_abort`."
  def abort_doc do
    "`true` ends the whole script at the first denied command, with `{:error, _}` " <>
      "(reason `:denied`), instead of failing that command and going on."
  end

  @doc false
  def policy!(nil), do: nil
  def policy!(fun) when is_function(fun, 1), do: fun

  def policy!({kind, names}) when kind in [:deny, :allow] and is_list(names) do
    if List.improper?(names), do: bad!({kind, names})
    {kind, names |> Enum.map(&name!(&1, {kind, names})) |> Enum.uniq()}
  end

  def policy!(other), do: bad!(other)

  defp name!(name, policy) when is_atom(name) and name not in [nil, true, false],
    do: name!(Atom.to_string(name), policy)

  defp name!(name, policy) when is_binary(name) do
    if text?(name) and name != "", do: name, else: bad!(policy)
  end

  defp name!(_name, policy), do: bad!(policy)

  defp bad!(policy) do
    raise ArgumentError,
          ":command_policy must be {:deny, names}, {:allow, names} or a 1-arity function, " <>
            "names a list of non-empty strings or atoms (UTF-8, no NUL), got: " <>
            inspect(policy)
  end

  @doc "What Rust decodes: `nil`, or `{:deny | :allow | :ask, names, abort}`."
  @spec native(t() | nil, boolean()) :: {:deny | :allow | :ask, [String.t()], boolean()} | nil
  def native(nil, _abort), do: nil
  def native(fun, abort) when is_function(fun, 1), do: {:ask, [], abort}
  def native({kind, names}, abort), do: {kind, names, abort}

  @doc "The policy's function, if it is one (the callback server calls it)."
  def function(fun) when is_function(fun, 1), do: fun
  def function(_policy), do: nil

  @doc """
  Refuses a function where its check would block a thread other sessions
  share: the hook that asks it is synchronous, so it runs only in a
  worker process, whose interpreter thread is its session's own.
  """
  def where!(fun, isolation) when is_function(fun, 1) and isolation != :process do
    raise ArgumentError,
          "a function :command_policy needs isolation: :process: it is asked before each " <>
            "command while the interpreter's thread waits, and in the VM that thread " <>
            "serves other sessions too (a name list, {:deny, names} or {:allow, names}, " <>
            "is checked in Rust, in either mode)"
  end

  def where!(_policy, _isolation), do: :ok

  @doc "A call's own policy: a name list (a function is the session's only)."
  def listed!(fun) when is_function(fun, 1) do
    raise ArgumentError,
          "a function :command_policy is given to ExBashkit.Session.new/1 only; a call " <>
            "may bring {:deny, names} or {:allow, names}"
  end

  def listed!(policy), do: policy
end
