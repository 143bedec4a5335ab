defmodule ExBashkit.ShellTerminalTest do
  # `mix ex_bashkit.shell` as a person uses it: in a real terminal (tmux),
  # typing, editing, interrupting, leaving, and coming back to the session
  # saved in its snapshot file.
  use ExUnit.Case, async: false

  @moduletag :tmux
  @moduletag :tmp_dir
  @moduletag timeout: 180_000

  setup %{tmp_dir: dir} do
    {:ok, socket: new_socket(), snapshot: Path.join(dir, "shell.snapshot")}
  end

  # A tmux server of its own per terminal, gone when the test ends, and
  # its socket file with it (a killed server leaves the file behind).
  defp new_socket do
    socket = ExBashkit.Case.tmp_path("ex_bashkit_test_tmux")

    on_exit(fn ->
      System.cmd("tmux", ["-S", socket, "kill-server"], stderr_to_stdout: true)
      File.rm(socket)
    end)

    socket
  end

  # Starts the shell in a fresh tmux window; the window stays after the
  # shell leaves, with the task's exit status printed.
  defp open(socket, flags) do
    command =
      "cd #{File.cwd!()} && MIX_ENV=test mix ex_bashkit.shell #{flags}; " <>
        "echo SHELL-EXITED rc=$?; sleep 600"

    {_, 0} = tmux(socket, ["new-session", "-d", "-s", "shell", "-x", "200", "-y", "50", command])
  end

  defp tmux(socket, args), do: System.cmd("tmux", ["-S", socket | args], stderr_to_stdout: true)
  defp keys(socket, keys), do: {_, 0} = tmux(socket, ["send-keys", "-t", "shell" | keys])
  defp type(socket, line), do: keys(socket, ["-l", line]) && keys(socket, ["Enter"])

  defp screen(socket) do
    {text, 0} = tmux(socket, ["capture-pane", "-p", "-J", "-S", "-", "-t", "shell"])
    text
  end

  # Waits until the screen matches, for at most 60 s (the first start
  # compiles nothing but boots mix).
  defp await(socket, pattern, attempts \\ 600) do
    text = screen(socket)

    cond do
      text =~ pattern -> text
      attempts == 0 -> flunk("the screen never showed #{inspect(pattern)}:\n#{text}")
      true -> Process.sleep(100) && await(socket, pattern, attempts - 1)
    end
  end

  test "type, edit, continue, stream, interrupt, leave, and come back", ctx do
    %{socket: s, snapshot: snapshot} = ctx
    open(s, "--snapshot #{snapshot} --env GREETING=hello --cwd /work --limit max_commands=100000")
    await(s, "sandbox@bashkit-sandbox:/work$ ")

    type(s, "echo $GREETING from $PWD")
    await(s, "hello from /work\n")

    # Multi-line: an open loop and an open quote continue after "> ".
    type(s, "for i in 1 2 3; do")
    await(s, ~r/^>\s*$/m)
    type(s, ~S(echo "n=$i"))
    type(s, "done")
    await(s, "n=1\nn=2\nn=3\n")
    type(s, "echo 'open")
    type(s, "quote'")
    await(s, "open\nquote\n")

    # Output shows as it is produced: the first line before the second.
    type(s, "echo first; sleep 3; echo second")
    text = await(s, "\nfirst\n")
    refute text =~ "\nsecond\n"
    await(s, "\nsecond\n")

    # Ctrl-C stops a running script and the shell goes on.
    type(s, "echo started; sleep 60; echo never")
    await(s, "\nstarted\n")
    keys(s, ["C-c"])
    await(s, ~r/\^C\nsandbox@bashkit-sandbox:\/work\[130\]\$ /)

    # History and line editing: recall the last command, change it.
    type(s, "echo alpha")
    await(s, "\nalpha\n")
    keys(s, ["Up", "End", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace"])
    keys(s, ["-l", "beta"])
    keys(s, ["Home", "Right", "Right", "Right", "Right", "Right"])
    keys(s, ["-l", "X"])
    keys(s, ["Enter"])
    await(s, "\nXbeta\n")

    # Ctrl-C on a line being typed drops it.
    keys(s, ["-l", "echo dropped"])
    keys(s, ["C-c"])
    type(s, "echo kept > saved.txt; cd /tmp")
    await(s, ~r/:\S*\/tmp\S*\$\s*$/m)

    keys(s, ["C-d"])
    await(s, "saved the session to #{snapshot}")
    text = await(s, "SHELL-EXITED rc=0")
    refute text =~ "\ndropped\n"
    refute text =~ "\nnever\n"
    assert File.exists?(snapshot)

    # The terminal was given back as it was: echo and canonical mode.
    type(s, "reset-check")
    await(s, "reset-check")
    # A second shell, in a new terminal, restores the session from the
    # snapshot file.
    s = new_socket()
    open(s, "--snapshot #{snapshot}")
    await(s, ~r/sandbox@bashkit-sandbox:\S*\/tmp\S*\$ /)
    type(s, "cat /work/saved.txt; echo $GREETING")
    await(s, "\nkept\nhello\n")
    type(s, "exit")
    await(s, "SHELL-EXITED rc=0")
  end

  test "bad flags are refused before anything starts", %{socket: s} do
    open(s, "--limit nope")
    text = await(s, "SHELL-EXITED rc=")
    assert text =~ "--limit takes NAME=VALUE"
    refute text =~ "SHELL-EXITED rc=0"
  end
end
