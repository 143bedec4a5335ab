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

  @doc """
  Runs `fun`, sampling the resident set every few milliseconds meanwhile;
  returns its result and the peak growth in KiB.
  """
  @spec peak_growth_kb((() -> result)) :: {result, integer()} when result: term()
  def peak_growth_kb(fun) do
    before = rss_kb()
    sampler = Task.async(fn -> sample(before) end)
    result = fun.()
    send(sampler.pid, :stop)
    {result, max(Task.await(sampler), rss_kb()) - before}
  end

  defp sample(peak) do
    receive do
      :stop -> peak
    after
      2 -> sample(max(peak, rss_kb()))
    end
  end
end
