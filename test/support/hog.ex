defmodule ExBashkit.Test.Hog do
  @moduledoc false
  # A builtin a script can drive to exhaust its VM's memory: `hog MB`
  # allocates MB mebibytes and holds them, as a careless callback might.
  @behaviour ExBashkit.Builtin

  @impl true
  def call(_arg, %{args: [megabytes]}) do
    chunks = for _ <- 1..String.to_integer(megabytes), do: :binary.copy(<<1>>, 1024 * 1024)
    {:ok, "held #{length(chunks)} MiB #{:erlang.phash2(chunks)}\n"}
  end
end
