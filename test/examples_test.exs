defmodule ExBashkit.ExamplesTest do
  # The scripted agent of examples/agent.exs runs to its end, through every
  # kind of answer a model gets back: files, a pipeline, a timeout, an edit.
  use ExUnit.Case, async: true

  import ExUnit.CaptureIO

  test "examples/agent.exs" do
    transcript = capture_io(fn -> Code.eval_file("examples/agent.exs") end)

    for expected <- [
          "tools offered: bash, read_file, write_file, edit_file, list_dir",
          "       2\tRETRIES=1",
          "     25 db\n       15 cache\n        5 http",
          "tool (error):\n  The command timed out",
          "  waiting for the backlog...",
          "Replaced 1 occurrence in /project/deploy.sh.",
          "retries now: 5",
          "14 messages"
        ] do
      assert transcript =~ expected
    end
  end
end
