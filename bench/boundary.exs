# The worker boundary from the host's side (issue 41):
#
#   MIX_ENV=prod mix run bench/boundary.exs
#   ONLY=paths MIX_ENV=prod mix run bench/boundary.exs   # the first two rows
#   ROUNDS=7 ...                                         # more rounds (5)
#
# Rows:
#   * exec("true") on a live isolated session, and in the VM (ROUNDS
#     rounds of 5,000 calls: median of the rounds' p50 and p90, min–max);
#   * `curl` of a 1 MB response from a server on loopback, in a worker and
#     in the VM (ROUNDS rounds of 50 requests: median of the rounds' p50);
#   * a compromised worker (the probe worker's `lie`, built here as the
#     suite builds it): for each forgery, how long its caller waited and
#     how far the host's RSS rose while it ran (needs this checkout's
#     ExBashkit.Worker.Protocol; skipped on older ones).
#
# The first two rows use only calls every release has, so the script runs
# unchanged in a checkout of an earlier commit, for a side-by-side run
# (alternate the two a few times: runs differ by more than rounds do):
#
#   git worktree add ../prev 8307ccc
#   (cd ../prev && ONLY=paths MIX_ENV=prod mix run ../main/bench/boundary.exs)

Code.require_file("support.exs", __DIR__)

