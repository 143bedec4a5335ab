defmodule ExBashkit.Test.Memory do
  @moduledoc false

  @doc "This OS process's resident set size in KiB (Linux)."
  @spec rss_kb() :: non_neg_integer()
  def rss_kb do
    "/proc/self/status"
    |> File.read!()
    |> then(&Regex.run(~r/VmRSS:\s+(\d+)/, &1, capture: :all_but_first))
    |> hd()
    |> String.to_integer()
  end
end
