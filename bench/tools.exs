# LLM tools (issue 16): what a tool call costs on top of the session call
# it makes, and what shaping a large output for a model costs.
#
#   MIX_ENV=prod mix run bench/tools.exs
#
# Calls: 2,000 samples each, after 200 warm-up calls, of
#   bash tool "true"            vs Session.exec(session, "true")
#   read_file tool (100 lines)  vs Session.read_file/2
#   edit_file tool (1 KiB file) vs read_file + :binary.replace + write_file
# Shaping: Tool.Output.for_model/2 (truncate to 16 KiB, then \xNN) on
# 10 MB of valid UTF-8 and on 10 MB of random bytes; 30 samples each.
# Prints p50/p90 and the ratio of the p50s, one run; bench/README.md quotes it.

Code.require_file("support.exs", __DIR__)

alias ExBashkit.{Session, Tool}
alias ExBashkit.Tool.Output

defmodule ToolsBench do
  def run do
    session = Session.new(files: %{"/f.txt" => Enum.map_join(1..100, &"line #{&1}\n")})
    tools = Map.new(Tool.all(session), &{&1.name, &1})
    :ok = Session.write_file(session, "/e.txt", String.duplicate("x", 1000) <> "needle")

    IO.puts("| call | through the tool p50 / p90 | direct p50 / p90 | tool ÷ direct (p50) |")
    IO.puts("|---|---|---|---|")

    row(
      "bash `true`",
      fn -> {:ok, _} = Tool.call(tools["bash"], %{"command" => "true"}) end,
      fn ->
        Session.exec(session, "true")
      end
    )

    row(
      "read_file, 100 lines",
      fn -> {:ok, _} = Tool.call(tools["read_file"], %{"path" => "/f.txt"}) end,
      fn ->
        Session.read_file(session, "/f.txt")
      end
    )

    # Each call swaps the word back and forth, so every call edits.
    swap = fn ->
      flip = !Process.get(:flip)
      Process.put(:flip, flip)
      {old, new} = if flip, do: {"needle", "pin"}, else: {"pin", "needle"}

      %{"path" => "/e.txt", "old_string" => old, "new_string" => new}
    end

    row("edit_file, 1 KiB", fn -> {:ok, _} = Tool.call(tools["edit_file"], swap.()) end, fn ->
      %{"old_string" => old, "new_string" => new} = swap.()
      {:ok, text} = Session.read_file(session, "/e.txt")
      :ok = Session.write_file(session, "/e.txt", :binary.replace(text, old, new))
    end)

    IO.puts("\n| shaping 10 MB for a model | p50 | p90 |")
    IO.puts("|---|---|---|")
    shaping("valid UTF-8", String.duplicate("héllo wörld\n", 10_000_000 |> div(14)))
    shaping("random bytes", :crypto.strong_rand_bytes(10_000_000))
  end

  defp row(label, tool, direct) do
    t = BenchSupport.sorted_samples_ns(2_000, tool)
    d = BenchSupport.sorted_samples_ns(2_000, direct)
    ratio = Float.round(p(t, 50) / p(d, 50), 2)

    IO.puts(
      "| #{label} | #{us(p(t, 50))} / #{us(p(t, 90))} µs | #{us(p(d, 50))} / #{us(p(d, 90))} µs | #{ratio}× |"
    )
  end

  defp shaping(label, bytes) do
    s = BenchSupport.sorted_samples_ns(30, fn -> Output.for_model(bytes, 16_384) end)
    IO.puts("| #{label} | #{us(p(s, 50))} µs | #{us(p(s, 90))} µs |")
  end

  defp p(sorted, pct),
    do: Enum.at(sorted, min(length(sorted) - 1, div(length(sorted) * pct, 100)))

  defp us(ns), do: :erlang.float_to_binary(ns / 1000, decimals: 1)
end

BenchSupport.publish(__ENV__.file, &ToolsBench.run/0)
