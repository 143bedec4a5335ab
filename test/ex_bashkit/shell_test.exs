defmodule ExBashkit.ShellTest do
  # The interactive shell (issue 16) without a terminal: its line editor,
  # continuation rules and flags as units, and whole sessions read from an
  # IO device (as in IEx), attached to a session, a server, and a server on
  # another node. shell/terminal_test.exs drives it through a real terminal.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Server, Shell}
  alias ExBashkit.Shell.{Continuation, LineEditor}
  alias Mix.Tasks.ExBashkit.Shell, as: ShellTask

  @moduletag :tmp_dir

  doctest ExBashkit.Shell

  defp shell(input, opts \\ []), do: ExBashkit.Test.ShellRun.run(input, opts)

  describe "from lines (IEx)" do
    test "runs commands, keeps state, continues open constructs, leaves on exit" do
      input =
        "X=1; cd /tmp\ncat <<EOF\nheredoc $X\nEOF\necho 'a\nb'\nf() { echo f$1\n}\nf 2\nexit\necho never\n"

      {:ok, output} = shell(input)
      assert output =~ "heredoc 1\n"
      assert output =~ "a\nb\n"
      assert output =~ "f2\n"
      assert output =~ "sandbox@bashkit-sandbox:/tmp$ "
      refute output =~ "never"
    end

    test "end of input leaves; errors are reported and the status shown" do
      {:ok, output} = shell("false\necho )\necho oops >&2\n")
      assert output =~ "[1]$ "
      assert output =~ "ex_bashkit: parse error at line 1"
      assert output =~ "[2]$ "
      assert output =~ "oops\nsandbox@bashkit-sandbox:/$ "
    end

    test "^C typed while a script runs interrupts it, and the shell goes on" do
      {:ok, output} = shell("echo begun; sleep 30; echo never\n^C\necho after $?\nexit\n")
      assert output =~ "^C\n"
      assert output =~ "after 0\n"
      refute output =~ "never"
    end

    test "attaches to a session, which keeps what was done" do
      session = Session.new()
      {:ok, output} = shell("echo kept > /kept.txt\ncd /tmp\n", attach: session)
      assert output =~ "sandbox@bashkit-sandbox:/tmp$ "
      assert Session.read_file(session, "/kept.txt") == {:ok, "kept\n"}
    end

    test "saves to a snapshot file and restores from it", %{tmp_dir: dir} do
      path = Path.join(dir, "s.snapshot")
      {:ok, output} = shell("echo one > /one.txt\nexport KEEP=yes\nexit\n", snapshot: path)
      assert output =~ "saved the session to #{path}"
      assert File.exists?(path)
      {:ok, output} = shell("cat /one.txt; echo $KEEP\n", snapshot: path)
      assert output =~ "one\nyes\n"
    end

    test "bad options and unknown servers" do
      assert {:error, "no session server with id " <> _} =
               Shell.start(server: {:nope, make_ref()})

      assert_raise ArgumentError, ~r/:attach/, fn -> Shell.start(attach: "x") end

      assert_raise ArgumentError, ~r/only one of/, fn ->
        Shell.start(attach: self(), isolated: true)
      end

      assert_raise ArgumentError, ~r/:snapshot/, fn -> Shell.start(snapshot: 1) end
      assert_raise ArgumentError, ~r/:input/, fn -> Shell.start(input: :tty) end
    end

    test "a corrupt snapshot file is refused", %{tmp_dir: dir} do
      path = Path.join(dir, "bad.snapshot")
      File.write!(path, "not a snapshot")
      assert {:error, "could not restore " <> _} = Shell.start(snapshot: path, input: :lines)
    end
  end

  describe "attached to servers" do
    test "a server that is gone is reported, and the shell goes on" do
      {:ok, server} = Server.start()
      :ok = Server.stop(server)
      {:ok, output} = shell("echo hi\necho again\n", attach: server)
      assert output =~ "(unavailable)$ "
      assert output =~ "ex_bashkit: session server"
      refute output =~ "hi\n"
    end

    test "a local server by id" do
      id = {:shell_test, make_ref()}
      {:ok, server} = Server.get_or_start(id)
      {:ok, output} = shell("echo $((6 * 7)) | tee /answer\n", server: id)
      assert output =~ "42\n"
      assert Server.read_file(server, "/answer") == {:ok, "42\n"}
      Server.stop(server)
    end

    @tag timeout: 120_000
    test "an isolated session runs on a sandbox node and is stopped on leaving" do
      {:ok, output} = shell("echo isolated; echo $((1 + 1))\n", isolated: true)
      assert output =~ "isolated\n2\n"
      # The shell started its server elsewhere and stopped it when it left.
      assert [_ | _] = ExBashkit.SandboxNode.nodes()

      assert Enum.all?(ExBashkit.SandboxNode.nodes(), fn node ->
               :erpc.call(node, DynamicSupervisor, :which_children, [ExBashkit.Server.Supervisor]) ==
                 []
             end)
    end
  end

  describe "LineEditor" do
    defp type(editor, keys) do
      keys
      |> String.codepoints()
      |> Enum.reduce({:edit, editor}, fn key, {:edit, editor} -> LineEditor.key(editor, key) end)
    end

    test "inserts, moves, deletes" do
      {:edit, e} = type(LineEditor.new(), "echo wrld\e[D\e[D\e[Do")
      assert LineEditor.line(e) == "echo world"
      {:edit, e} = type(e, "\x01X\x05Y")
      assert LineEditor.line(e) == "Xecho worldY"
      {:edit, e} = type(e, "\x7f\x17")
      assert LineEditor.line(e) == "Xecho "
      {:edit, e} = type(e, "\e[Hé\e[3~\x15")
      assert LineEditor.line(e) == "echo "
      {:edit, e} = type(e, "\x05a\x02\x02\x0b")
      assert LineEditor.line(e) == "echo"
      assert {:line, "echo", _} = type(e, "\r")
    end

    test "Ctrl-D ends input only on an empty line; Ctrl-C drops the line" do
      assert {:eof, _} = type(LineEditor.new(), "\x04")
      assert {:edit, e} = type(LineEditor.new(), "ab\x02\x04")
      assert LineEditor.line(e) == "a"
      assert {:interrupt, _} = type(LineEditor.new(), "abc\x03")
    end

    test "history on Up/Down keeps the draft" do
      e =
        LineEditor.new()
        |> LineEditor.next("first")
        |> LineEditor.next("second")
        |> LineEditor.next("second")

      assert e.history == ["second", "first"]
      {:edit, e} = type(e, "dra")
      {:edit, e} = type(e, "\e[A")
      assert LineEditor.line(e) == "second"
      {:edit, e} = type(e, "\e[A\e[A")
      assert LineEditor.line(e) == "first"
      {:edit, e} = type(e, "\e[B\e[B")
      assert LineEditor.line(e) == "dra"
      assert LineEditor.next(e, "") == LineEditor.new(e.history)
    end

    test "renders the line with the cursor where it is" do
      {:edit, e} = type(LineEditor.new(), "abc\e[D")
      assert IO.iodata_to_binary(LineEditor.render(e, "$ ")) == "\r$ abc\e[K\e[1D"
    end
  end

  describe "continuation" do
    test "open ends bash would continue" do
      for open <- ["echo a \\", "a &&", "a ||", "ls |", "cat <<EOF\nx", "cat <<-'END'\n\tx"],
          do: assert(Continuation.open_end?(open), open)

      for whole <- [
            "echo a \\\\",
            "echo a",
            "cat <<EOF\nx\nEOF",
            "cat <<-END\n\tx\n\tEND",
            "a | b"
          ],
          do: refute(Continuation.open_end?(whole), whole)
    end

    test "parse errors that mean the input ended early" do
      for script <- [
            "if true; then",
            "for i in 1; do",
            "echo 'a",
            "echo \"a",
            "echo $(ls",
            "f() {"
          ] do
        {:error, error} = ExBashkit.exec(script, errors: :struct)
        assert error.reason == :parse_error
        assert Continuation.ended_early?(error.message), script
      end

      {:error, error} = ExBashkit.exec("fi", errors: :struct)
      refute Continuation.ended_early?(error.message)
    end
  end

  describe "mix ex_bashkit.shell flags" do
    test "become the shell's options" do
      argv = ~w(--mount /tmp/in:/in --mount /tmp/out:/out:rw --allow-net http://127.0.0.1:1/
           --limit max_commands=10 --env A=b=c --python --cwd /w --snapshot s.bin --isolated)

      assert ShellTask.argv_options(argv) == [
               session: [
                 mounts: [{"/in", "/tmp/in", :read_only}, {"/out", "/tmp/out", :read_write}],
                 allow_net: ["http://127.0.0.1:1/"],
                 limits: [max_commands: 10],
                 env: [{"A", "b=c"}],
                 python: true,
                 cwd: "/w"
               ],
               isolated: true,
               snapshot: "s.bin"
             ]

      assert ShellTask.argv_options(~w(--attach conv-1)) == [server: "conv-1"]
      assert ShellTask.argv_options(~w(--allow-net all)) == [session: [allow_net: :all]]
      assert ShellTask.argv_options(~w(--cpython)) == [session: [python: :cpython]]
    end

    test "--mount mounts the host directory at the path given" do
      dir = host_dir!("shell_flags")
      File.write!(Path.join(dir, "a.txt"), "host\n")
      [session: opts] = ShellTask.argv_options(["--mount", "#{dir}:/in"])
      assert Session.read_file(Session.new(opts), "/in/a.txt") == {:ok, "host\n"}
    end

    test "bad flags raise naming the flag" do
      for {argv, message} <- [
            {~w(--mount nope), "--mount"},
            {~w(--limit max_commands), "--limit"},
            {~w(--limit max_commands=-1), "--limit"},
            {~w(--bogus), "--bogus"},
            {~w(extra), "extra"}
          ] do
        assert_raise Mix.Error, ~r/#{message}/, fn -> ShellTask.argv_options(argv) end
      end
    end
  end
end
