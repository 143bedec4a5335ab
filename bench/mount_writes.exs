# Writes into a read-write host mount, side by side in one run: a
# `:read_write` mount (every write checked for git's metadata, then made
# by walking the resolved path without following links), the same mount
# with `git_metadata: :writable` (the same walk, no metadata checks), and
# bash on the host writing the same files (`bash -c`, its start included).
#
#   MIX_ENV=prod mix run bench/mount_writes.exs          (ROUNDS=5 by default)
#
# SIDES=read_write,host_bash picks sides (a build before the guard has no
# `git_metadata: :writable`: run it there with the other two).
#
# Each round, for each side in turn (the side going first alternating):
# 200 small files written (`echo x > f$i`), 200 appends to one file, 100
# directories made two deep and then removed with `rm -rf`, and one 1 MiB
# file written through the file API (`Session.write_file/3`; for bash,
# `head -c`). The mount is a checkout real git made, so the checks walk
# past a `.git` as they would on a user's repository. Each figure: µs per
# operation, the median of ROUNDS rounds (min–max).

alias ExBashkit.{Result, Session}

defmodule MountWritesBench do
  @steps [
    small_writes: {200, "for i in $(seq 1 200); do echo x > w/f$i; done"},
    appends: {200, "for i in $(seq 1 200); do echo x >> w/log; done"},
    mkdir_p: {100, "for i in $(seq 1 100); do mkdir -p w/d$i/e; done"},
    rm_rf: {100, "rm -rf w/d*"}
  ]
  @big 1_048_576

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    base = Path.join(System.tmp_dir!(), "ex_bashkit_mount_writes_#{System.os_time()}")

    sides =
      System.get_env("SIDES", "read_write,git_metadata_writable,host_bash")
      |> String.split(",")
      |> Enum.map(&String.to_existing_atom/1)

    dirs =
      for side <- sides, into: %{} do
        dir = Path.join(base, Atom.to_string(side))
        File.mkdir_p!(dir)
        {_, 0} = System.cmd("git", ["init", "-q", dir])
        {side, dir}
      end

    sessions =
      for side <- sides, side != :host_bash, into: %{} do
        mode =
          if side == :read_write, do: :read_write, else: {:read_write, git_metadata: :writable}

        session =
          Session.new(
            cwd: "/work",
            mounts: [{"/work", dirs[side], mode}],
            limits: [max_commands: 100_000, max_loop_iterations: 100_000]
          )

        {side, session}
      end

    results =
      for round <- 1..rounds, reduce: %{} do
        acc ->
          order = if rem(round, 2) == 0, do: Enum.reverse(sides), else: sides

          Enum.reduce(order, acc, fn side, acc ->
            for {step, us} <- round(side, sessions[side], dirs[side]), reduce: acc do
              acc -> Map.update(acc, {side, step}, [us], &[us | &1])
            end
          end)
      end

    File.rm_rf!(base)
    report(results, sides, rounds)
  end

  defp round(side, session, dir) do
    File.rm_rf!(Path.join(dir, "w"))
    File.mkdir_p!(Path.join(dir, "w"))

    steps =
      for {step, {count, script}} <- @steps do
        {step, timed(fn -> script!(side, session, dir, script) end) / count}
      end

    big = :crypto.strong_rand_bytes(@big)

    write_big =
      case side do
        :host_bash ->
          fn -> script!(side, session, dir, "head -c #{@big} /dev/urandom > w/big") end

        _ ->
          fn -> :ok = Session.write_file(session, "/work/w/big", big) end
      end

    steps ++ [big_file: timed(write_big)]
  end

  defp script!(:host_bash, _session, dir, script) do
    {_, 0} = System.cmd("bash", ["-c", script], cd: dir)
  end

  defp script!(_side, session, _dir, script) do
    {:ok, %Result{exit_code: 0}} = Session.exec(session, script)
  end

  defp timed(fun) do
    started = System.monotonic_time(:nanosecond)
    fun.()
    (System.monotonic_time(:nanosecond) - started) / 1000
  end

  defp report(results, sides, rounds) do
    IO.puts("mount writes, µs per operation: median of #{rounds} rounds (min–max)\n")

    names = %{
      read_write: "`:read_write`",
      git_metadata_writable: "`git_metadata: :writable`",
      host_bash: "bash on the host"
    }

    IO.puts("| step | " <> Enum.map_join(sides, " | ", &names[&1]) <> " |")
    IO.puts("|---" <> String.duplicate("|---", length(sides)) <> "|")

    for step <- Keyword.keys(@steps) ++ [:big_file] do
      cells = for side <- sides, do: cell(Map.fetch!(results, {side, step}))
      IO.puts("| #{step} | #{Enum.join(cells, " | ")} |")
    end
  end

  defp cell(values) do
    sorted = Enum.sort(values)
    median = Enum.at(sorted, div(length(sorted), 2))
    "#{fmt(median)} (#{fmt(hd(sorted))}–#{fmt(List.last(sorted))})"
  end

  defp fmt(us) when us >= 100, do: :erlang.float_to_binary(us / 1, decimals: 0)
  defp fmt(us), do: :erlang.float_to_binary(us / 1, decimals: 1)
end

MountWritesBench.run()
