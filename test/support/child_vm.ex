defmodule ExBashkit.Test.ChildVM do
  @moduledoc false
  # Runs Elixir code in a separate OS process, a VM of its own with this
  # suite's code paths and not distributed: what a crash would kill, what
  # must start from a VM without a node name.

  @doc """
  Evaluates `code` in a new VM with the library started. Returns its
  output (stdout and stderr) and exit status; a VM killed by a signal has
  status 128 + the signal (139 for SIGSEGV).
  """
  @spec run(String.t(), timeout()) :: {String.t(), non_neg_integer()}
  def run(code, timeout \\ 120_000) do
    code = "{:ok, _} = Application.ensure_all_started(:ex_bashkit)\n" <> code
    paths = Enum.flat_map(:code.get_path(), &["-pa", List.to_string(&1)])

    port =
      Port.open({:spawn_executable, System.find_executable("elixir")}, [
        :binary,
        :exit_status,
        :stderr_to_stdout,
        args: paths ++ ["-e", code]
      ])

    collect(port, [], System.monotonic_time(:millisecond) + timeout)
  end

  defp collect(port, output, until) do
    receive do
      {^port, {:data, data}} -> collect(port, [output | data], until)
      {^port, {:exit_status, status}} -> {IO.iodata_to_binary(output), status}
    after
      max(until - System.monotonic_time(:millisecond), 0) ->
        {:os_pid, os_pid} = Port.info(port, :os_pid)
        System.cmd("kill", ["-9", "#{os_pid}"])
        {IO.iodata_to_binary([output | "\n(killed: no answer in time)"]), 137}
    end
  end
end
