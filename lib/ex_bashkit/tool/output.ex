defmodule ExBashkit.Tool.Output do
  @moduledoc false
  # Output shaped for a model (`ExBashkit.Tool.truncate/2`,
  # `ExBashkit.Tool.printable/1`): cut to a byte budget keeping head and
  # tail, and bytes that are not UTF-8 shown as `\xNN`.

  @doc false
  @spec truncate(binary(), non_neg_integer()) :: binary()
  def truncate(text, budget) when byte_size(text) <= budget, do: text

  def truncate(text, budget) do
    head = text |> binary_part(0, div(budget, 2)) |> whole_characters_before()
    tail_size = budget - div(budget, 2)
    tail = text |> binary_part(byte_size(text) - tail_size, tail_size) |> whole_characters_after()
    dropped = byte_size(text) - byte_size(head) - byte_size(tail)

    IO.iodata_to_binary([
      head,
      "\n[... #{dropped} byte#{if dropped == 1, do: "", else: "s"} dropped ...]\n",
      tail
    ])
  end

  # A cut inside a multi-byte character: the head ends before it, the
  # tail starts after it. Only text that is UTF-8 there is adjusted.
  defp whole_characters_before(head) do
    binary_part(head, 0, byte_size(head) - incomplete_suffix(head, 1))
  end

  # Looks back from the end, at most 3 bytes, for the lead byte of the
  # last character; the bytes from it on are cut if it needs more.
  defp incomplete_suffix(head, n) when n > byte_size(head) or n > 3, do: 0

  defp incomplete_suffix(head, n) do
    case :binary.at(head, byte_size(head) - n) do
      byte when byte in 0x80..0xBF -> incomplete_suffix(head, n + 1)
      byte when byte in 0xC0..0xDF and n < 2 -> n
      byte when byte in 0xE0..0xEF and n < 3 -> n
      byte when byte in 0xF0..0xF7 and n < 4 -> n
      _complete -> 0
    end
  end

  defp whole_characters_after(<<byte, rest::binary>> = tail) when byte in 0x80..0xBF do
    if String.valid?(tail), do: tail, else: whole_characters_after(rest)
  end

  defp whole_characters_after(tail), do: tail

  @doc false
  @spec printable(binary()) :: String.t()
  def printable(bytes) do
    if String.valid?(bytes),
      do: bytes,
      else: bytes |> escape_invalid(bytes, 0, 0, []) |> IO.iodata_to_binary()
  end

  @escaped List.to_tuple(for byte <- 0..255, do: "\\x" <> Base.encode16(<<byte>>))

  # One pass (matching the rest, so the VM keeps a match context): runs
  # of valid characters are copied as slices of `whole`, each invalid byte
  # becomes `\xNN`.
  defp escape_invalid(<<char::utf8, rest::binary>>, whole, from, length, acc),
    do: escape_invalid(rest, whole, from, length + utf8_size(char), acc)

  defp escape_invalid(<<byte, rest::binary>>, whole, from, length, acc) do
    acc = [acc, binary_part(whole, from, length) | elem(@escaped, byte)]
    escape_invalid(rest, whole, from + length + 1, 0, acc)
  end

  defp escape_invalid(<<>>, whole, from, length, acc),
    do: [acc | binary_part(whole, from, length)]

  defp utf8_size(char) when char < 0x80, do: 1
  defp utf8_size(char) when char < 0x800, do: 2
  defp utf8_size(char) when char < 0x10000, do: 3
  defp utf8_size(_char), do: 4

  @doc """
  A stream's bytes for a model: cut to `budget` (`truncate/2`), then made
  printable (`printable/1`).

      iex> ExBashkit.Tool.Output.for_model(<<"abc", 0xFF, "defgh">>, 6)
      "abc\\n[... 3 bytes dropped ...]\\nfgh"
  """
  @spec for_model(binary(), non_neg_integer()) :: String.t()
  def for_model(bytes, budget), do: bytes |> truncate(budget) |> printable()

  @doc """
  A script's outcome as a model reads it: the exit code, then stdout and
  stderr (each cut to `budget` bytes), skipping an empty stream.

      iex> result = %ExBashkit.Result{stdout: "hi\\n", stderr: "", exit_code: 0}
      iex> ExBashkit.Tool.Output.streams(result, 1000)
      "exit code: 0\\nstdout:\\nhi\\n"
  """
  @spec streams(ExBashkit.Result.t(), non_neg_integer()) :: String.t()
  def streams(%ExBashkit.Result{} = result, budget) do
    IO.iodata_to_binary([
      "exit code: #{result.exit_code}\n",
      output_sections(result, budget),
      if(result.truncated,
        do: "[the sandbox's output cap was reached: it dropped the rest of the output]\n",
        else: []
      )
    ])
  end

  @doc """
  What a script cost, in a line a model reads.

      iex> stats = %ExBashkit.Result.Stats{wall_us: 12_500, cpu_us: 9_100, peak_memory_bytes: 3_300_000, file_bytes_written: 2048, commands: 42, runs: 1}
      iex> ExBashkit.Tool.Output.cost(stats)
      "cost: 12.5 ms wall, 9.1 ms CPU, 3.1 MiB peak memory, 2.0 KiB written to files, 42 commands\\n"
  """
  @spec cost(ExBashkit.Result.Stats.t()) :: String.t()
  def cost(%ExBashkit.Result.Stats{} = stats) do
    "cost: #{ms(stats.wall_us)} wall, #{ms(stats.cpu_us)} CPU, " <>
      "#{bytes(stats.peak_memory_bytes)} peak memory, " <>
      "#{bytes(stats.file_bytes_written)} written to files, #{count(stats.commands, "command")}\n"
  end

  defp count(1, noun), do: "1 #{noun}"
  defp count(n, noun), do: "#{n} #{noun}s"

  defp ms(us), do: "#{Float.round(us / 1000, 1)} ms"

  defp bytes(n) when n < 1024, do: "#{n} B"
  defp bytes(n) when n < 1024 * 1024, do: "#{Float.round(n / 1024, 1)} KiB"
  defp bytes(n), do: "#{Float.round(n / (1024 * 1024), 1)} MiB"

  @doc false
  # stdout and stderr sections, or a line saying there was none.
  @spec output_sections(%{stdout: binary(), stderr: binary()}, non_neg_integer()) :: iodata()
  def output_sections(%{stdout: "", stderr: ""}, _budget), do: "(no output)\n"

  def output_sections(%{stdout: stdout, stderr: stderr}, budget) do
    [section("stdout", stdout, budget), section("stderr", stderr, budget)]
  end

  defp section(_name, "", _budget), do: []

  defp section(name, bytes, budget) do
    text = for_model(bytes, budget)
    [name, ":\n", text, if(String.ends_with?(text, "\n"), do: [], else: "\n")]
  end
end
