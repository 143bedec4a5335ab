defmodule ExBashkit.Session.Options.Network do
  @moduledoc false
  # The `:allow_net` option: the URL patterns a session may reach, and the
  # headers (credentials) injected into the requests some of them match.
  # Header values are secrets: no message shows one.

  import ExBashkit.Options, only: [collection?: 1, entries!: 2, text?: 1]

  @doc false
  # The allowlist's patterns, and the headers injected for some of them.
  def credentials({:only, entries}) do
    {{:only,
      Enum.map(entries, fn
        {pattern, _} -> pattern
        pattern -> pattern
      end)}, for({pattern, headers} <- entries, do: {pattern, headers})}
  end

  def credentials(allow_net), do: {allow_net, []}

  @doc false
  # Whether a header is a function, called again before each call.
  def dynamic?(rules),
    do: Enum.any?(rules, fn {_, headers} -> Enum.any?(headers, &is_function(elem(&1, 1))) end)

  @doc false
  def allow_net!(nil), do: :none
  def allow_net!(:all), do: :all

  def allow_net!(patterns) when is_list(patterns) do
    {:only, ":allow_net" |> entries!(patterns) |> Enum.map(&allow_net_entry!/1)}
  end

  def allow_net!(other) do
    raise ArgumentError,
          ":allow_net must be a list of URL patterns or :all, got: #{inspect(other)}"
  end

  # A pattern, or `{pattern, headers: headers}` whose headers are injected
  # into the requests it matches. Messages never show a header's value.
  defp allow_net_entry!({pattern, opts}) when is_list(opts) or is_map(opts) do
    pattern = url_pattern!(pattern)

    headers =
      case Enum.to_list(opts) do
        [headers: headers] when headers != [] and headers != %{} and collection?(headers) ->
          headers

        _ ->
          raise ArgumentError,
                ":allow_net entry for #{inspect(pattern)} must be {pattern, headers: " <>
                  "%{name => value}} with at least one header"
      end

    {pattern, Enum.map(entries!(":allow_net headers", headers), &header!(pattern, &1))}
  end

  defp allow_net_entry!(pattern), do: url_pattern!(pattern)

  defp header!(pattern, {name, value}) do
    name =
      if is_atom(name) and name not in [nil, true, false], do: Atom.to_string(name), else: name

    unless is_binary(name) and name =~ ~r/\A[!#$%&'*+.^_`|~0-9A-Za-z-]+\z/ do
      raise ArgumentError,
            ":allow_net header names for #{inspect(pattern)} must be HTTP header names, " <>
              "got: #{inspect(name)}"
    end

    unless is_function(value, 0) or header_value?(value) do
      raise ArgumentError,
            ":allow_net header #{inspect(name)} for #{inspect(pattern)} must be a string " <>
              "without control characters, or a 0-arity function returning one " <>
              "(its value is not shown)"
    end

    {name, value}
  end

  defp header!(pattern, _other),
    do:
      raise(
        ArgumentError,
        ":allow_net headers for #{inspect(pattern)} must be name => value pairs"
      )

  defp header_value?(value),
    do: is_binary(value) and String.valid?(value) and not (value =~ ~r/[\x00-\x1f\x7f]/)

  @doc """
  The injected headers with every function called for its current value:
  `{:ok, rules}`, or `{:error, message}` naming the header whose function
  failed (never a value).
  """
  @spec resolve_credentials([{String.t(), [{String.t(), String.t() | (() -> String.t())}]}]) ::
          {:ok, [{String.t(), [{String.t(), String.t()}]}]} | {:error, String.t()}
  def resolve_credentials(rules) do
    {:ok,
     for {pattern, headers} <- rules do
       {pattern, for({name, value} <- headers, do: {name, resolve!(pattern, name, value)})}
     end}
  catch
    {:bad_header, message} -> {:error, message}
  end

  defp resolve!(pattern, name, fun) when is_function(fun, 0) do
    value =
      try do
        fun.()
      catch
        kind, reason ->
          throw(
            {:bad_header,
             ":allow_net header function #{inspect(name)} for #{inspect(pattern)} failed: " <>
               Exception.format_banner(kind, reason, __STACKTRACE__)}
          )
      end

    if header_value?(value),
      do: value,
      else:
        throw(
          {:bad_header,
           ":allow_net header function #{inspect(name)} for #{inspect(pattern)} must return " <>
             "a string without control characters (its value is not shown)"}
        )
  end

  defp resolve!(_pattern, _name, value), do: value

  # Patterns that cannot match (no scheme or host) would silently deny; say so.
  defp url_pattern!(pattern) do
    with true <- text?(pattern),
         {:ok, %URI{scheme: scheme, host: host}} when scheme in ["http", "https"] <-
           URI.new(pattern),
         true <- is_binary(host) and host != "" do
      pattern
    else
      _ ->
        raise ArgumentError,
              ":allow_net pattern #{inspect(pattern)} must be an http:// or https:// URL " <>
                "with a host, like \"https://api.example.com/v1\""
    end
  end
end
