# An agent loop over ex_bashkit's LLM tools, driven by a scripted stand-in
# for a model (no network): `mix run examples/agent.exs`.
#
# A real agent sends `request` to a provider and gets tool calls back; here
# `ScriptedModel.next/1` plays the model's part, turn by turn, so the loop,
# the tools and the transcript are exactly what a real one would see.

alias ExBashkit.{Session, Tool}

defmodule ScriptedModel do
  @moduledoc false
  # One reply per turn, as a provider would decode it: tool calls with
  # their decoded arguments, or final text once the work is done.
  @replies [
    {:tool, "list_dir", %{"path" => "/project"}},
    {:tool, "read_file", %{"path" => "/project/deploy.sh"}},
    {:tool, "bash",
     %{
       "command" =>
         "cd /project && grep ERROR app.log | cut -d' ' -f3 | sort | uniq -c | sort -rn | head -3"
     }},
    {:tool, "bash",
     %{"command" => "echo 'waiting for the backlog...'; sleep 10", "timeout_ms" => 1_000}},
    {:tool, "edit_file",
     %{"path" => "deploy.sh", "old_string" => "RETRIES=1", "new_string" => "RETRIES=5"}},
    {:tool, "bash", %{"command" => "source deploy.sh && echo \"retries now: $RETRIES\""}},
    {:text, "db fails most often (25 errors, then cache with 15); deploy.sh now retries 5 times."}
  ]

  def next(transcript) do
    turn = Enum.count(transcript, &match?(%{role: :assistant}, &1))
    Enum.at(@replies, turn, {:text, "Done."})
  end
end

# The model writes the scripts: its session lives in a worker process, which
# is killed (and only it) if a script outlives its deadline or memory cap.
session =
  Session.new(
    isolation: :process,
    limits: [timeout_ms: 5_000],
    files: %{
      "/project/app.log" =>
        Enum.map_join(1..60, fn i ->
          component = Enum.at(~w(db db cache db http cache), rem(i, 6))
          level = if rem(i, 4) == 0, do: "INFO", else: "ERROR"

          "2026-11-22T10:#{String.pad_leading("#{rem(i, 60)}", 2, "0")} #{level} #{component} request #{i}\n"
        end),
      "/project/deploy.sh" => "#!/bin/bash\nRETRIES=1\nTARGET=staging\n"
    }
  )

tools = Tool.all(session, max_output_bytes: 2_000)

# What a request to Anthropic's Messages API would carry as its tools.
request_tools = Enum.map(tools, &Tool.to_anthropic/1)
IO.puts("tools offered: #{Enum.map_join(request_tools, ", ", & &1["name"])}\n")

loop = fn loop, transcript ->
  case ScriptedModel.next(transcript) do
    {:text, text} ->
      IO.puts("assistant: #{text}")
      Enum.reverse([%{role: :assistant, text: text} | transcript])

    {:tool, name, args} ->
      IO.puts("assistant → #{name} #{inspect(args)}")
      {status, output} = Tool.run(tools, name, args)

      IO.puts([
        "tool (#{status}):\n",
        output |> String.trim_trailing() |> String.replace(~r/^/m, "  "),
        "\n"
      ])

      loop.(loop, [
        %{role: :tool, name: name, status: status, output: output},
        %{role: :assistant, call: {name, args}} | transcript
      ])
  end
end

IO.puts("user: Which component fails most, and make deploy.sh retry more.\n")
transcript = loop.(loop, [%{role: :user, text: "Which component fails most?"}])
IO.puts("\n#{length(transcript)} messages; the session kept its files and cwd throughout.")
