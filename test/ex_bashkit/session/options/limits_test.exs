defmodule ExBashkit.LimitsTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.Test.Memory

  @moduletag timeout: 120_000

  # {limit, value, script that trips it, the words of bashkit's message}
  @tripped [
    {:max_commands, 5, "for i in 1 2 3 4 5 6 7 8; do echo $i; done", "maximum command count"},
    {:max_loop_iterations, 3, "for i in 1 2 3 4; do :; done", "maximum loop iterations"},
    {:max_total_loop_iterations, 10, "for i in 1 2 3 4; do for j in 1 2 3 4; do :; done; done",
     "maximum total loop iterations"},
    {:max_function_depth, 5, "f() { f; }; f", "maximum function depth"},
    {:max_input_bytes, 20, "echo 12345678901234567890", "input too large"},
    {:timeout_ms, 100, "sleep 5", "execution timeout"},
    {:max_memory_bytes, 10_000, "x=ab; while true; do x=$x$x; done", "variable byte limit"}
    # :parser_timeout_ms is in parser_timeout_test.exs, which runs alone.
  ]

  describe "each limit" do
    for {limit, value, script, words} <- @tripped do
      @limit limit
      @value value
      @script script
      @words words

      test "#{limit} is reported as an error naming it, and the session survives" do
        session = Session.new(limits: [{@limit, @value}])
        Session.exec(session, "marker=alive")

        assert {:error, message} = Session.exec(session, @script)
        assert message =~ @words
        assert message =~ "(limit #{inspect(@limit)})"
        assert {:ok, %Result{stdout: "alive\n"}} = Session.exec(session, "echo $marker")
      end
    end

    test "unset keys keep bashkit's defaults" do
      session = Session.new(limits: [max_function_depth: 50])

      assert {:error, message} = Session.exec(session, "for i in $(seq 20000); do :; done")
      assert message =~ "maximum command count exceeded (10000)"
    end

    test "a timeout stops a busy loop, not only a sleep" do
      session =
        Session.new(
          limits: [timeout_ms: 200, max_commands: 2 ** 62, max_loop_iterations: 2 ** 62]
        )

      # The message names the limit that ended it: the clock, not a count.
      result = Session.exec(session, "while true; do :; done")

      assert {:error, message} = result
      assert message =~ "(limit :timeout_ms)"
    end

    test "limits hold for every script, not only the first" do
      session = Session.new(limits: [max_commands: 3])

      for _ <- 1..3 do
        assert {:error, _} = Session.exec(session, "echo 1; echo 2; echo 3; echo 4")
        assert {:ok, %Result{stdout: "1\n"}} = Session.exec(session, "echo 1")
      end
    end

    test "scripts over 1 MB are refused by default" do
      assert {:error, message} = Session.exec(Session.new(), String.duplicate("#", 1_000_001))

      assert message =~
               "input too large (1000001 bytes, max 1000000 bytes) (limit :max_input_bytes)"

      assert {:ok, _} = Session.exec(Session.new(), String.duplicate("#", 1_000_000))
    end

    test "max_background_jobs bounds concurrent & jobs" do
      session = Session.new(limits: [max_background_jobs: 2])

      assert %Result{stderr: stderr} = run(session, "sleep 0.05 & sleep 0.05 & sleep 0.05 & wait")
      assert stderr =~ "max 2 background jobs"
    end

    # Each of these took bashkit seconds to minutes, or hundreds of MB,
    # without yielding; the test's timeout is far shorter.
    @tag timeout: 5_000
    test "deep nesting is refused before parsing" do
      session = Session.new()

      for open <- ["+(", "$((", "{", "$(", "("] do
        script = "shopt -s extglob; [[ x == " <> String.duplicate(open, 100_000) <> " ]]"
        assert {:error, message} = Session.exec(session, script)

        assert message =~
                 "nests ( or {, compound commands or time prefixes more than 200 levels deep (limit :max_ast_depth"
      end

      assert {:error, _} = ExBashkit.exec(String.duplicate("{", 500_000))
      assert %Result{stdout: "ok\n"} = run(session, "echo ok")
    end

    test "the nesting bound follows :max_ast_depth" do
      nested = fn depth ->
        String.duplicate("( ", depth) <> "echo in" <> String.duplicate(" )", depth)
      end

      session = Session.new(limits: [max_ast_depth: 10])

      assert {:error, message} = Session.exec(session, nested.(21))
      assert message =~ "more than 20 levels deep"
      assert %Result{stdout: "in\n"} = run(Session.new(), nested.(20))
    end

    test "a map works as well as a keyword list" do
      session = Session.new(limits: %{max_commands: 1})
      assert {:error, _} = Session.exec(session, "echo 1; echo 2")
    end

    test "a count past the platform maximum means unlimited" do
      session = Session.new(limits: [max_loop_iterations: 2 ** 70, max_commands: 2 ** 70])

      assert {:ok, %Result{stdout: "20000\n"}} =
               Session.exec(session, "n=0; for i in $(seq 20000); do n=$((n+1)); done; echo $n")
    end
  end

  describe "output caps" do
    test "stdout and stderr keep their first bytes and report the truncation" do
      session = Session.new(limits: [max_stdout_bytes: 10, max_stderr_bytes: 3])

      assert {:ok, %Result{stdout: "1234567890", stderr: "abc", truncated: true}} =
               Session.exec(session, "echo 12345678901234567890; echo abcdef >&2")
    end

    test "output under the cap is whole and not flagged" do
      session = Session.new(limits: [max_stdout_bytes: 10])

      assert {:ok, %Result{stdout: "123456789\n", truncated: false}} =
               Session.exec(session, "echo 123456789")
    end

    test "the default cap is 1 MiB of stdout" do
      session = Session.new()
      {:ok, result} = Session.exec(session, "for i in $(seq 3000); do printf '%01000d' 0; done")

      assert byte_size(result.stdout) == 1_048_576
      assert result.truncated
    end
  end

  describe "filesystem caps" do
    test "a file over :max_file_bytes is refused with a message" do
      session = Session.new(limits: [max_file_bytes: 100])

      assert {:ok, %Result{exit_code: 1, stderr: stderr}} =
               Session.exec(session, "head -c 200 /dev/zero > /a")

      assert stderr =~ "file too large"

      assert {:error, "/b: file too large" <> _} =
               Session.write_file(session, "/b", String.duplicate("x", 101))

      assert :ok = Session.write_file(session, "/b", String.duplicate("x", 100))
    end

    test ":max_fs_bytes bounds the whole filesystem" do
      session = Session.new(limits: [max_fs_bytes: 1_000])

      assert :ok = Session.write_file(session, "/a", String.duplicate("x", 600))
      assert {:error, message} = Session.write_file(session, "/b", String.duplicate("x", 600))
      assert message =~ "/b"
      assert {:ok, %Result{exit_code: 1}} = Session.exec(session, "head -c 600 /dev/zero > /c")
    end

    test ":max_file_count bounds the number of files" do
      session = Session.new(limits: [max_file_count: 20])

      {:ok, result} =
        Session.exec(
          session,
          "for i in $(seq 30); do touch /f$i || break; done; ls / | grep -c '^f'"
        )

      created = result.stdout |> String.trim() |> String.to_integer()

      assert created < 20
      assert result.stderr =~ "too many files"
    end

    test "appending toward 2 GB stops at the file cap with an error, memory bounded" do
      session = Session.new(limits: [max_file_bytes: 5_000_000])
      before = Memory.rss_kb()

      script = """
      chunk=$(head -c 1000000 /dev/zero | tr '\\0' a)
      for i in $(seq 2000); do echo "$chunk" >> /big || { echo stopped at $i; break; }; done
      """

      assert {:ok, %Result{stdout: stdout, stderr: stderr}} = Session.exec(session, script)
      assert stdout =~ "stopped at"
      assert stderr =~ "file too large"
      assert {:ok, %{size: size}} = Session.stat(session, "/big")
      assert size <= 5_000_000
      assert Memory.rss_kb() - before < 200_000
    end
  end

  describe "hostile growth stays bounded" do
    test "string doubling, a 2 GB write and a 200 MB pipe each end bounded" do
      session = Session.new()
      before = Memory.rss_kb()

      assert {:error, message} = Session.exec(session, "x=ab; while true; do x=$x$x; done")
      assert message =~ "memory limit exceeded"

      # bashkit's /dev/zero yields at most 1 MiB per open.
      assert {:ok, %Result{}} = Session.exec(session, "head -c 2000000000 /dev/zero > /big")
      assert {:ok, %{size: size}} = Session.stat(session, "/big")
      assert size <= 10_000_000

      # `yes` stops itself at 10,000 lines.
      assert {:ok, %Result{stdout: stdout}} =
               Session.exec(session, "yes | head -c 200000000 | wc -c")

      assert String.to_integer(String.trim(stdout)) <= 1_048_576

      assert Memory.rss_kb() - before < 200_000
    end
  end

  describe "validation" do
    test "every key is accepted" do
      limits = Enum.map(ExBashkit.Session.Options.limit_keys(), &{&1, 1_000})
      assert %Session{} = Session.new(limits: limits)
    end

    test "the keys are those of native/ex_bashkit/limits.table, each told in the docs" do
      table = File.read!(Path.expand("../../../../native/ex_bashkit/limits.table", __DIR__))

      from_table =
        for line <- String.split(table, "\n"),
            line =~ ~r/^[a-z_]+ \|/,
            do: line |> String.split(" |") |> hd() |> String.to_atom()

      assert ExBashkit.Session.Options.limit_keys() == from_table
      assert length(from_table) == 23

      {:docs_v1, _, _, _, %{"en" => session_doc}, _, _} = Code.fetch_docs(Session)
      guide = File.read!(Path.expand("../../../../guides/limits.md", __DIR__))

      for key <- from_table do
        assert session_doc =~ "`#{inspect(key)}` —", "#{key} not in Session's docs"
        assert guide =~ "`#{inspect(key)}`", "#{key} not in guides/limits.md"
      end
    end

    test "an unknown key raises naming it" do
      assert_raise ArgumentError, ~r/unknown limit :max_cpu in :limits/, fn ->
        Session.new(limits: [max_cpu: 1])
      end
    end

    test "counts must be non-negative integers" do
      for key <- ExBashkit.Session.Options.limit_keys() -- [:timeout_ms],
          bad <- [-1, 1.5, "10", nil] do
        assert_raise ArgumentError, ~r/#{key}/, fn -> Session.new(limits: [{key, bad}]) end
      end

      assert %Session{} = Session.new(limits: [max_commands: 0])
    end

    test "timeout_ms must be at least 1" do
      for bad <- [0, -5, 1.0, :infinity] do
        assert_raise ArgumentError, ~r/:timeout_ms must be a positive integer/, fn ->
          Session.new(limits: [timeout_ms: bad])
        end
      end

      assert %Session{} = Session.new(limits: [timeout_ms: 2 ** 80])
    end

    test "limits must be a keyword list or map" do
      assert_raise ArgumentError, ~r/:limits must be/, fn -> Session.new(limits: 5) end

      assert_raise ArgumentError, ~r/:limits entries/, fn ->
        Session.new(limits: [:max_commands])
      end
    end
  end
end
