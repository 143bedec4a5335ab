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

  @result "ex_bashkit child VM result: "

  @doc """
  Evaluates `code` as `run/2` does, in a VM where nothing else runs, and
  returns the term it ends with; raises with the VM's output if it gave
  none. For measurements of a VM's own memory.
  """
  @spec eval!(String.t(), timeout()) :: term()
  def eval!(code, timeout \\ 120_000) do
    {output, status} =
      run(
        """
        result = (fn ->
        #{code}
        end).()
        IO.write("\\n#{@result}" <> Base.encode64(:erlang.term_to_binary(result)) <> "\\n")
        """,
        timeout
      )

    case Regex.run(~r/^#{@result}(\S+)$/m, output, capture: :all_but_first) do
      [encoded] when status == 0 -> encoded |> Base.decode64!() |> :erlang.binary_to_term()
      _ -> raise "the child VM gave no result (status #{status}):\n#{output}"
    end
  end
end
