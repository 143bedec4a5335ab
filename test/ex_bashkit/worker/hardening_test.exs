defmodule ExBashkit.HardeningTest do
  # Not async: some tests set the operator ceilings in the application env.
  use ExBashkit.Case, async: false

  import ExUnit.CaptureLog

  @moduletag timeout: 60_000

  alias ExBashkit.Test.LoudInspect

  defp put_env(key, value) do
    Application.put_env(:ex_bashkit, key, value)
    on_exit(fn -> Application.delete_env(:ex_bashkit, key) end)
  end

  describe "mount points are normalized before they are compared" do
    test "a host mount at /v/ and a virtual mount at /v overlap" do
      host = host_dir!("overlap")

      assert_raise ArgumentError,
                   ~r/mount \{"\/v", .*\} and :virtual_fs mount "\/v" overlap/,
                   fn ->
                     Session.new(
                       mounts: [{"/v/", host, :read_only}],
                       virtual_fs: %{"/v" => fn _ -> :ok end}
                     )
                   end
    end

    test "virtual mounts at /v and /v/, or nested, are refused" do
      backend = fn _ -> {:error, :enoent} end

      assert_raise ArgumentError, ~r/more than one mount at "\/v"/, fn ->
        Session.new(virtual_fs: %{"/v" => backend, "/v/" => backend})
      end

      assert_raise ArgumentError, ~r/"\/v" and :virtual_fs mount "\/v\/w" overlap/, fn ->
        Session.new(virtual_fs: %{"/v" => backend, "/v/w" => backend})
      end
    end

    test "a normalized mount point is where the mount appears" do
      backend = fn
        %{op: :read, path: path} -> {:ok, path}
        _ -> {:error, :enotsup}
      end

      session = Session.new(virtual_fs: %{"//v///" => backend})
      assert %Result{stdout: "/f"} = run(session, "cat /v/f")
    end
  end

  describe "options that were silently wrong" do
    test "a :builtin_timeout_ms past the timer ceiling works" do
      log =
        capture_log(fn ->
          session =
            Session.new(
              builtins: %{"hi" => fn _ -> {:ok, "hi\n"} end},
              builtin_timeout_ms: 10 ** 15
            )

          assert %Result{stdout: "hi\n", exit_code: 0} = run(session, "hi")
        end)

      refute log =~ "crash"
    end

    test "a :python command that is also a builtin name is refused, naming both" do
      assert_raise ArgumentError, ~r/:python command "python" is also a :builtins name/, fn ->
        Session.new(python: true, builtins: %{"python" => fn _ -> {:ok, ""} end})
      end

      assert_raise ArgumentError, ~r/:python command "py" is also a :builtins name/, fn ->
        Session.new(python: [name: "py"], builtins: [py: fn _ -> {:ok, ""} end])
      end
    end

    test "two builtins with one name are refused" do
      assert_raise ArgumentError, ~r/:builtins has more than one entry named "x"/, fn ->
        Session.new(builtins: [{"x", fn _ -> {:ok, "1"} end}, {:x, fn _ -> {:ok, "2"} end}])
      end
    end

    test "name errors name the option they come from, and say UTF-8 when it is that" do
      assert_raise ArgumentError, ~r/^:python builtin names must be non-empty/, fn ->
        Session.new(python: [name: "my py"])
      end

      assert_raise ArgumentError, ~r/^:python builtin names must be valid UTF-8/, fn ->
        Session.new(python: [names: [<<0xFF>>]])
      end

      assert_raise ArgumentError, ~r/^:builtins names must be valid UTF-8/, fn ->
        Session.new(builtins: %{<<0xC3>> => fn _ -> {:ok, ""} end})
      end
    end
  end

  describe "callbacks and the file API" do
    test "the file API cannot reach a virtual mount through a symlink, even mid-script" do
      test = self()

      backend = fn
        %{op: :read, path: "/slow"} ->
          send(test, :script_running)
          Process.sleep(300)
          {:ok, "slow"}

        %{op: :stat} ->
          {:ok, %{type: :file, size: 4}}

        %{op: :read} ->
          {:ok, "data"}

        _ ->
          {:error, :enotsup}
      end

      session = Session.new(virtual_fs: %{"/v" => backend})
      assert %Result{exit_code: 0} = run(session, "ln -s /v/x /lx; mkdir /d; ln -s /v /d/lv")
      script = Task.async(fn -> Session.exec(session, "cat /v/slow") end)
      assert_receive :script_running

      log =
        capture_log(fn ->
          assert {:error, _} = Session.read_file(session, "/lx")
          assert {:error, _} = Session.stat(session, "/lx")
          assert {:error, _} = Session.write_file(session, "/lx", "x")
          assert {:error, _} = Session.read_file(session, "/d/lv/x")
          assert {:error, _} = Session.list_dir(session, "/d/lv")
          assert {:error, _} = Session.mkdir(session, "/d/lv/new")
          assert {:error, _} = Session.rename(session, "/d/lv/x", "/d/lv/y")
        end)

      refute log =~ "panic"
      assert {:ok, %Result{stdout: "slow"}} = Task.await(script)
      # The symlinks themselves are ordinary files of the session.
      assert :ok = Session.remove(session, "/lx")
    end

    test "a builtin whose process exits :normal without answering fails at once" do
      # Both timeouts are a minute and the test's own timeout is ten seconds:
      # only an immediate answer lets it pass.
      session =
        Session.new(
          builtins: %{"quit" => fn _ -> Process.exit(self(), :normal) end},
          builtin_timeout_ms: 60_000,
          limits: [timeout_ms: 60_000]
        )

      assert %Result{stdout: "after 1\n", stderr: stderr} = run(session, "quit; echo after $?")
      assert stderr =~ "quit: the callback process stopped: it exited without answering"
    end

    @tag timeout: 10_000
    test "a virtual_fs backend whose process exits :normal without answering fails at once" do
      backend = fn _ -> Process.exit(self(), :normal) end

      session =
        Session.new(
          virtual_fs: %{"/v" => backend},
          builtin_timeout_ms: 60_000,
          limits: [timeout_ms: 60_000]
        )

      assert %Result{exit_code: 1, stderr: stderr} = run(session, "cat /v/f")
      assert stderr =~ "exited without answering"
    end

    test "a stat size of 2^64 or more is an invalid reply, not a crash" do
      backend = fn
        %{op: :stat} -> {:ok, %{type: :file, size: 2 ** 64}}
        _ -> {:ok, "x"}
      end

      log =
        capture_log(fn ->
          session = Session.new(virtual_fs: %{"/v" => backend})
          assert %Result{exit_code: 1} = run(session, "stat -c %s /v/f")
          assert %Result{exit_code: 1} = run(session, "test -f /v/f")
          assert %Result{stdout: "ok\n"} = run(session, "echo ok")
        end)

      refute log =~ ~r/crash|error/i
    end

    test "the callback server ignores messages it cannot attribute" do
      forge = fn _ ->
        {:links, links} = Process.info(self(), :links)

        for server <- links do
          send(server, {:EXIT, self(), :normal})
          send(server, {:EXIT, self(), :kill})
          send(server, {:DOWN, make_ref(), :process, self(), :normal})
          send(server, {:timeout, make_ref()})
          send(server, :stop)
          send(server, {:stop, make_ref()})
          send(server, {:ex_bashkit_call, make_ref(), {:builtin, "after", [], "", %{}, "/"}})
          send(server, {:ex_bashkit_call, :not_a_call, :junk})
        end

        {:ok, "forged\n"}
      end

      log =
        capture_log(fn ->
          session =
            Session.new(builtins: %{"forge" => forge, "after" => fn _ -> {:ok, "after\n"} end})

          assert %Result{stdout: "forged\nafter\n", exit_code: 0} = run(session, "forge; after")
          Process.sleep(50)
        end)

      refute log =~ ~r/crash|error/i
    end
  end

  describe "config :ex_bashkit, :max_reply_bytes" do
    setup do
      put_env(:max_reply_bytes, 16)
    end

    test "an over-cap builtin reply fails that command; the session lives on" do
      session =
        Session.new(
          builtins: %{
            "big" => fn _ -> {:ok, String.duplicate("A", 1_000)} end,
            "bigerr" => fn _ -> %Result{stderr: String.duplicate("e", 1_000)} end,
            "small" => fn _ -> {:ok, "0123456789"} end
          }
        )

      assert %Result{stdout: "", exit_code: 1, stderr: stderr} = run(session, "big")
      assert stderr =~ "exceeds the 16-byte reply limit"
      assert %Result{exit_code: 1, stderr: stderr} = run(session, "bigerr")
      assert stderr =~ "exceeds the 16-byte reply limit"
      assert %Result{stdout: "0123456789", exit_code: 0} = run(session, "small")
    end

    test "failure text is truncated, whatever an exception or Inspect produces" do
      session =
        Session.new(
          builtins: %{
            "raise" => fn _ -> raise String.duplicate("z", 5_000) end,
            "throw" => fn _ -> throw(%LoudInspect{}) end,
            "junk" => fn _ -> %LoudInspect{} end
          }
        )

      for name <- ["raise", "throw", "junk"] do
        assert %Result{exit_code: 1, stderr: stderr} = run(session, name)
        assert byte_size(stderr) < 64, name
      end
    end

    test "over-cap virtual_fs reads, listings and error reasons fail that operation" do
      names = for i <- 1..10, do: <<?a + i>>

      backend = fn
        %{op: :read, path: "/big"} -> {:ok, String.duplicate("A", 1_000)}
        %{op: :read} -> {:error, String.duplicate("x", 5_000)}
        # 10 one-byte names fit 16 bytes; with per-entry overhead they do not.
        %{op: :list} -> {:ok, names}
        %{op: :stat, path: "/"} -> {:ok, %{type: :dir}}
        %{op: :stat} -> {:ok, %{type: :file, size: 1}}
      end

      session = Session.new(virtual_fs: %{"/v" => backend})

      assert %Result{exit_code: 1, stderr: stderr} = run(session, "cat /v/big")
      assert stderr =~ "exceeds the 16-byte reply limit"
      assert %Result{exit_code: code, stderr: stderr} = run(session, "ls /v")
      assert code != 0
      assert stderr =~ "reply of 330 bytes exceeds the 16-byte reply limit"
      assert %Result{exit_code: 1, stderr: stderr} = run(session, "cat /v/other")
      assert byte_size(stderr) < 100
      assert %Result{stdout: "hi\n"} = run(session, "echo hi")
    end

    test "nil or a malformed value does not disable the cap" do
      session =
        Session.new(
          builtins: %{
            "big" => fn _ -> {:ok, :binary.copy("A", 16_000_001)} end,
            "small" => fn _ -> {:ok, "hi"} end
          }
        )

      for value <- [nil, :infinity, -1, "16", 1.5] do
        put_env(:max_reply_bytes, value)
        assert %Result{exit_code: 1, stderr: stderr} = run(session, "big")
        assert stderr =~ "exceeds the 16000000-byte reply limit", inspect(value)
        assert %Result{stdout: "hi"} = run(session, "small")
      end
    end
  end

  describe "config :ex_bashkit, :max_timeout_ms" do
    test "a session asking for more than the ceiling raises; at or under is accepted" do
      put_env(:max_timeout_ms, 5_000)

      assert_raise ArgumentError,
                   ~r/exceeds the configured :max_timeout_ms ceiling of 5000/,
                   fn ->
                     Session.new(limits: [timeout_ms: 60_000])
                   end

      assert %Result{stdout: "hi\n"} = run(Session.new(limits: [timeout_ms: 5_000]), "echo hi")
    end

    test "the default timeout is lowered to the ceiling, for sessions and exec/1" do
      put_env(:max_timeout_ms, 100)

      assert {:error, message} = Session.exec(Session.new(), "sleep 5")
      assert message =~ "timeout_ms"
      assert {:error, message} = ExBashkit.exec("sleep 5")
      assert message =~ "timeout_ms"
    end

    test "a malformed ceiling raises loudly" do
      for value <- ["nope", 0, -5, :infinity] do
        put_env(:max_timeout_ms, value)

        assert_raise ArgumentError, ~r/:max_timeout_ms must be a positive integer or nil/, fn ->
          Session.new(limits: [timeout_ms: 1_000])
        end
      end
    end

    test "without a ceiling a large :timeout_ms is accepted" do
      assert %Result{} = run(Session.new(limits: [timeout_ms: 600_000]), "true")
    end
  end

  describe "restore/3 bounds a snapshot before decoding it" do
    test "a forged snapshot that inflates past :max_snapshot_bytes is refused" do
      # 2 MB of zeros deflate to a couple of KB; unkeyed snapshots carry a
      # public tag anyone can compute.
      forged = forged_snapshot(inflating_to: 2_000_000)
      assert byte_size(forged) < 10_000

      session = Session.new(limits: [max_snapshot_bytes: 1_000_000])
      assert {:error, message} = Session.restore(session, forged)
      assert message =~ "decodes to more than 1000000 bytes (limit :max_snapshot_bytes)"
      assert %Result{stdout: "alive\n"} = run(session, "echo alive")
    end

    test "the default bound follows the session's filesystem and memory limits" do
      forged = forged_snapshot(inflating_to: 3_000_000)
      small = Session.new(limits: [max_fs_bytes: 1_000_000, max_memory_bytes: 100_000])

      # 1 MB + 100 KB + 16 MiB of room: 3 MB fits, so bashkit sees (and
      # rejects) this malformed snapshot itself.
      assert {:error, message} = Session.restore(small, forged)
      refute message =~ "max_snapshot_bytes"

      assert {:error, message} = Session.restore(small, forged_snapshot(inflating_to: 20_000_000))
      assert message =~ "(limit :max_snapshot_bytes)"
    end

    test "a real snapshot within the bound restores" do
      # Random bytes: neither deduplicated nor compressed in the snapshot.
      source = Session.new(files: %{"/data" => :crypto.strong_rand_bytes(200_000)})
      {:ok, bytes} = Session.snapshot(source)

      target = Session.new(limits: [max_snapshot_bytes: 1_000_000])
      assert {:ok, _} = Session.restore(target, bytes)
      assert {:ok, data} = Session.read_file(target, "/data")
      assert byte_size(data) == 200_000

      too_small = Session.new(limits: [max_snapshot_bytes: 100_000])
      assert {:error, message} = Session.restore(too_small, bytes)
      assert message =~ ":max_snapshot_bytes"
    end
  end

  describe "a VM without room for the interpreter threads" do
    # Each interpreter thread reserves a 1 GiB stack. Under `ulimit -v` set
    # 1 GiB above what the VM needs without them, the threads cannot start.
    test "gets errors naming the cause, not a panic" do
      probe = ~S"""
      {:ok, _} = Application.ensure_all_started(:ex_bashkit)
      [kib] = Regex.run(~r/VmSize:\s+(\d+)/, File.read!("/proc/self/status"), capture: :all_but_first)
      IO.write(kib)
      """

      {kib, 0} = elixir(probe)
      limit = String.to_integer(kib) + 1024 * 1024

      script = ~S"""
      {:ok, _} = Application.ensure_all_started(:ex_bashkit)
      IO.inspect(ExBashkit.exec("echo hi"), width: :infinity)
      IO.inspect(try do ExBashkit.Session.new() rescue e -> e end, width: :infinity)
      IO.inspect(ExBashkit.exec("echo again"), width: :infinity)
      IO.inspect(ExBashkit.stats().threads)
      """

      {output, 0} = elixir(script, "ulimit -v #{limit}; ")
      assert [exec, new, again, threads] = String.split(output, "\n", trim: true)
      assert exec =~ ~s|{:error, "cannot start the interpreter threads:|
      assert exec =~ "ulimit -v"
      assert new =~ ~s|%ArgumentError{|
      assert new =~ "cannot start the interpreter threads"
      assert again == exec
      assert threads == "0"
    end

    defp elixir(script, prefix \\ "") do
      paths = Enum.map_join(:code.get_path(), " ", &"-pa '#{&1}'")
      elixir = System.find_executable("elixir")
      System.cmd("bash", ["-c", "#{prefix}exec #{elixir} #{paths} -e \"$0\"", script])
    end
  end

  describe "panics inside the interpreter" do
    @tomlq_panic ~S"printf 'k = 1 \e[31mX é#\n' | tomlq ."

    test "are logged escaped and rate-limited, and the session lives on" do
      session = Session.new()

      log =
        capture_log(fn ->
          for _ <- 1..12 do
            assert %Result{exit_code: 1} = run(session, @tomlq_panic)
          end

          # Each report reached the reporter before its script answered.
          :sys.get_state(ExBashkit.PanicReporter)
          Logger.flush()
        end)

      warnings = length(String.split(log, "panicked inside the interpreter")) - 1
      assert warnings in 1..10
      assert log =~ ~S"\u{1b}[31mX"
      refute log =~ <<27, ?[, ?3, ?1, ?m, ?X>>
      assert %Result{stdout: "alive\n"} = run(session, "echo alive")
    end

    test "print nothing on the VM's stderr" do
      ebin = Path.join(:code.lib_dir(:ex_bashkit), "ebin")

      code = """
      {:ok, _} = Application.ensure_all_started(:ex_bashkit)
      {:ok, r} = ExBashkit.exec(#{inspect(@tomlq_panic)})
      Process.sleep(200)
      IO.puts("exit=\#{r.exit_code}")
      """

      {output, 0} = System.cmd("elixir", ["-pa", ebin, "-e", code], stderr_to_stdout: true)

      assert output =~ "exit=1"
      assert output =~ "panicked inside the interpreter"
      refute output =~ "panicked at"
      refute output =~ <<27>>
    end
  end

  # An unkeyed v2 container (bashkit's snapshot/container.rs) holding one
  # deflated object of `size` zero bytes: the digest is SHA-256 over a
  # public tag and the body.
  defp forged_snapshot(inflating_to: size) do
    z = :zlib.open()
    :ok = :zlib.deflateInit(z, :default, :deflated, -15, 8, :default)
    chunk = :binary.copy(<<0>>, 1_000_000)
    full = div(size, 1_000_000)

    deflated =
      IO.iodata_to_binary([
        for(_ <- 1..full, do: :zlib.deflate(z, chunk)),
        :zlib.deflate(z, :binary.copy(<<0>>, rem(size, 1_000_000)), :finish)
      ])

    :zlib.close(z)
    blob = <<1, deflated::binary>>

    body =
      IO.iodata_to_binary([
        "BKSNAP",
        <<2, 0, 1::little-16, 2::little-16, 1, 0>>,
        :binary.copy(<<7>>, 32),
        <<1::little-32>>,
        :binary.copy(<<9>>, 32),
        <<byte_size(blob)::little-64>>,
        blob
      ])

    :crypto.hash(:sha256, ["BKSNAP01", body]) <> body
  end
end
