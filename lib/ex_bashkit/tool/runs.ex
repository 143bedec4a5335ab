defmodule ExBashkit.Tool.Runs do
  @moduledoc false
  # What the bash and elixir tools do with a model's (already checked)
  # arguments, and how their outcomes read to a model.

  alias ExBashkit.{Error, Result, Sandbox}
  alias ExBashkit.Result.Stats
  alias ExBashkit.Tool.Output

  def bash(target, %{"command" => command} = args, config) do
    timeout = Map.get(args, "timeout_ms", config.timeout_ms)
    opts = [errors: :struct] ++ if(timeout, do: [timeout_ms: timeout], else: [])

    case Sandbox.exec(target, command, opts) do
      {:ok, %Result{} = result} ->
        {:ok, Output.streams(result, config.max_output_bytes) <> cost(result, config.stats)}

      {:error, %Error{} = error} ->
        {:error, stopped(error, config.max_output_bytes)}

      {:error, message} when is_binary(message) ->
        {:error, unavailable(message)}
    end
  end

  defp cost(%Result{stats: %Stats{} = stats}, true), do: Output.cost(stats)
  defp cost(_result, _stats?), do: ""

  defp stopped(%Error{} = error, budget) do
    partial =
      if error.stdout == "" and error.stderr == "",
        do: [],
        else: ["Output before it stopped:\n", Output.output_sections(error, budget)]

    IO.iodata_to_binary([why(error), "\n", partial])
  end

  defp why(%Error{reason: :timeout}),
    do:
      "The command timed out and was stopped. Split long work into shorter steps, " <>
        "or pass a larger timeout_ms (the session's own limit still applies)."

  defp why(%Error{reason: :cancelled}), do: "The command was cancelled before it finished."

  defp why(%Error{reason: :limit, limit: limit, message: message}),
    do:
      "The command was stopped by the sandbox limit #{limit}: #{message}. " <>
        "Do the work in smaller pieces (fewer commands, loop iterations or bytes)."

  defp why(%Error{reason: :parse_error, message: message}),
    do: "bash could not parse the command, so nothing ran: #{message}. Fix the syntax and retry."

  defp why(%Error{reason: :denied, message: "denied: " <> reason}),
    do:
      "The command was refused before it started, so nothing in it ran: #{reason}. " <>
        "Change the command so it is allowed, or ask the user."

  defp why(%Error{reason: :busy}),
    do: "The sandbox is still running an earlier command. Wait for it, then retry."

  defp why(%Error{message: message}), do: "The command failed: #{message}."

  defp unavailable(message),
    do: "The sandbox is not available: #{message}. Retrying later may work."

  def elixir(%{"code" => code} = args, config) do
    timeout = Map.get(args, "timeout_ms", config.timeout_ms)
    budget = config.max_output_bytes
    opts = [max_output: budget] ++ if(timeout, do: [timeout: timeout], else: [])

    case ExBashkit.Peer.run(code, opts ++ config.peer) do
      {:ok, %{output: output, result: result}} ->
        {:ok,
         IO.iodata_to_binary([
           printed(output, budget),
           "result: ",
           Output.for_model(inspect(result, pretty: true, limit: 200), budget),
           "\n"
         ])}

      {:error, :timeout, %{output: output}} ->
        {:error,
         "The code timed out and its node was stopped. Make it faster or pass a " <>
           "larger timeout_ms.\n" <> printed(output, budget)}

      {:error, :noconnection, %{output: output}} ->
        {:error,
         "The node running the code went down (it may have run out of memory). " <>
           "Nothing it held survives; retry with less work.\n" <> printed(output, budget)}

      {:error, {kind, reason, stacktrace}, %{output: output}} ->
        {:error,
         IO.iodata_to_binary([
           "The code raised:\n",
           Output.for_model(Exception.format(kind, reason, stacktrace), budget),
           "\n",
           printed(output, budget)
         ])}
    end
  end

  @doc "One call of the run_code tool."
  def run_code(%{"code" => code} = args, config) do
    budget = config.max_output_bytes
    timeout = Map.get(args, "timeout_ms", config.timeout_ms)

    opts =
      [language: language(args, config), input: Map.get(args, "input")] ++
        if(timeout, do: [timeout_ms: timeout], else: []) ++ config.code

    case ExBashkit.Code.run(code, opts) do
      {:ok, run} ->
        {:ok,
         IO.iodata_to_binary([
           "output: ",
           Output.for_model(ExBashkit.JSON.encode!(run.output), budget),
           "\n",
           streams(run.stdout, run.stderr, budget)
         ])}

      {:error, error} ->
        {:error,
         IO.iodata_to_binary([
           "The code failed (#{error.reason}): ",
           Output.for_model(error.message, budget),
           "\n",
           streams(error.stdout, error.stderr, budget)
         ])}
    end
  end

  defp language(%{"language" => language}, _config), do: String.to_existing_atom(language)
  defp language(_args, config), do: hd(config.languages)

  defp streams("", "", _budget), do: []

  defp streams(stdout, stderr, budget),
    do: Output.output_sections(%{stdout: stdout, stderr: stderr}, budget)

  defp printed("", _budget), do: ""
  defp printed(output, budget), do: "output:\n" <> Output.for_model(output, budget) <> "\n"
end
