defmodule ExBashkit.PythonTest do
  # Not async: Monty's busy loops below never yield, so they hold their
  # interpreter thread, and the timing of whatever async test shares it.
  use ExBashkit.Case, async: false

  alias ExBashkit.Error

  @moduletag timeout: 60_000

  setup do
    %{session: Session.new(python: true)}
  end

  test "python3 -c, a script file, and a script on stdin", %{session: session} do
    assert %Result{stdout: "1024\n"} = run(session, ~S|python3 -c "print(2 ** 10)"|)

    :ok = Session.write_file(session, "/work/sum.py", "import sys\nprint(sum([1, 2, 3]))\n")
    assert %Result{stdout: "6\n"} = run(session, "python /work/sum.py")

    assert %Result{stdout: "piped\n"} = run(session, ~S{echo "print('piped')" | python3})
  end

  test "python shares the session filesystem both ways", %{session: session} do
    result =
      run(session, """
      echo 'from bash' > /shared.txt
      python3 -c "
      text = open('/shared.txt').read().strip()
      with open('/from_python.txt', 'w') as f:
          f.write(text.upper() + ' and python')
      "
      cat /from_python.txt
      """)

    assert result.stdout == "FROM BASH and python"
    assert {:ok, "FROM BASH and python"} = Session.read_file(session, "/from_python.txt")
  end

  test "python sees the session's environment and works in pipelines", %{session: session} do
    assert %Result{stdout: "10\n"} =
             run(session, ~S|export N=4; python3 -c "import os; print(int(os.getenv('N')) + 6)"|)

    assert %Result{stdout: "3\n"} = run(session, ~S{python3 -c "print('a\nb\nc')" | wc -l})
  end

  test "an exception exits non-zero with a traceback on stderr", %{session: session} do
    result = run(session, ~S|python3 -c "1 / 0"; echo "exit $?"|)

    assert result.stdout == "exit 1\n"
    assert result.stderr =~ "Traceback (most recent call last):"
    assert result.stderr =~ "ZeroDivisionError: division by zero"
  end

  test "what Monty leaves out fails with a clear error", %{session: session} do
    assert %Result{stderr: stderr} = run(session, ~S|python3 -c "import re"|)
    assert stderr =~ "importing module 're' is disabled"

    assert %Result{stderr: stderr} = run(session, ~S|python3 -c "import numpy"|)
    assert stderr =~ "ModuleNotFoundError"
  end

  test "an infinite loop is stopped by the session's timeout" do
    # Python stops at four fifths of the deadline; the fifth left (600 ms)
    # is the script's, to go on after it on a loaded machine.
    session = Session.new(python: true, limits: [timeout_ms: 3_000])

    {:ok, result} = Session.exec(session, ~S|python3 -c "while True: pass"; echo "exit $?"|)

    assert result.stdout == "exit 1\n"
    assert result.stderr =~ "TimeoutError"
    assert %Result{stdout: "ok\n"} = run(session, ~S|python3 -c "print('ok')"|)
  end

  test "deep recursion is stopped, not a crash", %{session: session} do
    result = run(session, ~S|python3 -c "
def f(n):
    return f(n + 1)
f(0)
"; echo "exit $?"|)

    assert result.stdout == "exit 1\n"
    assert result.stderr =~ "RecursionError"
  end

  test "custom command names" do
    session = Session.new(python: [name: "py"])
    assert %Result{stdout: "2\n"} = run(session, ~S|py -c "print(1 + 1)"|)
    assert %Result{exit_code: 127} = run(session, ~S|python3 -c "print(1)"|)

    session = Session.new(python: [names: ["python", "python3.12"]])
    assert %Result{stdout: "3\n"} = run(session, ~S|python3.12 -c "print(3)"|)
  end

  test "without :python there is no python" do
    assert %Result{exit_code: 127} = run(Session.new(), ~S|python3 -c "print(1)"|)
  end

  test "malformed :python raises ArgumentError" do
    for bad <- [:yes, [name: "a b"], [names: []], [other: 1], "python"] do
      assert_raise ArgumentError, ~r/:python|:builtins names/, fn -> Session.new(python: bad) end
    end
  end

  test "cancel stops a Python loop" do
    session = Session.new(python: true)

    task =
      Task.async(fn ->
        Session.exec(session, ~S|python3 -c "while True: pass"|, errors: :struct)
      end)

    Process.sleep(300)
    assert wait_until(fn -> Session.cancel(session) == :ok end)
    assert {:error, %Error{reason: :cancelled}} = Task.await(task, 10_000)
    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
  end

  describe "pathlib mkdir" do
    # bashkit's Monty bridge misread the in-memory filesystem's "directory
    # exists"; found by ex_bashkit 0.1.7's suite.
    test "behaves as Python's on an existing directory" do
      session = Session.new(python: true)

      script = ~S"""
      python3 - <<'EOF'
      from pathlib import Path
      Path('/d').mkdir()
      for kw in [{}, {'parents': True}, {'exist_ok': True}, {'parents': True, 'exist_ok': True}]:
          try:
              Path('/d').mkdir(**kw)
              print('ok')
          except FileExistsError:
              print('FileExistsError')
      Path('/a/b/c').mkdir(parents=True)
      print(Path('/a/b/c').is_dir())
      try:
          Path('/x/y').mkdir()
      except FileNotFoundError:
          print('FileNotFoundError')
      EOF
      mkdir /d; echo "bash $?"; mkdir -p /d && echo "bash -p ok"
      """

      assert %Result{stdout: stdout} = run(session, script)

      assert stdout ==
               "FileExistsError\nFileExistsError\nok\nok\nTrue\nFileNotFoundError\n" <>
                 "bash 1\nbash -p ok\n"
    end
  end
end
