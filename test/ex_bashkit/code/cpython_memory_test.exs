defmodule ExBashkit.CPythonMemoryTest do
  # A CPython memory bomb against the VM's resident set. Not async: the
  # measure is of the whole OS process, which other tests would move.
  use ExBashkit.Case, async: false

  alias ExBashkit.Test.Memory

  # Its one test takes 17 s here: ten times that, for a slower machine.
  @moduletag timeout: 300_000

  @cap 128 * 1024 * 1024

  test "memory bombs end in MemoryError, with the VM's RSS bounded by the guest cap" do
    # The dict bomb fills the cap slowly, past the default deadline on a
    # loaded machine: this test is about memory, so time is no limit here.
    session =
      Session.new(
        python: :cpython,
        limits: [max_python_memory_bytes: @cap, timeout_ms: 300_000]
      )

    assert ExBashkit.warm_up() == :ok
    assert %Result{stdout: "warm\n"} = run(session, ~S|python3 -c "print('warm')"|)

    bombs = [
      "chunks = []\nwhile True: chunks.append(bytearray(1 << 20))",
      "s = 'x'\nwhile True: s += s",
      "d = {}\ni = 0\nwhile True:\n    d[i] = [i] * 100\n    i += 1"
    ]

    for bomb <- bombs, _round <- 1..2 do
      :ok = Session.write_file(session, "/bomb.py", bomb)

      {result, growth_kb} =
        Memory.peak_growth_kb(fn -> run(session, ~S|python3 /bomb.py; echo "exit $?"|) end)

      assert result.stderr =~ "MemoryError", inspect(result)
      assert result.stdout == "exit 1\n"
      # The guest's pages, plus the interpreter's own bookkeeping.
      assert growth_kb * 1024 < @cap + 64 * 1024 * 1024,
             "#{inspect(bomb)} grew the VM by #{div(growth_kb, 1024)} MiB"
    end

    assert %Result{stdout: "still here\n"} = run(session, ~S|python3 -c "print('still here')"|)
  end
end
