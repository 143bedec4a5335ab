defmodule ExBashkit.Approval.Wrapped do
  @moduledoc false
  # The commands a script runs through others, found in their arguments:
  # wrappers (`env`, `command`, `exec`, `timeout`, `nohup`, `nice`, `time`,
  # `builtin`, `xargs`, `watch`, `parallel`, `retry`), `find -exec` and its
  # kin, and the code a `trap` runs, parsed like a script of its own. Each
  # is reported as a command of its own, `context: :wrapped` with the
  # `wrapper` that runs it; wrapped commands are unwrapped again
  # (`env timeout 5 nice rm`). What cannot be read statically (a wrapped
  # name built at run time, a wrapper's syntax this does not know) makes
  # the analysis `:dynamic_commands`, so opaque. A command named by a path
  # runs a file: `:reentry`, as `source` is.

  # How deep trap code may nest traps before it is opaque.
  @max_depth 8

  @typedoc "What was found beyond bashkit's own analysis."
  @type found :: %{
          commands: [map()],
          wrappers: [String.t()],
          dynamic: boolean(),
          reentry: boolean()
        }

  @doc """
  The wrapped commands of `commands`; `analyze` parses a trap's code
  (`{:ok, analysis}` or `{:error, why}`).
  """
  @spec expand([map()], (binary() -> {:ok, map()} | {:error, term()})) :: found()
  def expand(commands, analyze), do: expand(commands, analyze, 0)

  defp expand(commands, analyze, depth) do
    Enum.reduce(commands, %{commands: [], wrappers: [], dynamic: false, reentry: false}, fn
      command, acc -> merge(acc, one(command, analyze, depth))
    end)
  end

  defp merge(acc, found) do
    %{
      commands: acc.commands ++ found.commands,
      wrappers: Enum.uniq(acc.wrappers ++ found.wrappers),
      dynamic: acc.dynamic or found.dynamic,
      reentry: acc.reentry or found.reentry
    }
  end

  @nothing %{commands: [], wrappers: [], dynamic: false, reentry: false}

  defp one(%{name: nil}, _analyze, _depth), do: @nothing

  defp one(%{name: name, args: args}, analyze, depth) do
    found = %{@nothing | reentry: String.contains?(name, "/")}

    case inner(name, args) do
      :none ->
        found

      :unknown ->
        %{found | wrappers: [name], dynamic: true}

      {:trap, code} ->
        merge(%{found | wrappers: [name]}, trap(code, analyze, depth))

      {:commands, lines} ->
        wrapped = Enum.map(lines, &wrapped(&1, name))
        nested = expand(wrapped, analyze, depth)
        dynamic = Enum.any?(wrapped, &is_nil(&1.name))
        merge(%{found | commands: wrapped, wrappers: [name], dynamic: dynamic}, nested)
    end
  end

  defp wrapped([name | args], wrapper),
    do: %{name: name, args: args, context: :wrapped, assignments: [], wrapper: wrapper}

  defp trap(_code, _analyze, depth) when depth >= @max_depth, do: %{@nothing | dynamic: true}
  defp trap(nil, _analyze, _depth), do: %{@nothing | dynamic: true}

  defp trap(code, analyze, depth) do
    case analyze.(code) do
      {:ok, found} ->
        own = Enum.map(found.commands, &Map.merge(&1, %{context: :wrapped, wrapper: "trap"}))
        nested = expand(own, analyze, depth + 1)

        merge(
          %{
            commands: own,
            wrappers: found.wrappers,
            dynamic: found.dynamic_commands or found.truncated,
            reentry: found.reentry
          },
          nested
        )

      {:error, _why} ->
        %{@nothing | dynamic: true}
    end
  end

  # What `name args` runs: `:none` (nothing, or not a wrapper), the
  # command lines it runs, a trap's code, or `:unknown`.
  defp inner(name, args) when name in ~w(nohup time builtin), do: line(args)
  defp inner("env", args), do: env(args)
  defp inner("command", args), do: command(args)
  defp inner("exec", args), do: options(args, ~w(-c -l), ~w(-a))
  defp inner("nice", args), do: nice(args)
  defp inner("timeout", args), do: timeout(args)
  defp inner("xargs", args), do: xargs(args)
  defp inner("find", args), do: find(args, [])
  defp inner("watch", args), do: options(args, ~w(-d -t -x -b -e -g -c -p -q), ~w(-n))
  defp inner(name, args) when name in ~w(parallel retry), do: generic(args)
  defp inner("trap", args), do: trap_code(args)
  defp inner(_name, _args), do: :none

  defp line([]), do: :none
  defp line(words), do: {:commands, [words]}

  # `env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... [--] command`
  defp env([]), do: :none
  defp env([nil | _]), do: :unknown
  defp env(["--" | rest]), do: line(rest)
  defp env([flag, _value | rest]) when flag in ~w(-u -C --unset --chdir), do: env(rest)
  defp env(["-S" <> _ | _]), do: :unknown
  defp env(["--split-string" <> _ | _]), do: :unknown
  defp env(["-" <> _ | rest]), do: env(rest)

  defp env([word | rest] = words) do
    if assignment?(word), do: env(rest), else: line(words)
  end

  defp assignment?(word), do: Regex.match?(~r/\A[A-Za-z_][A-Za-z0-9_]*=/, word)

  # `command -v/-V name` only looks the name up.
  defp command(args) do
    if Enum.any?(Enum.take_while(args, &option?/1), &(&1 in ["-v", "-V"])),
      do: :none,
      else: options(args, ~w(-p), [])
  end

  defp nice(["-n", _value | rest]), do: line(rest)
  defp nice(["--adjustment=" <> _ | rest]), do: line(rest)
  defp nice(["-" <> _ | rest]), do: line(rest)
  defp nice(args), do: line(args)

  # `timeout [-s SIG] [-k DUR] [--options] DURATION command`
  defp timeout([flag, _value | rest]) when flag in ~w(-s -k --signal --kill-after),
    do: timeout(rest)

  defp timeout(["--" | [_duration | rest]]), do: line(rest)
  defp timeout(["-" <> _ | rest]), do: timeout(rest)
  defp timeout([_duration | rest]), do: line(rest)
  defp timeout([]), do: :none

  # `xargs [options] [command [initial-arguments]]`; `echo` by default.
  @xargs_valued ~w(-I -n -L -P -d -E -s -a --max-args --max-lines --max-procs --delimiter --eof --max-chars --arg-file --replace)
  defp xargs([]), do: line(["echo"])
  defp xargs([nil | _]), do: :unknown
  defp xargs(["--" | rest]), do: if(rest == [], do: line(["echo"]), else: line(rest))
  defp xargs([flag, _value | rest]) when flag in @xargs_valued, do: xargs(rest)
  defp xargs(["-" <> _ | rest]), do: xargs(rest)
  defp xargs(words), do: line(words)

  # `find ... -exec command ... ;` (or `+`), `-execdir`, `-ok`, `-okdir`.
  defp find([], []), do: :none
  defp find([], lines), do: {:commands, Enum.reverse(lines)}

  defp find([action | rest], lines) when action in ~w(-exec -execdir -ok -okdir) do
    {line, after_line} = Enum.split_while(rest, &(&1 not in [";", "+"]))
    lines = if line == [], do: lines, else: [line | lines]
    find(Enum.drop(after_line, 1), lines)
  end

  defp find([_word | rest], lines), do: find(rest, lines)

  # `trap [--] code signal...`; `trap -p`, `trap -l` and `trap - SIG` run nothing.
  defp trap_code(["--" | rest]), do: trap_code(rest)
  defp trap_code([code, _signal | _]) when code not in ["-", "-p", "-l"], do: {:trap, code}
  defp trap_code(_args), do: :none

  # Options `flags` take no value, `valued` one; then the command.
  defp options(args, flags, valued) do
    case args do
      [] ->
        :none

      [nil | _] ->
        :unknown

      ["--" | rest] ->
        line(rest)

      [flag | rest] ->
        if flag in flags, do: options(rest, flags, valued), else: valued(args, flags, valued)
    end
  end

  defp valued([flag, value | rest], flags, valued) do
    if flag in valued, do: options(rest, flags, valued), else: known([flag, value | rest])
  end

  defp valued(args, _flags, _valued), do: known(args)

  defp known(["-" <> _ | _]), do: :unknown
  defp known(words), do: line(words)

  # Wrappers whose syntax varies: the words after `--`, else after leading
  # options; a later `:::` (parallel's arguments) ends the command.
  defp generic(args) do
    words =
      case Enum.split_while(args, &(&1 != "--")) do
        {_, ["--" | rest]} -> rest
        {_, []} -> Enum.drop_while(args, &option?/1)
      end

    case Enum.take_while(words, &(&1 != ":::")) do
      [] -> :none
      [nil | _] -> :unknown
      line -> {:commands, [line]}
    end
  end

  defp option?("-" <> _), do: true
  defp option?(_word), do: false
end
