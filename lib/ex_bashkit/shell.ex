defmodule ExBashkit.Shell do
  @moduledoc """
  An interactive shell on a sandbox, to poke at it by hand: the same
  session an agent would get, typed into from a terminal or from IEx.

  From a terminal, `mix ex_bashkit.shell` (see `Mix.Tasks.ExBashkit.Shell`
  for its flags); from IEx, `ExBashkit.Shell.start/1`, which can also
  attach to a session or session server that is already running, on this
  node or another:

      iex> ExBashkit.Shell.start(server: "conversation-42")

  The prompt shows `user@host:cwd` of the sandbox. A command that is not
  finished (an open `if`, `for`, `case`, quote or heredoc, or a line
  ending in `\\`, `|`, `&&` or `||`) continues on the next line, after a
  `> ` prompt. Output is shown as the script produces it. `exit` or Ctrl-D
  on an empty line leaves; the sandbox stays as it was for whoever else
  holds it.

  In a terminal (`mix ex_bashkit.shell`), the shell edits lines itself:
  arrows, Home/End, Ctrl-A/E/K/U/W, history on Up/Down, and **Ctrl-C
  interrupts a running script** (or drops the line being typed) without
  leaving the shell. In IEx the VM keeps Ctrl-C for its BREAK menu, and
  IEx's own line editor and history are used; **to interrupt a script
  there, type `^C` (caret, C) and Enter** while it runs. Lines typed
  while a script runs are run after it.

  ## Options

  #{ExBashkit.Options.docs(ExBashkit.Shell.Config.schema())}
  """

  alias ExBashkit.{AtomicFile, Error, Sandbox, Server, Session}
  alias ExBashkit.Shell.{Config, Continuation, LineEditor, Terminal}
  alias ExBashkit.Tool.Output

  @doc """
  Runs the shell until `exit` or end of input; see the module docs.

  Answers `:ok`, or `{:error, message}` when the sandbox to attach to
  cannot be found or the snapshot cannot be restored.

      iex> script = "cd /tmp\\nif true; then\\n  echo in $PWD\\nfi\\nexit\\n"
      iex> {:ok, io} = StringIO.open(script)
      iex> shell = Task.async(fn -> Process.group_leader(self(), io); ExBashkit.Shell.start() end)
      iex> Task.await(shell)
      :ok
      iex> {_input, output} = StringIO.contents(io)
      iex> output =~ "in /tmp\\nsandbox@bashkit-sandbox:/tmp$ "
      true
  """
  @spec start(keyword()) :: :ok | {:error, String.t()}
  def start(opts \\ []) do
    config = Config.validate!(opts)

    with {:ok, target, owned?} <- open(config),
         :ok <- restore(target, config.snapshot) do
      try do
        input = open_input(config.input)

        try do
          loop(%{target: target, input: input, status: 0})
        after
          close_input(input)
        end

        save(target, config.snapshot)
      after
        if owned? and not is_struct(target, Session), do: Server.stop(target)
      end
    end
  end

  defp open(%{attach: target}) when target != nil, do: {:ok, target, false}

  defp open(%{server: id}) when id != nil do
    case Server.whereis(id) do
      nil -> {:error, "no session server with id #{inspect(id)} is running on a connected node"}
      pid -> {:ok, pid, false}
    end
  end

  defp open(%{isolated: true, session: session}) do
    case Server.start(session: session, isolation: :node) do
      {:ok, pid} -> {:ok, pid, true}
      {:error, reason} -> {:error, "could not start an isolated session: #{inspect(reason)}"}
    end
  end

  # What a person types is as untrusted as what a model writes: a worker
  # process, unless the session options say otherwise.
  defp open(%{session: session}),
    do: {:ok, Session.new(Keyword.put_new(session, :isolation, :process)), true}

  defp restore(_target, nil), do: :ok

  defp restore(target, path) do
    case File.read(path) do
      {:ok, snapshot} ->
        with {:error, message} <- Sandbox.restore(target, snapshot, []),
             do: {:error, "could not restore #{path}: #{message}"}

      {:error, :enoent} ->
        :ok

      {:error, reason} ->
        {:error, "could not read #{path}: #{:file.format_error(reason)}"}
    end
  end

  defp save(_target, nil), do: :ok

  defp save(target, path) do
    with {:ok, snapshot} <- Sandbox.snapshot(target, []),
         :ok <- AtomicFile.write(path, snapshot) do
      IO.puts("saved the session to #{path}")
    else
      {:error, reason} ->
        IO.puts(:stderr, "could not save the session to #{path}: #{inspect(reason)}")
    end

    :ok
  end

  ## The loop

  defp loop(state) do
    case read_command(state, prompt(state), []) do
      {:eof, _state} ->
        IO.write("\n")
        :ok

      {:interrupt, state} ->
        loop(state)

      {command, state} ->
        if Regex.match?(~r/^\s*(exit|logout)(\s+\d+)?\s*$/, command),
          do: :ok,
          else: command |> run(state) |> loop()
    end
  end

  # Reads lines until they make a whole command.
  defp read_command(state, prompt, lines) do
    case read_line(state, prompt) do
      {text, state} when is_binary(text) ->
        script = Enum.join(Enum.reverse([text | lines]), "\n")

        cond do
          String.trim(script) == "" -> read_command(state, prompt(state), [])
          Continuation.open_end?(script) -> read_command(state, "> ", [text | lines])
          true -> {script, state}
        end

      other ->
        other
    end
  end

  defp prompt(state) do
    case Sandbox.exec(state.target, ~S(printf '%s\n' "$USER" "$HOSTNAME" "$PWD" "$HOME"), []) do
      {:ok, %{stdout: out}} ->
        [user, host, cwd, home | _] = String.split(out, "\n") ++ ["", "", "", ""]

        cwd =
          if home != "" and String.starts_with?(cwd <> "/", home <> "/"),
            do: "~" <> String.replace_prefix(cwd, home, ""),
            else: cwd

        style(
          state,
          "#{user}@#{host}",
          "#{cwd}",
          if(state.status == 0, do: "$ ", else: "[#{state.status}]$ ")
        )

      {:error, _} ->
        "(unavailable)$ "
    end
  end

  defp style(%{input: %{kind: :terminal}}, who, where, mark),
    do: ["\e[1;32m", who, "\e[0m:\e[1;34m", where, "\e[0m", mark]

  defp style(_state, who, where, mark), do: [who, ":", where, mark]

  ## Running a command, with its output streamed

  defp run(script, state) do
    shell = self()
    tag = make_ref()

    # Linked, so that it goes if the shell does; it never fails itself, so
    # the shell always gets to give the terminal back.
    spawn_link(fn ->
      outcome =
        try do
          Sandbox.exec(state.target, script, stream_to: {shell, tag}, errors: :struct)
        catch
          kind, reason -> {:error, Exception.format_banner(kind, reason)}
        end

      send(shell, {tag, :returned, outcome})
    end)

    state = listen(state)
    finish(await(state, tag, false), script)
  end

  defp await(state, tag, returned?) do
    receive do
      {:ex_bashkit, ^tag, {:stdout, chunk}} ->
        IO.write(Output.printable(chunk))
        await(state, tag, returned?)

      {:ex_bashkit, ^tag, {:stderr, chunk}} ->
        IO.write(errors(state), Output.printable(chunk))
        await(state, tag, returned?)

      {:ex_bashkit, ^tag, {:exit, outcome}} ->
        unless returned?, do: receive(do: ({^tag, :returned, _} -> :ok))
        {outcome, state}

      {^tag, :returned, {:error, message}} when is_binary(message) ->
        {{:error, %Error{reason: :error, message: message}}, state}

      {^tag, :returned, _outcome} ->
        await(state, tag, true)

      {^tag, :cancel} ->
        # A script that has not started yet cannot be cancelled: try again
        # until it has, or has ended.
        if Sandbox.cancel(state.target) == :idle,
          do: Process.send_after(self(), {tag, :cancel}, 20)

        await(state, tag, returned?)

      input ->
        case interrupt?(state, input) do
          {true, state} ->
            IO.write("^C\n")
            send(self(), {tag, :cancel})
            await(state, tag, returned?)

          {false, state} ->
            await(state, tag, returned?)
        end
    end
  end

  defp finish({{:ok, result}, state}, _script), do: %{state | status: result.exit_code}

  defp finish({{:error, %Error{reason: :parse_error, message: message}}, state}, script) do
    if Continuation.ended_early?(message) do
      # Not a whole command after all: read on from where it stopped.
      case read_command(state, "> ", [script]) do
        {more, state} when is_binary(more) -> run(more, state)
        {_eof_or_interrupt, state} -> state
      end
    else
      IO.puts(errors(state), "ex_bashkit: #{message}")
      %{state | status: 2}
    end
  end

  defp finish({{:error, %Error{reason: :cancelled}}, state}, _script), do: %{state | status: 130}

  defp finish({{:error, %Error{} = error}, state}, _script) do
    IO.puts(errors(state), "ex_bashkit: #{error.message}")
    %{state | status: if(error.reason == :timeout, do: 124, else: 1)}
  end

  # Where stderr goes: the terminal's own, or with everything else when
  # reading lines (IEx shows both; an IO device gets both).
  defp errors(%{input: %{kind: :terminal}}), do: :standard_error
  defp errors(_state), do: :stdio

  ## Input: a terminal read key by key, or lines from the group leader

  defp open_input(kind) do
    terminal = if kind in [:auto, :terminal] and not iex?(), do: Terminal.open(), else: :error

    case {terminal, kind} do
      {{:ok, terminal}, _} ->
        %{
          kind: :terminal,
          terminal: terminal,
          reader: Terminal.start_reader(self()),
          editor: LineEditor.new(),
          typed: []
        }

      {:error, :terminal} ->
        raise ArgumentError, "input: :terminal needs standard input to be a terminal"

      {:error, _} ->
        %{kind: :lines, reading: nil, queued: []}
    end
  end

  defp iex?, do: Code.ensure_loaded?(IEx) and IEx.started?()

  defp close_input(%{kind: :terminal} = input) do
    Terminal.close(input.terminal)
    Process.unlink(input.reader)
    Process.exit(input.reader, :kill)
  end

  defp close_input(%{kind: :lines, reading: reading}) do
    with {reader, _ref} <- reading do
      Process.unlink(reader)
      Process.exit(reader, :kill)
    end

    :ok
  end

  defp read_line(%{input: %{kind: :terminal} = input} = state, prompt) do
    IO.write(LineEditor.render(input.editor, prompt))
    {key, input} = next_key(input)

    case if(key == :eof, do: {:eof, input.editor}, else: LineEditor.key(input.editor, key)) do
      {:edit, editor} ->
        read_line(%{state | input: %{input | editor: editor}}, prompt)

      {:line, text, editor} ->
        IO.write("\n")
        {text, %{state | input: %{input | editor: LineEditor.next(editor, text)}}}

      {:interrupt, editor} ->
        IO.write("^C\n")
        {:interrupt, %{state | input: %{input | editor: LineEditor.new(editor.history)}}}

      {:eof, _editor} ->
        {:eof, state}
    end
  end

  defp read_line(%{input: %{kind: :lines, queued: [line | rest]} = input} = state, prompt) do
    IO.write([prompt, if(line == :eof, do: [], else: [line, "\n"])])
    {line, %{state | input: %{input | queued: rest}}}
  end

  defp read_line(%{input: %{kind: :lines} = input} = state, prompt) do
    {_reader, ref} =
      case input.reading do
        nil ->
          gets(prompt)

        reading ->
          # A read started while the last script ran is still waiting.
          IO.write(prompt)
          reading
      end

    receive do
      {^ref, line} -> {line, %{state | input: %{input | reading: nil}}}
    end
  end

  defp next_key(%{typed: [key | rest]} = input), do: {key, %{input | typed: rest}}
  defp next_key(input), do: receive(do: ({:shell_key, key} -> {key, input}))

  defp gets(prompt) do
    shell = self()
    ref = make_ref()

    # Linked, so that a read still waiting goes if the shell does.
    reader =
      spawn_link(fn ->
        line =
          case IO.gets(prompt) do
            text when is_binary(text) -> String.trim_trailing(text, "\n")
            _eof -> :eof
          end

        send(shell, {ref, line})
      end)

    {reader, ref}
  end

  # While a script runs: a terminal's keys are already arriving; from
  # lines, a read is started so that `^C` can be typed.
  defp listen(%{input: %{kind: :lines, reading: nil} = input} = state),
    do: %{state | input: %{input | reading: gets("")}}

  defp listen(state), do: state

  defp interrupt?(%{input: %{kind: :terminal} = input} = state, {:shell_key, key}) do
    if key == "\x03",
      do: {true, state},
      else: {false, %{state | input: %{input | typed: input.typed ++ [key]}}}
  end

  defp interrupt?(%{input: %{kind: :lines, reading: {_, ref}} = input} = state, {ref, line}) do
    input = %{input | reading: nil}

    cond do
      line == "^C" ->
        {true, %{state | input: input}}

      is_binary(line) ->
        {false, listen(%{state | input: %{input | queued: input.queued ++ [line]}})}

      true ->
        {false, %{state | input: %{input | queued: input.queued ++ [:eof]}}}
    end
  end

  defp interrupt?(state, _other), do: {false, state}
end
