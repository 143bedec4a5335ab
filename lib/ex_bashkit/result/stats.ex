defmodule ExBashkit.Result.Stats do
  @moduledoc """
  What a script cost, as measured while it ran: `ExBashkit.Result`'s
  `stats`, and the sum over a session's scripts (`ExBashkit.Session.stats/1`).

    * `wall_us` — microseconds from the script taking its session to its
      end (a script queued behind another does not count its wait).
    * `cpu_us` — CPU time, in microseconds, of the threads that ran it
      (the caller's scheduler or an interpreter thread; in a worker, the
      worker's). Work bashkit hands to a helper thread (parsing an `eval`
      text) is not in it.
    * `peak_memory_bytes` — the most the script held at once, over what its
      session held when it began (the same count `:max_script_memory_bytes`
      limits). For a session's sum: the most any one script held.
    * `file_bytes_written` — bytes written to files, by anything the script
      ran (redirections, `cp`, `git`, Python, `node`, `sqlite3`), in memory
      or through a host or `:virtual_fs` mount: each write, append and copy
      counted whole, so a file written twice counts twice.
    * `commands` — what `:max_commands` counts: every simple command bash
      ran (each stage of a pipeline, each time round a loop), and each
      list, pipeline, loop and function call holding them.
    * `runs` — scripts counted: 1 in a result.

      iex> session = ExBashkit.Session.new()
      iex> {:ok, result} = ExBashkit.Session.exec(session, "echo hi")
      iex> %ExBashkit.Result.Stats{commands: 1, runs: 1} = result.stats
      iex> result.stats.wall_us >= result.stats.cpu_us - 1
      true
  """

  defstruct wall_us: 0,
            cpu_us: 0,
            peak_memory_bytes: 0,
            file_bytes_written: 0,
            commands: 0,
            runs: 0

  @type t :: %__MODULE__{
          wall_us: non_neg_integer(),
          cpu_us: non_neg_integer(),
          peak_memory_bytes: non_neg_integer(),
          file_bytes_written: non_neg_integer(),
          commands: non_neg_integer(),
          runs: non_neg_integer()
        }

  @doc false
  # As the NIF and a worker write it.
  @spec from_tuple(tuple()) :: t()
  def from_tuple({wall_us, cpu_us, peak_memory_bytes, file_bytes_written, commands, runs}) do
    %__MODULE__{
      wall_us: wall_us,
      cpu_us: cpu_us,
      peak_memory_bytes: peak_memory_bytes,
      file_bytes_written: file_bytes_written,
      commands: commands,
      runs: runs
    }
  end

  @doc false
  # Whether a worker's `stats` reads as one: six non-negative integers.
  @spec valid?(term()) :: boolean()
  def valid?(stats) when tuple_size(stats) == 6,
    do: stats |> Tuple.to_list() |> Enum.all?(&(is_integer(&1) and &1 >= 0))

  def valid?(_stats), do: false
end
