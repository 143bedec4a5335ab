# Forking a session (issue 75): what `Session.fork/1,2` costs, beside the
# copy a snapshot and a restore make.
#
#   mix run bench/fork.exs
#
# A session holding 10 MB in 1,000 files (10 KB each), in the VM:
# - `fork/1`, one copy: the median of 200 forks (5 rounds; median and range
#   of the round medians), each copy dropped after;
# - `fork(session, 100)`: 100 copies in one call (5 rounds);
# - memory: 1,000 copies that each change one file of 10 KB, the resident
#   set before and after, per copy (measured first, on a fresh heap);
# - beside it, the copy without fork: `snapshot/1` then `restore/2` into a
#   new session (5 rounds of 5).
# And with `isolation: :process`: `fork/1` (5 rounds of 3). Then, on
# another such session: `checkpoint/1` after a change of one file (5 rounds
# of 200), `rollback/2` (5 rounds of 200), and the memory held after 1,000
# checkpoints (a session keeps the latest 100) beside one snapshot's size.
# Prints a Markdown table for bench/README.md.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.Session

defmodule ForkBench do
  import BenchSupport

  @rounds 5

  def run do
    # Memory first, on a heap that has not yet freed what it could reuse.
    {checkpoint_us, checkpoint_kib} = checkpoints(loaded(isolation: :none))
    session = loaded(isolation: :none)
    per_copy_kib = memory_per_copy(session, 1_000)
    one = rounds(fn -> p50_us(200, fn -> {:ok, _} = Session.fork(session) end) end)

    hundred =
      rounds(fn ->
        {us, {:ok, copies}} = :timer.tc(fn -> Session.fork(session, 100) end)
        drop(copies)
        us
      end)

    copy =
      rounds(fn ->
        p50_us(5, fn ->
          {:ok, snapshot} = Session.snapshot(session)
          {:ok, _} = Session.restore(Session.new(), snapshot)
        end)
      end)

    rollback =
      rounds(fn ->
        {:ok, id} = Session.checkpoint(session)
        {:ok, _} = Session.exec(session, "echo $RANDOM >> /data/0/file1.txt")
        p50_us(200, fn -> :ok = Session.rollback(session, id) end)
      end)

    {:ok, snapshot} = Session.snapshot(session)

    isolated = loaded(isolation: :process)

    isolated_one =
      rounds(fn ->
        p50_us(3, fn ->
          {:ok, copy} = Session.fork(isolated)
          Session.close(copy)
        end)
      end)

    IO.puts("| a session holding 10 MB in 1,000 files | median (range of 5 rounds) | target |")
    IO.puts("|---|---|---|")
    IO.puts("| `fork/1`, one copy, in the VM | #{spread(one)} µs | ≤ 50 µs |")

    IO.puts(
      "| `fork(session, 100)` | #{spread(Enum.map(hundred, &div(&1, 1000)))} ms | ≤ 10 ms |"
    )

    IO.puts(
      "| memory per copy that changes one 10 KB file (1,000 copies) | #{per_copy_kib} KiB | " <>
        "≤ 10 KiB + 30 KiB |"
    )

    IO.puts("| the copy without fork: `snapshot/1` + `restore/2` | #{spread(copy)} µs | — |")
    IO.puts("| `fork/1` with `isolation: :process` | #{spread(isolated_one)} µs | ≤ 2 ms |")

    IO.puts(
      "| `checkpoint/1` after a change of one file | #{spread(checkpoint_us)} µs | ≤ 100 µs |"
    )

    IO.puts("| `rollback/2` | #{spread(rollback)} µs | ≤ 1 ms |")

    IO.puts(
      "| memory after 1,000 such checkpoints (100 kept), beside one snapshot | " <>
        "#{checkpoint_kib} KiB (#{Float.round(checkpoint_kib * 1024 / byte_size(snapshot), 2)}× " <>
        "the snapshot's #{div(byte_size(snapshot), 1024)} KiB) | ≤ 2× |"
    )
  end

  defp loaded(opts) do
    session = Session.new(opts)
    # Distinct contents: a snapshot stores equal chunks once.
    for i <- 1..1_000 do
      content = Base.encode64(:crypto.strong_rand_bytes(7_500))
      :ok = Session.write_file(session, "/data/#{div(i, 100)}/file#{i}.txt", content)
    end

    session
  end

  # 1,000 checkpoints, each after a change of one file, the resident set
  # before and after (the session keeps the latest 100); then 5 rounds of
  # 200 more, timed.
  defp checkpoints(session) do
    change = fn i ->
      :ok = Session.write_file(session, "/data/#{rem(i, 10)}/file#{i}.txt", "changed #{i}")
    end

    before = rss_kib()

    for i <- 1..1_000 do
      change.(i)
      {:ok, _} = Session.checkpoint(session)
    end

    kib = rss_kib() - before

    us =
      rounds(fn ->
        samples =
          for i <- 1..200 do
            change.(i)
            elapsed_ns(fn -> {:ok, _} = Session.checkpoint(session) end)
          end

        div(median(samples), 1000)
      end)

    {us, kib}
  end

  defp rounds(fun), do: Enum.map(1..@rounds, fn _ -> fun.() end)

  defp memory_per_copy(session, count) do
    before = rss_kib()
    {:ok, copies} = Session.fork(session, count)

    for copy <- copies, do: {:ok, _} = Session.exec(copy, "echo $RANDOM >> /data/0/file1.txt")

    grown = rss_kib() - before
    drop(copies)
    div(grown, count)
  end

  defp drop(copies), do: Enum.each(copies, &Session.close/1)
end

BenchSupport.publish(__ENV__.file, &ForkBench.run/0)
