defmodule ExBashkit.Session.StatsTest do
  # What each script cost (`result.stats`) and a session's sum
  # (`Session.stats/1`), in the VM and in a worker process.
  use ExBashkit.Case, async: true

  alias ExBashkit.Result.Stats
  alias ExBashkit.Test.MapFs

  for isolation <- [:none, :process] do
    describe "isolation: #{isolation}" do
      @describetag isolation: isolation

      test "a result counts the commands its script ran, as :max_commands counts them",
           %{isolation: isolation} do
        script = "f() { echo in; echo f; }; f; f; true | cat; for i in $(seq 5); do :; done"
        {:ok, result} = Session.exec(Session.new(isolation: isolation), script)
        assert %Stats{commands: commands, runs: 1} = result.stats
        # The ten simple commands at least, and what holds them.
        assert commands >= 10

        # Exactly the count the limit meters: enough at that, too few one below.
        limited = &Session.new(isolation: isolation, limits: [max_commands: &1])
        assert {:ok, %Result{exit_code: 0}} = Session.exec(limited.(commands), script)

        assert {:error, %ExBashkit.Error{limit: :max_commands}} =
                 Session.exec(limited.(commands - 1), script, errors: :struct)

        {:ok, result} = Session.exec(Session.new(isolation: isolation), "true")
        assert result.stats.commands == 1
      end

      test "a sleeping script's CPU time is a small part of its wall time",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        {:ok, %{stats: stats}} = Session.exec(session, "sleep 0.3")
        assert stats.wall_us >= 300_000
        assert stats.cpu_us < div(stats.wall_us, 2)
      end

      test "a script that works counts CPU time", %{isolation: isolation} do
        session = Session.new(isolation: isolation)

        {:ok, %{stats: stats}} =
          Session.exec(session, "for i in $(seq 3000); do x=$((i * i)); done")

        assert stats.cpu_us > 0
        assert stats.wall_us > 0
      end

      test "peak memory is the most the script held, not what it ends with",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        {:ok, %{stats: small}} = Session.exec(session, "true")

        # seq's 588,894 bytes seven times over, held, then dropped.
        script = "x=$(seq 100000); y=$x$x$x$x$x$x$x; echo ${#y}; x=; y="
        {:ok, %{stats: big, stdout: "4122258\n"}} = Session.exec(session, script)
        assert big.peak_memory_bytes >= 4_122_258
        assert big.peak_memory_bytes > 10 * small.peak_memory_bytes
      end

      test "bytes written to files: each write, append and copy, whole",
           %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        script = "echo hello > /a.txt; echo more >> /a.txt; cp /a.txt /b.txt; cat /b.txt"
        {:ok, %{stats: stats}} = Session.exec(session, script)
        # 6 + 5, then the 11-byte copy.
        assert stats.file_bytes_written == 22

        # What the file API writes between scripts is nobody's script's.
        :ok = Session.write_file(session, "/c.txt", "between")
        {:ok, %{stats: stats}} = Session.exec(session, "cat /a.txt /c.txt > /dev/null")
        assert stats.file_bytes_written == 0
      end

      test "Session.stats/1 sums the session's scripts", %{isolation: isolation} do
        session = Session.new(isolation: isolation)
        assert {:ok, %Stats{runs: 0, commands: 0, wall_us: 0}} = Session.stats(session)

        results =
          for script <- ["echo a", "echo b; echo c", "x=$(head -c 1000000 /dev/zero | wc -c)"] do
            {:ok, result} = Session.exec(session, script)
            result.stats
          end

        {:ok, totals} = Session.stats(session)
        assert totals.runs == 3
        assert totals.commands == Enum.sum(Enum.map(results, & &1.commands))
        assert totals.peak_memory_bytes == Enum.max(Enum.map(results, & &1.peak_memory_bytes))
        # Summed before rounding to microseconds: within one per run.
        assert_in_delta totals.wall_us, Enum.sum(Enum.map(results, & &1.wall_us)), 3
        assert_in_delta totals.cpu_us, Enum.sum(Enum.map(results, & &1.cpu_us)), 3
      end

      test "a script that failed still counts in the session's sum", %{isolation: isolation} do
        session = Session.new(isolation: isolation, limits: [max_loop_iterations: 2])
        {:error, _} = Session.exec(session, "for i in 1 2 3 4; do echo $i; done")
        {:ok, _} = Session.exec(session, "echo after")
        assert {:ok, %Stats{runs: 2}} = Session.stats(session)
      end
    end
  end

  @tag :tmp_dir
  test "bytes written through host and virtual_fs mounts count too", %{tmp_dir: dir} do
    agent = MapFs.start()

    session =
      Session.new(mounts: [{"/host", dir, :read_write}], virtual_fs: %{"/api" => {MapFs, agent}})

    {:ok, %{stats: stats}} = Session.exec(session, "echo abc > /host/x.txt; echo de > /api/y.txt")
    assert stats.file_bytes_written == 7
    assert File.read!(Path.join(dir, "x.txt")) == "abc\n"
  end

  test "one-off scripts carry their stats too" do
    {:ok, result} = ExBashkit.exec("echo one; echo two")
    assert %Stats{commands: commands, runs: 1} = result.stats
    assert commands >= 2
  end

  test "a closed worker's figures are gone with it" do
    session = Session.new(isolation: :process)
    {:ok, _} = Session.exec(session, "true")
    :ok = Session.close(session)
    assert {:error, message} = Session.stats(session)
    assert is_binary(message)
  end
end
