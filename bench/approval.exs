# The cost of `:approve` (issue 30): a 20-line script run with and without
# an approve function that allows everything, side by side, in a session
# in the VM and one in a worker process.
#
#   mix run bench/approval.exs
#
# Rounds alternate the two; each figure is the median of the rounds' p50s,
# with their spread (min–max). The difference is the analysis of the
# script (bashkit's parser, on a thread of its own) and the function's
# process.

Code.require_file("support.exs", __DIR__)

defmodule ApprovalBench do
  alias ExBashkit.Session

  @script BenchSupport.script_20_lines()

  @rounds 5
  @calls 300

  def run do
    20 = @script |> String.split("\n", trim: true) |> length()
    allow = fn _ -> :ok end

    IO.puts("""
    ## :approve on a 20-line script (µs per exec; median of #{@rounds} rounds' p50, min–max)
    | session | without | with `approve: fn _ -> :ok end` | cost |
    |---|---|---|---|\
    """)

    for isolation <- [:none, :process] do
      session = Session.new(isolation: isolation)

      plain = fn ->
        BenchSupport.p50_us(@calls, fn -> {:ok, _} = Session.exec(session, @script) end)
      end

      approved = fn ->
        BenchSupport.p50_us(@calls, fn ->
          {:ok, _} = Session.exec(session, @script, approve: allow)
        end)
      end

      pairs = for _ <- 1..@rounds, do: {plain.(), approved.()}
      {without, with} = Enum.unzip(pairs)
      cost = Enum.map(pairs, fn {a, b} -> Float.round((b - a) * 100 / a, 1) end)

      IO.puts(
        "| #{isolation} | #{BenchSupport.spread(without)} | #{BenchSupport.spread(with)} | #{BenchSupport.spread(cost)} % |"
      )
    end
  end
end

BenchSupport.publish(__ENV__.file, &ApprovalBench.run/0)
