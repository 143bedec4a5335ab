# The cost of `:command_policy` (issue 42) on a 20-line script: without a
# policy, under a name list (`{:deny, names}`; `{:allow, names}` naming
# every command the script runs), and under `:approve` for comparison,
# side by side, in a session in the VM and one in a worker process.
#
#   mix run bench/command_policy.exs
#
# Each round runs the columns' calls interleaved, one call of each in
# turn; each figure is the median of the rounds' p50s, with their spread
# (min–max), in µs per exec. The policy is checked
# in Rust each time a command is about to run (bashkit's `before_tool`
# hook), with no Elixir round trip.

Code.require_file("support.exs", __DIR__)

defmodule CommandPolicyBench do
  alias ExBashkit.Session

  @script BenchSupport.script_20_lines()

  # Every command the script runs, `set` and `cd` included.
  @used ~w(set mkdir cd echo wc grep sed sort head seq printf [ cat tr ls rm true)

  @rounds 5
  @calls 300

  def run do
    20 = @script |> String.split("\n", trim: true) |> length()

    IO.puts("""
    ## :command_policy on a 20-line script (µs per exec; median of #{@rounds} rounds' p50, min–max)
    | session | no policy | `{:deny, ["curl", "wget"]}` | `{:allow, used}` | `:approve` (allows all) | a function (`fn _ -> :ok end`) | deny list's cost | allow list's cost | function's cost |
    |---|---|---|---|---|---|---|---|---|\
    """)

    for isolation <- [:none, :process] do
      # A session per column: only a policed session has the hook.
      columns = [
        {[], []},
        {[command_policy: {:deny, ["curl", "wget"]}], []},
        {[command_policy: {:allow, @used}], []},
        {[], [approve: fn _ -> :ok end]}
      ]

      # A function is asked from a worker only (the hook blocks its thread).
      columns =
        if isolation == :process,
          do: columns ++ [{[command_policy: fn _ -> :ok end], []}],
          else: columns

      sessions =
        for {new, call} <- columns, do: {Session.new([isolation: isolation] ++ new), call}

      # Calls interleave column by column, so that the machine's drift
      # (this host is bimodal) falls on every column alike; a round's
      # figure is each column's p50 over its calls.
      rounds =
        for _round <- 1..@rounds do
          samples =
            for _call <- 1..@calls do
              for {session, opts} <- sessions do
                {time, {:ok, %{exit_code: 0}}} = :timer.tc(fn -> exec(session, opts) end)
                time
              end
            end

          samples |> Enum.zip_with(& &1) |> Enum.map(&median/1)
        end

      [plain, deny, allow, approve | asked] = Enum.zip_with(rounds, & &1)
      cost = fn with -> Enum.zip_with(plain, with, &Float.round((&2 - &1) * 100 / &1, 1)) end
      spread = &BenchSupport.spread/1

      {function, function_cost} =
        case asked do
          [asked] -> {spread.(asked), "#{spread.(cost.(asked))} %"}
          [] -> {"— (`isolation: :process` only)", "—"}
        end

      IO.puts(
        "| #{isolation} | #{spread.(plain)} | #{spread.(deny)} | #{spread.(allow)} | " <>
          "#{spread.(approve)} | #{function} | #{spread.(cost.(deny))} % | " <>
          "#{spread.(cost.(allow))} % | #{function_cost} |"
      )
    end
  end

  defp median(samples), do: samples |> Enum.sort() |> Enum.at(div(length(samples), 2))

  defp exec(session, []), do: Session.exec(session, @script)
  defp exec(session, opts), do: Session.exec(session, @script, opts)
end

BenchSupport.publish(__ENV__.file, &CommandPolicyBench.run/0)
