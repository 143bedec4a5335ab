defmodule ExBashkit.CPythonTest do
  # python: :cpython, CPython 3.14 in a WebAssembly guest (issue 18): the
  # stdlib a model reaches for, files shared with bash and the file API,
  # what the guest cannot reach, and how limits, timeouts and cancel stop
  # it. The memory bomb, which measures the VM, is in cpython_memory_test.
  # Not async: its timeouts are timing tests, and its 50 concurrent calls
  # take both cores for a moment; neither mixes well with async neighbours.
  use ExBashkit.Case, async: false

  alias ExBashkit.Error
  alias ExBashkit.Test.HttpServer

  @moduletag timeout: 120_000

  setup do
    %{session: Session.new(python: :cpython)}
  end

  describe "the stdlib a model reaches for" do
    test "re, json, csv, collections, itertools, datetime, pathlib, textwrap, format, stdin, argv",
         %{session: session} do
      :ok =
        Session.write_file(session, "/work/report.py", """
        import collections, csv, datetime, io, itertools, json, pathlib, re, sys, textwrap

        rows = list(csv.DictReader(sys.stdin))
        counts = collections.Counter(row["level"] for row in rows)
        codes = sorted(int(m.group(1)) for row in rows for m in [re.search(r"code=(\\d+)", row["msg"])] if m)
        pairs = list(itertools.combinations(sorted(counts), 2))
        day = datetime.date(2026, 11, 22) + datetime.timedelta(days=int(sys.argv[2]))
        out = pathlib.Path(sys.argv[1])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"counts": counts, "codes": codes}, sort_keys=True))
        print("{} rows, {:.1f}% errors".format(len(rows), 100 * counts["error"] / len(rows)))
        print(f"{len(pairs)} pairs, next {day.isoformat()}, {day:%A}")
        print(textwrap.fill("word " * 6, width=12))
        """)

      result =
        run(session, """
        printf 'level,msg\\ninfo,started\\nerror,failed code=42\\nerror,failed code=7\\nwarn,slow\\n' > /work/log.csv
        python3 /work/report.py /out/summary.json 1 < /work/log.csv
        """)

      assert result.exit_code == 0, result.stderr

      assert result.stdout ==
               "4 rows, 50.0% errors\n3 pairs, next 2026-11-23, Monday\nword word\nword word\nword word\n"

      assert {:ok, json} = Session.read_file(session, "/out/summary.json")
      assert json == ~s({"codes": [7, 42], "counts": {"error": 2, "info": 1, "warn": 1}})
    end

    test "an exception prints a traceback on stderr and exits 1", %{session: session} do
      result =
        run(session, ~S"""
        python3 -c "
        def parse(text):
            return int(text)
        parse('x')
        "
        echo "exit $?"
        """)

      assert result.stdout == "exit 1\n"
      assert result.stderr =~ "Traceback (most recent call last):"
      assert result.stderr =~ "in parse"
      assert result.stderr =~ "ValueError: invalid literal for int() with base 10: 'x'"
    end

    test "sys.exit codes, -c, -m, a script on stdin, and the session's environment", %{
      session: session
    } do
      assert %Result{exit_code: 3} = run(session, ~S|python3 -c "import sys; sys.exit(3)"|)

      assert %Result{stdout: "from stdin\n"} =
               run(session, ~S{echo "print('from stdin')" | python3})

      assert %Result{stdout: "[1,2]\n"} =
               run(session, ~S{echo '[1,2]' | python3 -m json.tool --compact})

      assert %Result{stdout: "4 /work\n"} =
               run(
                 session,
                 ~S|export N=4; mkdir -p /work; cd /work; python3 -c "import os; print(os.environ['N'], os.getcwd())"|
               )
    end

    test "the runtime chosen by name, under other command names" do
      session = Session.new(python: [runtime: :cpython, names: ["py", "python3.14"]])

      assert %Result{stdout: "3.14\n"} =
               run(session, ~S|py -c "import sys; print('%d.%d' % sys.version_info[:2])"|)

      assert %Result{stdout: "ok\n"} = run(session, ~S|python3.14 -c "print('ok')"|)
      assert %Result{exit_code: 127} = run(session, "python3 -c 1")
    end

    test "python: true is still Monty", %{session: session} do
      monty = Session.new(python: true)
      assert run(monty, ~S|python3 -c "import re"|).stderr =~ "importing module 're' is disabled"

      assert %Result{stdout: "ab\n"} =
               run(session, ~S|python3 -c "import re; print(re.sub('x', '', 'xaxb'))"|)
    end
  end

  describe "files" do
    test "bash, the file API and Python see each other's files", %{session: session} do
      :ok = Session.write_file(session, "/data/in.bin", <<0, 1, 2, 255>>)

      result =
        run(session, """
        echo 'from bash' > /data/bash.txt
        python3 -c "
        import os
        with open('/data/python.txt', 'w') as f:
            f.write(open('/data/bash.txt').read().strip().upper())
        os.makedirs('/data/sub')
        open('/data/sub/bytes', 'wb').write(bytes(reversed(open('/data/in.bin', 'rb').read())))
        print(sorted(os.listdir('/data')))
        "
        cat /data/python.txt
        """)

      assert result.stdout == "['bash.txt', 'in.bin', 'python.txt', 'sub']\nFROM BASH"
      assert {:ok, <<255, 2, 1, 0>>} = Session.read_file(session, "/data/sub/bytes")
      assert {:ok, "FROM BASH"} = Session.read_file(session, "/data/python.txt")

      # Raw bytes on stdout reach the result as they are.
      result =
        run(session, ~S|python3 -c "import sys; sys.stdout.buffer.write(bytes(range(256)))"|)

      assert result.stdout == :binary.list_to_bin(Enum.to_list(0..255))
    end

    test "a file the session's limits refuse is an OSError in Python" do
      session = Session.new(python: :cpython, limits: [max_file_bytes: 1_000])

      result =
        run(session, ~S"""
        python3 -c "
        try:
            with open('/big', 'w') as f:
                f.write('x' * 5000)
        except OSError as e:
            print('refused', type(e).__name__)
        "
        """)

      assert result.stdout =~ "refused"
      refute match?({:ok, "xxxxx" <> _}, Session.read_file(session, "/big"))
    end
  end

  describe "what the guest cannot reach" do
    test "no host file, process, socket, thread or native code", %{session: session} do
      secret = Path.join(host_dir!("cpython"), "secret.txt")
      File.write!(secret, "host secret")

      attempts = %{
        "host_file" => "print(open(#{inspect(secret)}).read())",
        "etc_shadow" => "open('/etc/shadow').read()",
        "os_system" => "os.system('echo pwned > /pwned')",
        "subprocess" => "import subprocess; subprocess.run(['ls'])",
        "fork" => "os.fork()",
        "socket" => "import socket; socket.create_connection(('127.0.0.1', 22), timeout=1)",
        "thread" => "import threading; t = threading.Thread(target=print); t.start(); t.join()",
        "ctypes" => "import ctypes; ctypes.CDLL(None)"
      }

      for {name, code} <- attempts do
        script = """
        import os
        try:
            exec(#{inspect(code)})
            print('REACHED')
        except BaseException as e:
            print('blocked', type(e).__name__)
        """

        :ok = Session.write_file(session, "/attempt.py", script)
        result = run(session, "python3 /attempt.py")
        assert result.stdout =~ "blocked", "#{name}: #{inspect(result)}"
        refute result.stdout =~ "REACHED"
        refute result.stdout =~ "host secret"
      end

      assert {:error, _} = Session.read_file(session, "/pwned")
      assert File.read!(secret) == "host secret"
    end

    test "HTTP only to what :allow_net allows" do
      {_server, port} = HttpServer.start()
      url = "http://127.0.0.1:#{port}/api/py"

      fetch =
        ~s|python3 -c "import urllib.request; print(urllib.request.urlopen('#{url}').read().decode())"|

      closed = Session.new(python: :cpython, block_private_ips: false)
      result = run(closed, fetch)
      assert result.exit_code == 1
      assert result.stderr =~ "Error"
      refute_received {:http_request, _}

      open = Session.new(python: :cpython, allow_net: [url], block_private_ips: false)
      assert %Result{stdout: "hit /api/py\n"} = run(open, fetch)
      assert_received {:http_request, "/api/py"}

      other = "http://127.0.0.1:#{port}/other"

      result =
        run(open, ~s|python3 -c "import urllib.request; urllib.request.urlopen('#{other}')"|)

      assert result.exit_code == 1
      refute_received {:http_request, _}
    end
  end

  describe "limits" do
    test "an infinite loop ends at the session's timeout_ms, and the script goes on" do
      # Loaded first, so that loading the guest (slow on a loaded machine)
      # does not eat into the script's time before Python starts.
      assert ExBashkit.warm_up() == :ok
      session = Session.new(python: :cpython, limits: [timeout_ms: 3_000])
      result = run(session, ~S|python3 -c "while True: pass"; echo "exit $?"|)

      assert result.stdout == "exit 124\n"
      # Four fifths of timeout_ms: 0.6 s left for the script to go on.
      assert result.stderr =~ "python3: execution timed out after 2.4s"
      assert %Result{stdout: "ok\n"} = run(session, ~S|python3 -c "print('ok')"|)
    end

    test "a per-call timeout_ms stops a loop too", %{session: session} do
      assert {:error, %Error{reason: :timeout}} =
               Session.exec(session, ~S|python3 -c "while True: pass"; sleep 30|,
                 timeout_ms: 1_000,
                 errors: :struct
               )
    end

    test "cancel stops a running Python loop", %{session: session} do
      task =
        Task.async(fn ->
          Session.exec(session, ~S|python3 -c "while True: pass"|, errors: :struct)
        end)

      assert wait_until(fn -> Session.cancel(session) == :ok end)
      assert {:error, %Error{reason: :cancelled}} = Task.await(task, 10_000)
      assert %Result{stdout: "after\n"} = run(session, ~S|python3 -c "print('after')"|)
    end

    test "recursion, memory and output caps come from :limits" do
      session =
        Session.new(
          python: :cpython,
          limits: [
            max_python_recursion: 50,
            max_python_memory_bytes: 96 * 1024 * 1024,
            max_stdout_bytes: 100
          ]
        )

      :ok = Session.write_file(session, "/deep.py", "def f(n):\n    return f(n + 1)\nf(0)\n")
      result = run(session, "python3 /deep.py")
      assert result.stderr =~ "RecursionError"

      result = run(session, ~S|python3 -c "x = bytearray(200 * 1024 * 1024)"|)
      assert result.stderr =~ "MemoryError"

      result = run(session, ~S|python3 -c "print('y' * 10_000)"|)
      assert byte_size(result.stdout) == 100
      assert result.truncated
    end

    test "bad :python options and Python limits raise ArgumentError naming them" do
      for {opts, message} <- [
            {[python: :jython], ":python must be"},
            {[python: [runtime: :jython]], ":python runtime must be one of [:monty, :cpython]"},
            {[python: [runtime: :cpython, flavour: 1]], "unknown :python key :flavour"},
            {[python: [runtime: :cpython, names: []]], ":python must be"},
            {[python: [runtime: :cpython, name: "py", names: ["x"]]], ":python must be"},
            {[python: [name: "a", name: "b"]], ":python must be"},
            {[python: []], ":python must be"},
            {[python: :cpython, limits: [max_python_memory_bytes: 1_000_000]],
             ":max_python_memory_bytes must be between 64 MiB and 1 GiB"},
            {[python: :cpython, limits: [max_python_memory_bytes: 2 * 1024 ** 3]],
             ":max_python_memory_bytes must be between 64 MiB and 1 GiB"},
            {[limits: [max_python_recursion: -1]], ":max_python_recursion must be a non-negative"}
          ] do
        error = assert_raise ArgumentError, fn -> Session.new(opts) end
        assert error.message =~ message
      end

      # Monty takes small memory caps.
      assert %Session{} = Session.new(python: true, limits: [max_python_memory_bytes: 1_000_000])
    end
  end

  test "50 concurrent calls across sessions all complete" do
    results =
      1..50
      |> Task.async_stream(
        fn i ->
          session = Session.new(python: :cpython)

          {i,
           run(session, ~s|python3 -c "import json; print(json.dumps(sum(range(#{i * 10}))))"|)}
        end,
        max_concurrency: 50,
        timeout: 60_000
      )
      |> Enum.map(fn {:ok, value} -> value end)

    for {i, result} <- results do
      assert result.stdout == "#{Enum.sum(0..(i * 10 - 1))}\n"
    end
  end
end
