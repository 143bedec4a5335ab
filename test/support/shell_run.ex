defmodule ExBashkit.Test.ShellRun do
  @moduledoc false
  # Runs ExBashkit.Shell in a process reading `input` (as lines, as in
  # IEx); returns its answer and what it wrote.

  @spec run(String.t(), keyword()) :: {term(), String.t()}
  def run(input, opts \\ []) do
    {:ok, io} = StringIO.open(input)

    answer =
      fn ->
        Process.group_leader(self(), io) &&
          ExBashkit.Shell.start(Keyword.put(opts, :input, :lines))
      end
      |> Task.async()
      |> Task.await(20_000)

    {_, output} = StringIO.contents(io)
    {answer, output}
  end
end
