# Helpers shared by the benchmark scripts (Code.require_file'd by each).

defmodule BenchSupport do
  @moduledoc false

  @doc "A 20-line script of everyday commands (bench/approval.exs, bench/command_policy.exs)."
  def script_20_lines do
    """
    set -e
    mkdir -p /work/out
    cd /work
    for i in 1 2 3; do echo "line $i" >> notes.txt; done
    count=$(wc -l < notes.txt)
    echo "count=$count"
    grep -c line notes.txt > out/grep.txt
    sed 's/line/row/' notes.txt > out/sed.txt
    sort -r notes.txt | head -n 2
    total=0
    for n in $(seq 1 10); do total=$((total + n)); done
    echo "total=$total"
    name=world
    printf 'hello %s\\n' "$name"
    if [ -f out/sed.txt ]; then cat out/sed.txt | tr a-z A-Z; fi
    case $count in 3) echo three ;; *) echo other ;; esac
    echo done > out/status
    ls out | sort
    rm -f notes.txt
    true
    """
  end

  @doc "Builds the Rust baselines (crates/core/src/bin/bench_exec.rs); returns the binary's path."
  def build_rust_baseline do
    crate = Path.expand("../native/ex_bashkit", __DIR__)
    args = ["build", "--release", "--quiet", "-p", "ex_bashkit_core", "--bin", "bench_exec"]
    {_, 0} = System.cmd("cargo", args, cd: crate, into: IO.stream(:stdio, :line))
    target = System.get_env("CARGO_TARGET_DIR") || Path.join(crate, "target")
    Path.join(target, "release/bench_exec")
  end

  @doc "Runs a Rust baseline that prints one number."
  def rust(binary, args) do
    {out, 0} = System.cmd(binary, args)
    out |> String.trim() |> String.to_float()
  end

  @doc """
  Nanoseconds of each of `n` calls of `fun`, after `n / 10` warm-up calls;
  sorted. `before` runs, untimed, before each timed call.
  """
  def sorted_samples_ns(n, fun, before \\ fn -> :ok end) do
    for _ <- 1..div(n, 10), do: fun.()

    samples =
      for _ <- 1..n do
        before.()
        started = System.monotonic_time(:nanosecond)
        fun.()
        System.monotonic_time(:nanosecond) - started
      end

    Enum.sort(samples)
  end

  @doc """
  A `before` for `sorted_samples_ns/3` that keeps the calls `gap_us` apart,
  the scheduler busy meanwhile (as a caller would be; a sleep lets the
  caches go cold).
  """
  def gap(gap_us), do: fn -> busy_until(System.monotonic_time(:microsecond) + gap_us) end

  defp busy_until(deadline) do
    if System.monotonic_time(:microsecond) < deadline, do: busy_until(deadline)
  end

  @doc "A tool that answers its argument: the cheapest round trip from a program to Elixir."
  def echo_tool do
    ExBashkit.Tool.new(
      name: "echo",
      description: "Answers its argument.",
      parameters: %{"type" => "object", "properties" => %{"n" => %{"type" => "integer"}}},
      function: fn args -> {:ok, args["n"]} end
    )
  end

  @doc """
  A builtin's round trip, per call, in µs: `{p50, p90}` of the gaps
  between 1 call and the next of one script's loop (the builtin stamps the
  time of each call; a gap is a round trip plus the loop's own step).
  """
  def builtin_per_call(calls, new \\ &ExBashkit.Session.new/1, exec \\ &ExBashkit.Session.exec/2) do
    stamps = :atomics.new(calls + 1, signed: true)
    next = :atomics.new(1, [])

    stamp = fn _ ->
      :atomics.put(stamps, :atomics.add_get(next, 1, 1), System.monotonic_time(:nanosecond))
      {:ok, ""}
    end

    session = new.(builtins: %{"kv_get" => stamp})
    script = "for i in $(seq #{calls}); do kv_get a; done"
    {:ok, _} = exec.(session, script)
    :atomics.put(next, 1, 0)
    {:ok, _} = exec.(session, script)
    gaps = for i <- 2..calls, do: :atomics.get(stamps, i) - :atomics.get(stamps, i - 1)
    sorted = Enum.sort(gaps)
    at = fn p -> Enum.at(sorted, min(length(sorted) - 1, trunc(p * length(sorted)))) / 1000 end
    {at.(0.5), at.(0.9)}
  end

  @doc "Line `i` of the 200-line log the pipeline benchmarks read (`bench/pipeline.sh`)."
  def log_line(i) do
    status = if rem(i, 3) == 0, do: "ok", else: "fail"
    "#{i} user#{rem(i, 7)} #{rem(i * 37, 101)} status=#{status}\n"
  end

  @doc "Nanoseconds one call of `fun` took."
  def elapsed_ns(fun) do
    started = System.monotonic_time(:nanosecond)
    fun.()
    System.monotonic_time(:nanosecond) - started
  end

  @doc "The median of `n` calls of `fun` (after warm-up), in µs."
  def p50_us(n, fun) do
    samples = sorted_samples_ns(n, fun)
    div(Enum.at(samples, div(length(samples), 2)), 1_000)
  end

  @doc "Repeated figures as `median (min–max)`."
  def spread(values) do
    sorted = Enum.sort(values)
    "#{median(values)} (#{List.first(sorted)}–#{List.last(sorted)})"
  end

  @doc "The middle one of repeated figures."
  def median(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))

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

  @doc """
  Waits until the interpreters of `sessions` (in the VM) are built: a
  burst's sessions are handed over before they are (the refill thread
  builds them next), and what they take is counted once they are.
  """
  def wait_until_built(sessions) do
    unless Enum.all?(sessions, &ExBashkit.Native.session_built(&1.resource.resource)) do
      Process.sleep(1)
      wait_until_built(sessions)
    end
  end

  @doc "This VM's resident set, in KiB."
  def rss_kib do
    [kib] =
      Regex.run(~r/VmRSS:\s+(\d+)/, File.read!("/proc/self/status"), capture: :all_but_first)

    String.to_integer(kib)
  end

  @readme Path.expand("README.md", __DIR__)

  @doc """
  Runs `fun`, whose output goes to stdout as it is printed, and writes it
  into bench/README.md as the latest run of `script` (this script's path)
  with `env` (the environment variables that chose what it ran): between
  markers of its own under "Latest runs", replacing the run before. So
  the figures there are what a script printed, never pasted.
  """
  def publish(script, env \\ [], fun) do
    command =
      Enum.map_join(env, "", fn name ->
        if v = System.get_env(name), do: "#{name}=#{v} ", else: ""
      end) <>
        "mix run bench/#{Path.basename(script)}" <> Enum.map_join(System.argv(), "", &(" " <> &1))

    header = run_header()
    output = tee(fun)

    block =
      "<!-- #{command} -->\n### `#{command}`\n\n#{header}\n\n#{String.trim(output)}\n<!-- /#{command} -->"

    readme = File.read!(@readme)

    readme =
      case String.split(readme, ["<!-- #{command} -->", "<!-- /#{command} -->"]) do
        [before, _old, rest] -> before <> block <> rest
        [_] -> String.trim_trailing(readme) <> "\n\n" <> block <> "\n"
      end

    File.write!(@readme, readme)
    IO.puts(:stderr, "\nwritten to bench/README.md (#{command})")
  end

  # When and on what: the commit, the date, the machine, and how loaded it
  # was as the run started (a figure means little without that).
  defp run_header do
    {commit, _} =
      System.cmd("git", ["log", "-1", "--format=%h"], cd: __DIR__, stderr_to_stdout: true)

    {dirty, _} = System.cmd("git", ["status", "--porcelain", "--untracked-files=no"], cd: __DIR__)
    [load | _] = String.split(File.read!("/proc/loadavg"))

    "Run #{DateTime.utc_now() |> DateTime.truncate(:second)} on #{String.trim(commit)}" <>
      if(dirty != "", do: " (with uncommitted changes)", else: "") <>
      ", #{System.schedulers_online()} cores, load average #{load} at the start, " <>
      "OTP #{System.otp_release()}, Elixir #{System.version()}, MIX_ENV=#{Mix.env()}."
  end

  # Runs `fun` with this process's output (and that of the processes it
  # starts) both printed and kept; answers what was kept.
  defp tee(fun) do
    stdout = Process.group_leader()
    tee = spawn_link(fn -> tee_loop(stdout, []) end)
    Process.group_leader(self(), tee)

    try do
      fun.()
    after
      Process.group_leader(self(), stdout)
    end

    send(tee, {:done, self()})
    receive do: ({:tee, output} -> output)
  end

  defp tee_loop(stdout, kept) do
    receive do
      {:io_request, from, reply_as, {:put_chars, encoding, chars}} ->
        IO.write(stdout, chars)
        send(from, {:io_reply, reply_as, :ok})
        tee_loop(stdout, [kept | :unicode.characters_to_binary(chars, encoding)])

      {:io_request, from, reply_as, {:put_chars, encoding, m, f, a}} ->
        chars = apply(m, f, a)
        IO.write(stdout, chars)
        send(from, {:io_reply, reply_as, :ok})
        tee_loop(stdout, [kept | :unicode.characters_to_binary(chars, encoding)])

      # Anything else (setopts, getopts, reads: a peer node started in a
      # bench asks for its encoding) is the real device's to answer.
      {:io_request, from, reply_as, other} ->
        send(stdout, {:io_request, from, reply_as, other})
        tee_loop(stdout, kept)

      {:done, caller} ->
        send(caller, {:tee, IO.iodata_to_binary(kept)})
    end
  end
end
