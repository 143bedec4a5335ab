# Telemetry (issue 17): what an exec costs with :telemetry absent (the
# events are skipped after one BIF call), loaded with no handler, and with
# one handler attached to the exec events.
#
#   MIX_ENV=prod mix run bench/telemetry.exs
#
# 5,000 samples of Session.exec(session, "true") each, after 500 warm-up
# calls; p50 and p90. The :telemetry here is the test suite's stand-in
# (test/support/telemetry.ex: the package's attach/execute semantics),
# loaded after the first row is measured.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.Session

session = Session.new()
run = fn -> {:ok, _} = Session.exec(session, "true") end

row = fn label ->
  samples = BenchSupport.sorted_samples_ns(5_000, run)
  p = fn pct -> Enum.at(samples, div(length(samples) * pct, 100)) / 1000 end
  IO.puts("| #{label} | #{Float.round(p.(50), 1)} µs | #{Float.round(p.(90), 1)} µs |")
end

BenchSupport.publish(__ENV__.file, fn ->
  IO.puts("| :telemetry | exec(\"true\") p50 | p90 |")
  IO.puts("|---|---|---|")
  false = ExBashkit.Telemetry.enabled?()
  row.("absent")
  Code.require_file("../test/support/telemetry.ex", __DIR__)
  true = ExBashkit.Telemetry.enabled?()
  row.("loaded, no handler")

  :telemetry.attach_many(
    "bench",
    [[:ex_bashkit, :exec, :start], [:ex_bashkit, :exec, :stop]],
    fn _, _, _, _ -> :ok end,
    nil
  )

  row.("loaded, one handler on start and stop")
end)
