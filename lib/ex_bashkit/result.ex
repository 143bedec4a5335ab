defmodule ExBashkit.Result do
  @moduledoc """
  The outcome of a script: what it wrote and how it exited.

  `stdout` and `stderr` are the exact bytes the script produced — never
  re-encoded, so binary output round-trips. `exit_code` is the shell's exit
  status; a non-zero status is still a successful `{:ok, result}`, as in a real
  shell. `truncated` is `true` when output went past the sandbox's output cap
  and the rest was dropped. `stats` is what the script cost
  (`ExBashkit.Result.Stats`: wall and CPU time, peak memory, commands run);
  `nil` in a result no script made (an `ExBashkit.Tool` command's own).

      iex> {:ok, result} = ExBashkit.exec("printf hi; exit 3")
      iex> {result.stdout, result.exit_code}
      {"hi", 3}
  """

  defstruct stdout: "", stderr: "", exit_code: 0, truncated: false, stats: nil

  @type t :: %__MODULE__{
          stdout: binary(),
          stderr: binary(),
          exit_code: integer(),
          truncated: boolean(),
          stats: ExBashkit.Result.Stats.t() | nil
        }
end
