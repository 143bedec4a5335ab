# Reads of a host mount, side by side in one run: a session in the VM, an
# isolated one (a worker process), and bash on the host reading the same
# files (`bash -c`, its start included).
#
#   MIX_ENV=prod mix run bench/mount_reads.exs          (ROUNDS=5 by default)
#
# The mount (read-only) holds 40 directories of 25 small files each, as a
# package tree does. Each round, for each side in turn (the side going
# first alternating): `[ -f ]` of every file and of as many missing ones
# (a resolver's probes), `cat` of every file, and `find` over the tree.
# Each figure: µs per file, the median of ROUNDS rounds (min–max).

alias ExBashkit.Session

Code.require_file("support.exs", __DIR__)

defmodule MountReadsBench do
  @dirs 40
  @per_dir 25
  @files @dirs * @per_dir

  @steps [
    probes:
      {2 * @files,
       "for d in d*; do for i in {1..#{@per_dir}}; do [ -f $d/f$i.js ]; [ -f $d/f$i.json ]; done; done; true"},
    cat: {@files, "cat d*/f*.js > /dev/null"},
    find: {@files, "find . -name '*.js' | wc -l > /dev/null"}
  ]

  def run do
    rounds = String.to_integer(System.get_env("ROUNDS", "5"))
    dir = Path.join(System.tmp_dir!(), "ex_bashkit_mount_reads")
    File.rm_rf!(dir)

    for d <- 1..@dirs, i <- 1..@per_dir do
      File.mkdir_p!(Path.join(dir, "d#{d}"))
      File.write!(Path.join(dir, "d#{d}/f#{i}.js"), "module.exports = #{i};\n")
    end

    limits = [max_commands: 1_000_000, max_loop_iterations: 1_000_000]
    mounts = [{"/pkg", dir, :read_only}]

    sides = [
      vm: Session.new(cwd: "/pkg", mounts: mounts, limits: limits),
      isolated: Session.new(cwd: "/pkg", mounts: mounts, limits: limits, isolation: :process),
      host_bash: dir
    ]

    samples =
      for round <- 1..rounds, reduce: %{} do
        acc ->
          order = if rem(round, 2) == 0, do: Enum.reverse(sides), else: sides

          for {side, target} <- order, {step, {count, script}} <- @steps, reduce: acc do
            acc ->
              us = div(elapsed_us(target, script), count)
              Map.update(acc, {side, step}, [us], &[us | &1])
          end
      end

    IO.puts("""
    ## Reads of a host mount (µs per file, median of #{rounds} rounds, min–max)
    #{@dirs} directories of #{@per_dir} small files, mounted read-only.

    | step | session (VM) | isolated session | bash on the host |
    |---|---|---|---|\
    """)

    for {step, _} <- @steps do
      cells = for {side, _} <- sides, do: BenchSupport.spread(samples[{side, step}])
      IO.puts("| #{step} | #{Enum.join(cells, " | ")} |")
    end

    for {side, session} <- sides, side != :host_bash, do: Session.close(session)
  end

  defp elapsed_us(dir, script) when is_binary(dir) do
    {us, {_, 0}} = :timer.tc(fn -> System.cmd("bash", ["-c", script], cd: dir) end)
    us
  end

  defp elapsed_us(session, script) do
    {us, {:ok, %{exit_code: 0}}} = :timer.tc(fn -> Session.exec(session, script) end)
    us
  end
end

BenchSupport.publish(__ENV__.file, ["ROUNDS"], &MountReadsBench.run/0)
