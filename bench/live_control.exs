# Live control (issue 14): what streaming costs, and how fast cancel is.
#
#   mix run bench/live_control.exs
#
# Streaming: `seq 1 100000` and a 1,000-iteration loop (1,000 chunks), each
# with and without `:stream_to` (the listener drains its mailbox), side by
# side in 10 rounds of 20 runs; a cell is the median of the round medians
# with their range.
#
# Cancel: the time from `Session.cancel/1` to the caller's answer, while the
# script sleeps, waits on a builtin that never returns, waits on a loopback
# server that never answers, and spins in a Python loop; 40 samples each,
# p50 / p99 / max. Prints Markdown tables for bench/README.md.

alias ExBashkit.Session

defmodule LiveControlBench do
  @rounds 10
  @runs 20
  @cancels 40

  def run do
    streaming()
    cancel()
  end

  defp streaming do
    scripts = [
      {"`seq 1 100000` (one 589 KB chunk)", "seq 1 100000"},
      {"1,000 iterations of `echo $i` (1,000 chunks)", "for i in $(seq 1 1000); do echo $i; done"}
    ]

    IO.puts("| script | plain `exec` | with `:stream_to` | ratio | target |")
    IO.puts("|---|---|---|---|---|")

    for {label, script} <- scripts do
      session = Session.new()
      listener = spawn(fn -> drain() end)

      rounds =
        for _ <- 1..@rounds do
          plain = median_us(fn -> {:ok, _} = Session.exec(session, script) end)

          streamed =
            median_us(fn -> {:ok, _} = Session.exec(session, script, stream_to: listener) end)

          {plain, streamed}
        end

      {plain, streamed} = Enum.unzip(rounds)
      ratio = middle(streamed) / middle(plain)

      IO.puts(
        "| #{label} | #{cell(plain)} | #{cell(streamed)} | #{Float.round(ratio, 2)}× | ≤ 1.3× |"
      )
    end
  end

  defp drain do
    receive do
      _ -> drain()
    end
  end

  defp median_us(fun) do
    samples =
      for _ <- 1..@runs do
        {us, _} = :timer.tc(fun)
        us
      end

    middle(samples)
  end

  defp cancel do
    IO.puts("\n| cancel while the script… | p50 | p99 | max | target |")
    IO.puts("|---|---|---|---|---|")
    test = self()

    cases = [
      {"sleeps (`sleep 30`)", fn -> Session.new() end, "sleep 30", fn -> Process.sleep(20) end},
      {"waits on a builtin that never returns",
       fn ->
         Session.new(
           builtins: %{
             "hang" => fn _ ->
               send(test, :in_builtin)
               Process.sleep(:infinity)
             end
           }
         )
       end, "hang", fn -> receive(do: (:in_builtin -> :ok)) end},
      {"waits on a loopback server that never answers", &network_session/0,
       "curl -s http://127.0.0.1:#{silent_port()}/x", fn -> receive(do: (:connected -> :ok)) end},
      {"runs a Python loop", fn -> Session.new(python: true) end,
       ~S|python3 -c "while True: pass"|, fn -> Process.sleep(50) end}
    ]

    for {label, new, script, ready} <- cases do
      samples =
        for _ <- 1..@cancels do
          session = new.()
          task = Task.async(fn -> Session.exec(session, script, errors: :struct) end)
          ready.()
          started = System.monotonic_time(:microsecond)
          :ok = Session.cancel(session)
          {:error, %ExBashkit.Error{reason: :cancelled}} = Task.await(task, 5_000)
          System.monotonic_time(:microsecond) - started
        end
        |> Enum.sort()

      IO.puts(
        "| #{label} | #{ms(at(samples, 0.5))} | #{ms(at(samples, 0.99))} | " <>
          "#{ms(List.last(samples))} | p99 ≤ 100 ms |"
      )
    end
  end

  # A server on loopback that accepts every connection and never answers.
  defp silent_port do
    bench = self()
    {:ok, listen} = :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false])
    {:ok, port} = :inet.port(listen)
    acceptor = spawn(fn -> accept(listen, bench) end)
    :ok = :gen_tcp.controlling_process(listen, acceptor)
    Process.put(:silent_port, port)
    port
  end

  defp accept(listen, bench) do
    {:ok, socket} = :gen_tcp.accept(listen)
    send(bench, :connected)
    spawn(fn -> Process.sleep(:infinity) end) |> then(&:gen_tcp.controlling_process(socket, &1))
    accept(listen, bench)
  end

  defp network_session do
    base = "http://127.0.0.1:#{Process.get(:silent_port)}"
    Session.new(allow_net: [base], block_private_ips: false)
  end

  defp middle(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))
  defp at(sorted, p), do: Enum.at(sorted, min(round(p * length(sorted)), length(sorted) - 1))

  defp cell(values),
    do: "#{ms(middle(values))} (#{ms(Enum.min(values))}–#{ms(Enum.max(values))})"

  defp ms(us) when us >= 1000, do: "#{Float.round(us / 1000, 2)} ms"
  defp ms(us), do: "#{Float.round(us / 1, 1)} µs"
end

BenchSupport.publish(__ENV__.file, &LiveControlBench.run/0)
