# Where a deadline finds work that never yields (issue 27). The work is
# `[[ a && … ]]` with 30,000 terms (150 KB, seconds of work bashkit cannot
# interrupt), reached four ways; each is run with short deadlines, in the
# VM and in a worker, and the outcome counted: `stopped` (bashkit stopped
# the script cleanly at its deadline: something before the work yielded
# or looked at the deadline) or `not stopped` (the deadline found the
# script inside the work: a worker is killed, an in-VM caller answered).
#
#   MIX_ENV=prod mix run bench/deadline_race.exs
#   ROUNDS=5 MIX_ENV=prod mix run bench/deadline_race.exs
#
# A way that is ever `stopped` here can be stopped cleanly on a loaded
# machine at any deadline: the tests that need a kill run the last way.
# An in-VM call left running keeps its thread after its caller is
# answered; a later call given that thread is `queued`.

Code.require_file("support.exs", __DIR__)

defmodule DeadlineRaceBench do
  alias ExBashkit.{Error, Session}

  @body "[[ " <> Enum.join(List.duplicate("a", 30_000), " && ") <> " ]]"

  # {label, files, setup script (under a 60 s deadline), the timed script}
  @ways [
    {"given to exec/3 (150 KB, parsed on the blocking pool)", %{}, nil, @body},
    {"sourced (parsed on the blocking pool)", %{"/hog.sh" => @body}, nil, "source /hog.sh"},
    {"run as a program (parsed inline; the parser looks at the deadline)", %{"/hog.sh" => @body},
     "chmod +x /hog.sh", "/hog.sh"},
    {"a function defined by an earlier call (nothing to parse)", %{}, "hog() { #{@body}; }",
     "hog"}
  ]

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "2"))
    IO.puts("#{rounds} calls per cell; `stopped` / `not stopped` at the deadline\n")
    IO.puts("| how the work is reached | isolation | 1 ms | 20 ms | 300 ms |")
    IO.puts("|---|---|---|---|---|")

    for {label, files, setup, script} <- @ways, isolation <- [:none, :process] do
      cells =
        for deadline <- [1, 20, 300] do
          outcomes = for _ <- 1..rounds, do: outcome(isolation, files, setup, script, deadline)
          count = fn kind -> Enum.count(outcomes, &(&1 == kind)) end
          queued = count.(:queued)

          "#{count.(:stopped)} / #{count.(:not_stopped)}" <>
            if(queued > 0, do: " (#{queued} queued)", else: "")
        end

      IO.puts("| #{label} | #{isolation} | #{Enum.join(cells, " | ")} |")
    end
  end

  defp outcome(isolation, files, setup, script, deadline) do
    session = Session.new(isolation: isolation, files: files, limits: [timeout_ms: 60_000])
    if setup, do: {:ok, %{exit_code: 0}} = Session.exec(session, setup)

    case Session.exec(session, script, timeout_ms: deadline, errors: :struct) do
      {:error, %Error{reason: :timeout, message: message}} ->
        cond do
          message =~ "did not stop at its deadline" -> :not_stopped
          # In the VM: its thread was held by an earlier call's runaway.
          message =~ "before the script started" -> :queued
          true -> :stopped
        end

      other ->
        raise "unexpected: #{inspect(other, limit: 5)}"
    end
  end
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &DeadlineRaceBench.run/0)
