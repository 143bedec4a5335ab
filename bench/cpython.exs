# CPython in the sandbox (issue 18): what `python3 -c "print(1)"` costs
# under python: :cpython against Monty (python: true) and against bashkit's
# CPython in plain Rust, all in one run, and what the guest costs the VM.
#
#   MIX_ENV=prod mix run bench/cpython.exs [rounds]
#
# First call: each of `rounds` fresh VMs (`elixir` on this project's
# compiled code) reads its RSS and virtual size, times its first CPython
# call (engine and module load included) and reads them again.
# Steady state, in this VM, per round: 300 CPython calls and 2,000 Monty
# calls in one session each, after a tenth as many warm-up calls; the Rust
# baseline runs 300 calls. Then 200 calls from 50 sessions at once.
# Prints a row per round and the median and spread (min-max) over rounds.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.Session

defmodule CPythonBench do
  import BenchSupport

  @script ~S|python3 -c "print(1)"|

  def run(rounds) do
    binary = build_rust_baseline()
    first_calls(rounds)
    steady(rounds, binary)
    concurrent()
  end

  # Each fresh VM prints "first_ms rss_before rss_after vm_before vm_after" (KiB).
  defp first_calls(rounds) do
    ebin = Path.join(Mix.Project.build_path(), "lib/ex_bashkit/ebin")

    code = """
    {:ok, _} = Application.ensure_all_started(:ex_bashkit)
    status = fn key ->
      [kib] = Regex.run(~r/#{"\#{key}"}:\\s+(\\d+)/, File.read!("/proc/self/status"), capture: :all_but_first)
      String.to_integer(kib)
    end
    session = ExBashkit.Session.new(python: :cpython)
    {:ok, %{stdout: "ok\\n"}} = ExBashkit.Session.exec(ExBashkit.Session.new(), "echo ok")
    before = {status.("VmRSS"), status.("VmSize")}
    {us, {:ok, %{stdout: "1\\n"}}} = :timer.tc(fn -> ExBashkit.Session.exec(session, #{inspect(@script)}) end)
    IO.puts(Enum.join([us / 1000, elem(before, 0), status.("VmRSS"), elem(before, 1), status.("VmSize")], " "))
    """

    rows =
      for round <- 1..rounds do
        {out, 0} = System.cmd("elixir", ["-pa", ebin, "-e", code])
        [ms | kib] = out |> String.split() |> Enum.take(-5) |> Enum.map(&parse/1)
        [rss0, rss1, vm0, vm1] = kib

        IO.puts(
          "first call, VM #{round}: #{fmt(ms)} ms; RSS #{mib(rss0)} → #{mib(rss1)} MiB; " <>
            "virtual size #{mib(vm0)} MiB → #{gib(vm1)} GiB"
        )

        {ms, rss1 - rss0, vm1 - vm0}
      end

    {ms, rss, vm} = unzip3(rows)
    IO.puts("first call: median #{spread(ms, &fmt/1)} ms")
    IO.puts("RSS added by it: median #{spread(rss, &mib/1)} MiB")
    IO.puts("virtual size added by it: median #{spread(vm, &gib/1)} GiB\n")
  end

  defp steady(rounds, binary) do
    cpython = Session.new(python: :cpython)
    monty = Session.new(python: true)
    call = fn session -> {:ok, %{stdout: "1\n"}} = Session.exec(session, @script) end

    IO.puts(
      "| round | CPython p50 / p99 | Monty p50 / p99 | CPython in Rust p50 | CPython ÷ Monty | CPython ÷ Rust |"
    )

    IO.puts("|---|---|---|---|---|---|")

    rows =
      for round <- 1..rounds do
        c = sorted_samples_ns(300, fn -> call.(cpython) end)
        m = sorted_samples_ns(2_000, fn -> call.(monty) end)
        rust_us = rust(binary, ["cpython", "300"])
        {c50, c99, m50, m99} = {pct(c, 50), pct(c, 99), pct(m, 50), pct(m, 99)}

        IO.puts(
          "| #{round} | #{ms(c50)} / #{ms(c99)} ms | #{us(m50)} / #{us(m99)} µs | " <>
            "#{fmt(rust_us / 1000)} ms | #{ratio(c50, m50)} | #{ratio(c50, rust_us * 1000)} |"
        )

        {{c50, c99}, {m50, m99}, c50 / (rust_us * 1000)}
      end

    {c, m, r} = unzip3(rows)
    IO.puts("CPython p50: median #{spread(Enum.map(c, &elem(&1, 0)), &ms/1)} ms")
    IO.puts("CPython p99: median #{spread(Enum.map(c, &elem(&1, 1)), &ms/1)} ms")
    IO.puts("Monty p50: median #{spread(Enum.map(m, &elem(&1, 0)), &us/1)} µs")
    IO.puts("Monty p99: median #{spread(Enum.map(m, &elem(&1, 1)), &us/1)} µs")
    IO.puts("CPython in a session ÷ in Rust: median #{spread(r, &fmt/1)}\n")
  end

  defp concurrent do
    sessions = for _ <- 1..50, do: Session.new(python: :cpython)
    before = rss_kib()

    {us, _} =
      :timer.tc(fn ->
        sessions
        |> Stream.cycle()
        |> Enum.take(200)
        |> Task.async_stream(&({:ok, %{stdout: "1\n"}} = Session.exec(&1, @script)),
          max_concurrency: 50,
          timeout: 60_000
        )
        |> Stream.run()
      end)

    IO.puts(
      "200 calls from 50 sessions at once: #{fmt(us / 1000)} ms, " <>
        "#{round(200 / (us / 1_000_000))} calls/s; VM RSS #{mib(before)} → #{mib(rss_kib())} MiB " <>
        "(released slots keep their pages for reuse)"
    )
  end

  defp pct(sorted, p), do: Enum.at(sorted, min(length(sorted) - 1, div(length(sorted) * p, 100)))
  defp parse(text), do: with({n, ""} <- Float.parse(text), do: n)

  defp unzip3(rows),
    do: {Enum.map(rows, &elem(&1, 0)), Enum.map(rows, &elem(&1, 1)), Enum.map(rows, &elem(&1, 2))}

  defp spread(values, format) do
    sorted = Enum.sort(values)

    "#{format.(Enum.at(sorted, div(length(sorted), 2)))} (#{format.(hd(sorted))}–#{format.(List.last(sorted))})"
  end

  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 2)
  defp ms(ns), do: fmt(ns / 1_000_000)
  defp us(ns), do: fmt(ns / 1_000)
  defp mib(kib), do: fmt(kib / 1024)
  defp gib(kib), do: fmt(kib / 1024 / 1024)
  defp ratio(a, b), do: "#{:erlang.float_to_binary(a / b, decimals: 1)}×"
end

rounds =
  case System.argv() do
    [n] -> String.to_integer(n)
    [] -> 3
  end

BenchSupport.publish(__ENV__.file, fn -> CPythonBench.run(rounds) end)
