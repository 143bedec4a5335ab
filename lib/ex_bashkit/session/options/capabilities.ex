defmodule ExBashkit.Session.Options.Capabilities do
  @moduledoc false
  # The session options that add commands: `:builtins` and `:python`, the
  # checks between them, and the parts of a build they need (its Cargo
  # features). Each problem raises ArgumentError naming the option.

  import ExBashkit.Options, only: [collection?: 1, entries!: 2, scalar: 1, unique!: 2]

  @doc false
  # The optional parts this build has (`ExBashkit.features/0`).
  @spec built_features() :: [
          :python | :cpython | :jq | :network | :mounts | :javascript | :git | :sqlite
        ]
  def built_features do
    built = ExBashkit.Native.features()
    # A fixed list, so no atom is made from what the library reports, and
    # none has to exist already (a fresh VM may never have seen :jq).
    for feature <- [:python, :cpython, :jq, :network, :mounts, :javascript, :git, :sqlite],
        Atom.to_string(feature) in built,
        do: feature
  end

  @doc false
  def builtins!(builtins) when collection?(builtins) do
    entries!(":builtins", builtins)
    |> Enum.map(fn
      {name, fun} ->
        name = command_name!(":builtins", name)
        {name, ExBashkit.Builtin.validate!(name, fun)}

      other ->
        raise ArgumentError, ":builtins entries must be {name, fun}, got: #{inspect(other)}"
    end)
    |> unique!(":builtins has more than one entry named")
  end

  def builtins!(other) do
    raise ArgumentError, ":builtins must be a map of name => fun, got: #{inspect(other)}"
  end

  @doc "Checks `:tools`: tools made with `ExBashkit.Tool.new/1`."
  def tools!(tools) when is_list(tools) do
    # By shape: a reference to the Tool module would tie the session's
    # options to the tools built on sessions.
    Enum.each(tools, fn
      %{name: name, call: call, parameters: %{}} when is_binary(name) and is_function(call, 1) ->
        :ok

      other ->
        raise ArgumentError,
              ":tools takes tools made with ExBashkit.Tool.new/1, got: #{inspect(other, limit: 5)}"
    end)

    tools |> Enum.map(& &1.name) |> unique_names!()
    tools
  end

  def tools!(other), do: raise(ArgumentError, ":tools must be a list, got: #{inspect(other)}")

  defp unique_names!(names) do
    case names -- Enum.uniq(names) do
      [] -> :ok
      [name | _] -> raise ArgumentError, ":tools has more than one tool named #{inspect(name)}"
    end
  end

  @doc "The `:builtins` with the `:tools`' commands added; a clash raises."
  def with_tools(builtins, []), do: builtins

  def with_tools(builtins, tools) do
    commands = Map.new(ExBashkit.Tool.Command.builtins(tools))

    case Enum.filter(Map.keys(commands), &Map.has_key?(builtins, &1)) do
      [] ->
        Map.merge(builtins, commands)

      [name | _] ->
        raise ArgumentError, ":builtins and :tools both define the command #{inspect(name)}"
    end
  end

  # A name a script can type as a command word.
  defp command_name!(option, name) do
    text = scalar(name)

    cond do
      not is_binary(text) ->
        raise ArgumentError,
              "#{option} names must be strings or atoms, got: #{inspect(name)}"

      not String.valid?(text) ->
        raise ArgumentError, "#{option} names must be valid UTF-8, got: #{inspect(name)}"

      text == "" or String.contains?(text, ["/", "=", " ", "\t", "\n", "\r", <<0>>]) ->
        raise ArgumentError,
              "#{option} names must be non-empty, without whitespace, NUL, \"/\" or \"=\", " <>
                "got: #{inspect(name)}"

      true ->
        text
    end
  end

  @features %{
    python: :python,
    cpython: :cpython,
    allow_net: :network,
    mounts: :mounts,
    javascript: :javascript,
    git: :git,
    sqlite: :sqlite
  }
  @feature_options %{cpython: "python: :cpython"}

  @doc false
  # Raises for an option (`{option, asked?}`) whose part was left out of
  # this build (its Cargo feature). `built` is asked for only when needed:
  # it is a NIF call.
  def require_features!(asked, built \\ &built_features/0) do
    case for({option, true} <- asked, do: option) do
      [] ->
        :ok

      options ->
        built = built.()

        with option when option != nil <- Enum.find(options, &(@features[&1] not in built)) do
          feature = @features[option]

          option = Map.get_lazy(@feature_options, option, fn -> inspect(option) end)

          raise ArgumentError,
                "#{option} needs the #{inspect(feature)} part of ex_bashkit, which this " <>
                  "build was compiled without: add #{inspect(feature)} to " <>
                  "`config :ex_bashkit, features: [...]` and rebuild " <>
                  "(`mix deps.compile ex_bashkit --force`)"
        end

        :ok
    end
  end

  @doc false
  # Engines that run in worker processes only (`:javascript`, C; `:sqlite`,
  # beta upstream): a crash or a runaway of one must cost a worker, never
  # the VM. `engine` says why, for the error.
  def worker_only!(_option, false, _isolation, _engine), do: :ok
  def worker_only!(_option, true, :process, _engine), do: :ok

  def worker_only!(option, true, _isolation, engine) do
    raise ArgumentError,
          "#{option}: true needs isolation: :process: #{engine} only in a worker process, " <>
            "where a crash or a runaway of it costs that process and never the VM"
  end

  @doc false
  def no_shadowing!(python, builtins) do
    case Enum.find(python, &(&1 in builtins)) do
      nil ->
        :ok

      name ->
        raise ArgumentError,
              "the :python command #{inspect(name)} is also a :builtins name; " <>
                "rename one of them (python: [name: \"py\"])"
    end
  end

  @python_runtimes [:monty, :cpython]
  @python_names ["python", "python3"]

  @doc false
  # {runtime, command names}; no names for no Python.
  def python!(false), do: {:monty, []}
  def python!(true), do: {:monty, @python_names}
  def python!(runtime) when runtime in @python_runtimes, do: {runtime, @python_names}

  def python!(opts) when is_list(opts) and opts != [] do
    keys = if Keyword.keyword?(opts), do: Keyword.keys(opts), else: python_error!(opts)
    if Enum.uniq(keys) != keys, do: python_error!(opts)

    case keys -- [:runtime, :name, :names] do
      [] ->
        :ok

      [key | _] ->
        raise ArgumentError,
              "unknown :python key #{inspect(key)}, expected :runtime, :name or :names"
    end

    runtime = Keyword.get(opts, :runtime, :monty)

    unless runtime in @python_runtimes do
      raise ArgumentError,
            ":python runtime must be one of #{inspect(@python_runtimes)}, got: #{inspect(runtime)}"
    end

    names =
      case {Keyword.fetch(opts, :name), Keyword.fetch(opts, :names)} do
        {:error, :error} ->
          @python_names

        {{:ok, name}, :error} ->
          [name]

        {:error, {:ok, names}} when is_list(names) and names != [] ->
          entries!(":python names", names)

        _ ->
          python_error!(opts)
      end

    names =
      names
      |> Enum.map(&{command_name!(":python builtin", &1), true})
      |> unique!(":python names the command twice:")
      |> Map.keys()

    {runtime, names}
  end

  def python!(other), do: python_error!(other)

  defp python_error!(value) do
    raise ArgumentError,
          ":python must be true, false, :monty, :cpython or a keyword list of :runtime and " <>
            ":name or :names (a non-empty list), got: #{inspect(value)}"
  end

  # The CPython guest starts from a snapshot of about 40 MB of memory; a
  # smaller cap would fail every call, and wasmtime's pool honours at most
  # 1 GiB.
  @cpython_memory (64 * 1024 * 1024)..(1024 * 1024 * 1024)

  @doc false
  def python_memory!(:cpython, bytes) when is_integer(bytes) and bytes not in @cpython_memory do
    raise ArgumentError,
          ":limits key :max_python_memory_bytes must be between 64 MiB and 1 GiB with " <>
            "python: :cpython, got: #{bytes}"
  end

  def python_memory!(_runtime, _bytes), do: :ok
end