defmodule BoundaryBench do
  alias ExBashkit.Session

  @rounds String.to_integer(System.get_env("ROUNDS", "5"))

  def run do
    IO.puts("## the worker boundary (#{@rounds} rounds)\n")
    exec_true()
    curl()

    if System.get_env("ONLY") != "paths" and Code.ensure_loaded?(ExBashkit.Worker.Protocol),
      do: lies()
  end

  defp exec_true do
    IO.puts(
      "### exec(\"true\") on a live session (µs; median of the rounds, min–max)\n" <>
        "| where | p50 | p90 |\n|---|---|---|"
    )

    for isolation <- [:process, :none] do
      session = Session.new(isolation: isolation)

      rounds =
        for _ <- 1..@rounds do
          samples =
            BenchSupport.sorted_samples_ns(5_000, fn ->
              {:ok, _} = Session.exec(session, "true")
            end)

          {percentile(samples, 50) / 1_000, percentile(samples, 90) / 1_000}
        end

      IO.puts(
        "| #{isolation} | #{spread(Enum.map(rounds, &elem(&1, 0)))} | " <>
          "#{spread(Enum.map(rounds, &elem(&1, 1)))} |"
      )
    end

    IO.puts("")
  end

  defp curl do
    IO.puts(
      "### curl of a 1 MB loopback response (ms; median of the rounds' p50, min–max)\n" <>
        "| where | p50 |\n|---|---|"
    )

    port = serve(1_000_000)
    base = "http://127.0.0.1:#{port}"

    for isolation <- [:process, :none] do
      session = Session.new(isolation: isolation, allow_net: [base], block_private_ips: false)

      rounds =
        for _ <- 1..@rounds do
          samples =
            BenchSupport.sorted_samples_ns(50, fn ->
              {:ok, %{stdout: "1000000\n"}} = Session.exec(session, "curl -s #{base}/ | wc -c")
            end)

          percentile(samples, 50) / 1_000_000
        end

      IO.puts("| #{isolation} | #{spread(rounds)} |")
    end

    IO.puts("")
  end

  # A server on loopback answering every request with `bytes` bytes.
  defp serve(bytes) do
    {:ok, listen} =
      :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false, reuseaddr: true])

    {:ok, port} = :inet.port(listen)
    body = :binary.copy("x", bytes)

    response = "HTTP/1.1 200 OK\r\ncontent-length: #{bytes}\r\nconnection: close\r\n\r\n" <> body

    spawn_link(fn -> accept(listen, response) end)
    port
  end

  defp accept(listen, response) do
    {:ok, socket} = :gen_tcp.accept(listen)

    spawn(fn ->
      _ = :gen_tcp.recv(socket, 0, 5_000)
      :gen_tcp.send(socket, response)
      :gen_tcp.close(socket)
    end)

    accept(listen, response)
  end

  defp lies do
    probe = build_probe()
    Application.put_env(:ex_bashkit, :worker_executable, probe)

    IO.puts(
      "### a compromised worker (the probe's `lie`; timeout_ms 5,000)\n" <>
        "| forgery | caller answered (ms) | host RSS peak growth (MB) | answer |\n|---|---|---|---|"
    )

    frame = fn payload -> <<byte_size(payload)::32, payload::binary>> end
    term = &frame.(:erlang.term_to_binary(&1))

    call = &term.({:call, &1, {:builtin, "x"}, %{args: [], stdin: "", env: %{}, cwd: "/"}})

    cases = [
      {"garbage", fn _ -> frame.(<<1, 2, 3>>) end, "1", []},
      {"a done of the wrong shape", &term.({:done, &1, {:ok, 5}, true}), "1", []},
      {"a frame header of 2 GiB, then 1.5 GiB", fn _ -> <<0x8000_0000::32>> end,
       "1 #{3 * 512 * 1024 * 1024}", []},
      {"a 1 GiB result", fn _ -> <<0x4000_0040::32, 131, 104, 4>> end, "1 #{1024 * 1024 * 1024}",
       []},
      {"2 GiB of output in 1 MiB chunks",
       &term.({:chunk, &1, :stdout, :binary.copy("a", 1024 * 1024)}), "2048", []},
      {"100,000 callback calls", fn _ -> Enum.map_join(1..100_000, call) end, "1",
       [
         limits: [max_file_bytes: 64_000_000, max_fs_bytes: 128_000_000],
         builtins: %{"x" => fn _ -> Process.sleep(:infinity) end}
       ]}
    ]

    for {name, forge, args, opts} <- cases do
      session = Session.new([isolation: :process, limits: [timeout_ms: 5_000]] ++ opts)

      %ExBashkit.Worker{pid: owner} = session.resource
      id = :sys.get_state(owner).next + 1
      :ok = Session.write_file(session, "/frames", forge.(id))
      :erlang.garbage_collect()
      before = rss_kb()
      sampler = spawn_link(fn -> sample(before) end)
      started = System.monotonic_time(:microsecond)
      outcome = Session.exec(session, "lie /frames #{args}", errors: :struct)
      ms = (System.monotonic_time(:microsecond) - started) / 1_000
      send(sampler, {:stop, self()})

      peak =
        receive do
          {:peak, kb} -> kb
        end

      answer =
        case outcome do
          {:error, %ExBashkit.Error{reason: reason}} -> "error (#{reason})"
          {:ok, _} -> "ok"
        end

      IO.puts(
        "| #{name} | #{Float.round(ms, 1)} | #{Float.round((peak - before) / 1024, 1)} | #{answer} |"
      )
    end

    IO.puts("")
  end

  defp sample(peak) do
    receive do
      {:stop, from} -> send(from, {:peak, max(peak, rss_kb())})
    after
      1 -> sample(max(peak, rss_kb()))
    end
  end

  defp build_probe do
    crate = Path.expand("../native/ex_bashkit", __DIR__)

    args =
      ~w(build --release --quiet -p ex_bashkit_worker --bin ex_bashkit_worker_probe --features escape_probe)

    {_, 0} = System.cmd("cargo", args, cd: crate, into: IO.stream(:stdio, :line))
    probe = Path.join(System.tmp_dir!(), "ex_bashkit_bench_probe_#{System.pid()}")
    File.cp!(Path.join(crate, "target/release/ex_bashkit_worker_probe"), probe)
    File.chmod!(probe, 0o755)
    probe
  end

  defp rss_kb do
    [_, kb] = Regex.run(~r/^VmRSS:\s+(\d+) kB/m, File.read!("/proc/self/status"))
    String.to_integer(kb)
  end

  defp percentile(sorted, p), do: Enum.at(sorted, div(length(sorted) * p, 100))

  defp spread(values) do
    sorted = Enum.sort(values)
    f = &Float.round(&1 * 1.0, 1)

    "#{f.(Enum.at(sorted, div(length(sorted), 2)))} (#{f.(List.first(sorted))}–#{f.(List.last(sorted))})"
  end
end

# A checkout without the protocol (an earlier commit, for a side-by-side
# run) prints only: bench/README.md is this checkout's.
if Code.ensure_loaded?(ExBashkit.Worker.Protocol),
  do: BenchSupport.publish(__ENV__.file, ["ROUNDS", "ONLY"], &BoundaryBench.run/0),
  else: BoundaryBench.run()
