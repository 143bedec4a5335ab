# Helpers shared by the benchmark scripts (Code.require_file'd by each).

defmodule BenchSupport do
  @moduledoc false

  @doc "Builds the Rust baselines (src/bin/bench_exec.rs); returns the binary's path."
  def build_rust_baseline do
    crate = Path.expand("../native/ex_bashkit", __DIR__)
    args = ["build", "--release", "--quiet", "--bin", "bench_exec"]
    {_, 0} = System.cmd("cargo", args, cd: crate, into: IO.stream(:stdio, :line))
    target = System.get_env("CARGO_TARGET_DIR") || Path.join(crate, "target")
    Path.join(target, "release/bench_exec")
  end

  @doc "Runs a Rust baseline that prints one number."
  def rust(binary, args) do
    {out, 0} = System.cmd(binary, args)
    out |> String.trim() |> String.to_float()
  end

  @doc "Nanoseconds of each of `n` calls of `fun`, after `n / 10` warm-up calls; sorted."
  def sorted_samples_ns(n, fun) do
    for _ <- 1..div(n, 10), do: fun.()

    samples =
      for _ <- 1..n do
        started = System.monotonic_time(:nanosecond)
        fun.()
        System.monotonic_time(:nanosecond) - started
      end

    Enum.sort(samples)
  end

  @doc "The median of `n` calls of `fun` (after warm-up), in µs."
  def p50_us(n, fun) do
    samples = sorted_samples_ns(n, fun)
    div(Enum.at(samples, div(length(samples), 2)), 1_000)
  end

  @doc "Repeated figures as `median (min–max)`."
  def spread(values) do
    sorted = Enum.sort(values)
    "#{Enum.at(sorted, div(length(sorted), 2))} (#{List.first(sorted)}–#{List.last(sorted)})"
  end

  @doc "Microseconds until every session has run `script`, all at once."
  def all_at_once_us(sessions, script) do
    {us, _} =
      :timer.tc(fn ->
        sessions
        |> Enum.map(&Task.async(fn -> {:ok, _} = ExBashkit.Session.exec(&1, script) end))
        |> Task.await_many(60_000)
      end)

    us
  end

  @doc "Waits until at most `live` sessions are alive (garbage freed)."
  def wait_until_freed(live) do
    if ExBashkit.Native.live_sessions() > live do
      Process.sleep(1)
      wait_until_freed(live)
    end
  end

  @doc "This VM's resident set, in KiB."
  def rss_kib do
    [kib] =
      Regex.run(~r/VmRSS:\s+(\d+)/, File.read!("/proc/self/status"), capture: :all_but_first)

    String.to_integer(kib)
  end
end
