defmodule ExBashkit.DistributionStartTest do
  # A VM that is not distributed becomes so on first use of a sandbox node,
  # and its name changes then: nothing may keep the old one. Run in a VM of
  # its own, since this suite's VM may be distributed already.
  use ExUnit.Case, async: true

  alias ExBashkit.Test.ChildVM

  @moduletag timeout: 120_000

  test "an isolated server on the in-memory store, in a VM that was not distributed" do
    code = ~S"""
    false = Node.alive?()

    {:ok, pid} =
      ExBashkit.Server.get_or_start("flip",
        isolation: :node,
        store: ExBashkit.Store.Memory,
        persist: :after_exec
      )

    true = Node.alive?()
    true = node(pid) != node()
    {:ok, %{stdout: out}} = ExBashkit.Server.exec(pid, "echo kept > /f; cat /f")
    IO.puts("exec: " <> out)
    {:ok, record} = ExBashkit.Store.Memory.fetch([], "flip")
    IO.puts("stored: #{byte_size(record) > 0}")
    :ok = ExBashkit.Server.hibernate(pid)
    {:ok, %{stdout: again}} = ExBashkit.Server.exec(pid, "cat /f")
    IO.puts("after hibernate: " <> again)
    :ok = ExBashkit.Server.stop(pid)
    """

    {output, status} = ChildVM.run(code)
    assert status == 0, output
    assert output =~ "exec: kept\n"
    assert output =~ "stored: true\n"
    assert output =~ "after hibernate: kept\n"
  end
end
