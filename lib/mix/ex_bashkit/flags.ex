defmodule Mix.ExBashkit.Flags do
  @moduledoc false
  # The command-line flags `mix ex_bashkit.shell` and `mix ex_bashkit.mcp`
  # share: those that give a session's options. A bad flag raises Mix.Error
  # naming it.

  @session_switches [
    mount: :keep,
    allow_net: :keep,
    limit: :keep,
    env: :keep,
    python: :boolean,
    cpython: :boolean,
    cwd: :string
  ]

  @doc "The session's switches, for `OptionParser`, with a task's own."
  @spec switches(keyword()) :: keyword()
  def switches(own), do: @session_switches ++ own

  @doc "The parsed flags of `argv`; `task` names the task in errors."
  @spec parse!([String.t()], keyword(), String.t()) :: keyword()
  def parse!(argv, switches, task) do
    case OptionParser.parse(argv, strict: switches) do
      {opts, [], []} ->
        opts

      {_, [extra | _], _} ->
        Mix.raise("unexpected argument #{inspect(extra)}; see `mix help #{task}`")

      {_, _, [{flag, _} | _]} ->
        Mix.raise("unknown or malformed flag #{flag}; see `mix help #{task}`")
    end
  end

  @doc "The `ExBashkit.Session.new/1` options the session flags in `opts` ask for."
  @spec session_options(keyword()) :: keyword()
  def session_options(opts) do
    [
      mounts: Enum.map(Keyword.get_values(opts, :mount), &mount!/1),
      allow_net: allow_net(Keyword.get_values(opts, :allow_net)),
      limits: Enum.map(Keyword.get_values(opts, :limit), &limit!/1),
      env: Enum.map(Keyword.get_values(opts, :env), &pair!(&1, "--env")),
      python: python(opts),
      cwd: opts[:cwd]
    ]
    |> Enum.reject(fn {_key, value} -> value in [nil, []] end)
  end

  # `:mounts` entries are {path in the sandbox, host directory, mode}.
  defp mount!(spec) do
    case String.split(spec, ":") do
      [host, path] -> {path, Path.expand(host), :read_only}
      [host, path, "rw"] -> {path, Path.expand(host), :read_write}
      [host, path, "ro"] -> {path, Path.expand(host), :read_only}
      _ -> Mix.raise("--mount takes HOST:PATH or HOST:PATH:rw, got: #{inspect(spec)}")
    end
  end

  defp python(opts) do
    cond do
      opts[:cpython] -> :cpython
      opts[:python] -> true
      true -> nil
    end
  end

  defp allow_net([]), do: nil
  defp allow_net(urls), do: if("all" in urls, do: :all, else: urls)

  defp limit!(spec) do
    {key, value} = pair!(spec, "--limit")

    case Integer.parse(value) do
      {number, ""} when number >= 0 -> {String.to_atom(key), number}
      _ -> Mix.raise("--limit takes KEY=NUMBER, got: #{inspect(spec)}")
    end
  end

  defp pair!(spec, flag) do
    case String.split(spec, "=", parts: 2) do
      [key, value] when key != "" -> {key, value}
      _ -> Mix.raise("#{flag} takes NAME=VALUE, got: #{inspect(spec)}")
    end
  end
end
