defmodule ExBashkit.MCP.Stdio do
  @moduledoc """
  Serves `ExBashkit.MCP` over stdio, MCP's local transport: one JSON-RPC
  message per line on the input, one per line on the output, nothing else
  on the output. `mix ex_bashkit.mcp` runs it on the VM's own stdin and
  stdout; an application can run it on any pair of IO devices.

  Tool calls run one at a time, in order, in a task apart from the server,
  which meanwhile answers `ping` and acts on `notifications/cancelled`: a
  cancelled call still running is interrupted (`ExBashkit.Session.cancel/1`)
  and, as the protocol asks, gets no answer; one still waiting never runs.
  When the input ends, the server answers the calls it was sent, then
  stops; when the caller of `serve/2` exits, the call running is
  interrupted and the server stops at once.
  """

  use GenServer
  require Logger

  alias ExBashkit.{JSON, MCP, Sandbox}

  @cancel_retry_ms 20

  @doc """
  Serves `mcp` until the input ends, then returns `:ok`.

  ## Options

    * `:input` — the IO device messages are read from (default: `:stdio`,
      the caller's group leader).
    * `:output` — the IO device answers are written to (default: `:stdio`).

  The server runs under the library's supervision tree; the caller waits
  for it (and stops it, if the caller exits first).

      iex> {:ok, input} = StringIO.open(~s({"jsonrpc":"2.0","id":1,"method":"ping"}\\n))
      iex> {:ok, output} = StringIO.open("")
      iex> ExBashkit.MCP.Stdio.serve(ExBashkit.MCP.new(ExBashkit.Session.new()), input: input, output: output)
      :ok
      iex> StringIO.contents(output)
      {"", ~s({"id":1,"jsonrpc":"2.0","result":{}}\\n)}
  """
  @spec serve(MCP.t(), keyword()) :: :ok
  def serve(%MCP{} = mcp, opts \\ []) do
    devices = %{input: device!(opts, :input), output: device!(opts, :output)}

    {:ok, pid} =
      DynamicSupervisor.start_child(
        ExBashkit.MCP.Supervisor,
        {__MODULE__, {mcp, devices, self()}}
      )

    ref = Process.monitor(pid)

    receive do
      {:DOWN, ^ref, :process, ^pid, _reason} -> :ok
    end
  end

  @doc false
  def child_spec(args),
    do: %{id: __MODULE__, start: {__MODULE__, :start_link, [args]}, restart: :temporary}

  @doc false
  def start_link({mcp, devices, caller}),
    do: GenServer.start_link(__MODULE__, {mcp, devices, caller})

  # ---- server -----------------------------------------------------------------

  @impl true
  def init({mcp, devices, caller}) do
    Process.flag(:trap_exit, true)
    caller_ref = Process.monitor(caller)
    server = self()
    reader = spawn_link(fn -> read_lines(devices.input, server) end)

    {:ok,
     %{
       mcp: mcp,
       output: devices.output,
       reader: reader,
       input: :open,
       caller_ref: caller_ref,
       # the tools/call running: %{id, task, cancelled?}
       running: nil,
       waiting: :queue.new()
     }}
  end

  @impl true
  def handle_info({:line, line}, state),
    do: {:noreply, line |> String.trim_trailing() |> message(state)}

  # The client has said all it will: answer what it asked, then stop.
  def handle_info(:eof, state), do: done(%{state | input: :ended})

  def handle_info({ref, reply}, %{running: %{task: %Task{ref: ref}} = running} = state) do
    Process.demonitor(ref, [:flush])
    unless running.cancelled?, do: write(state, reply)
    done(next(%{state | running: nil}))
  end

  def handle_info({:DOWN, ref, :process, _, reason}, %{running: %{task: %Task{ref: ref}}} = state) do
    unless state.running.cancelled? do
      Logger.error("ExBashkit.MCP.Stdio: a tool call crashed: #{Exception.format_exit(reason)}")
      write(state, MCP.error(state.running.id, -32_603, "Internal error: the tool call crashed"))
    end

    done(next(%{state | running: nil}))
  end

  def handle_info({:DOWN, ref, :process, _, _}, %{caller_ref: ref} = state),
    do: {:stop, :normal, interrupt(state)}

  def handle_info({:EXIT, reader, reason}, %{reader: reader} = state) when reason != :normal do
    Logger.error(
      "ExBashkit.MCP.Stdio: reading the input failed: #{Exception.format_exit(reason)}"
    )

    {:stop, :normal, interrupt(state)}
  end

  # A cancelled call is interrupted in its session, which keeps the
  # session whole (killing the call's task would end a worker's session).
  # Until the script has started there is nothing to interrupt, so this
  # tries again until the call answers.
  def handle_info(:cancel_running, %{running: %{cancelled?: true, task: task}} = state) do
    if sandbox = state.mcp.sandbox do
      if Sandbox.cancel(sandbox) == :idle,
        do: Process.send_after(self(), :cancel_running, @cancel_retry_ms)

      {:noreply, state}
    else
      Task.shutdown(task, :brutal_kill)
      done(next(%{state | running: nil}))
    end
  end

  def handle_info(_other, state), do: {:noreply, state}

  # The reader is most likely blocked reading, which a :normal exit of its
  # linked server would not end.
  @impl true
  def terminate(_reason, state), do: Process.exit(state.reader, :kill)

  defp done(%{input: :ended, running: nil} = state), do: {:stop, :normal, state}
  defp done(state), do: {:noreply, state}

  defp message("", state), do: state

  defp message(line, state) do
    case JSON.decode(line) do
      {:ok, message} -> route(MCP.classify(message), message, state)
      {:error, why} -> write(state, MCP.error(nil, -32_700, "Parse error: " <> why))
    end
  end

  # tools/call waits its turn; everything else is answered at once.
  defp route({:request, id, "tools/call", _}, message, %{mcp: %{phase: phase}} = state)
       when phase != :new,
       do: next(%{state | waiting: :queue.in({id, message}, state.waiting)})

  defp route({:notification, "notifications/cancelled", %{"requestId" => id}}, _, state),
    do: cancel(state, id)

  defp route(_kind, message, state) do
    {reply, mcp} = MCP.handle(state.mcp, message)
    if reply, do: write(state, reply)
    %{state | mcp: mcp}
  end

  defp next(%{running: nil} = state) do
    case :queue.out(state.waiting) do
      {{:value, {id, message}}, waiting} ->
        mcp = state.mcp

        task =
          Task.Supervisor.async_nolink(ExBashkit.TaskSupervisor, fn ->
            elem(MCP.handle(mcp, message), 0)
          end)

        %{state | running: %{id: id, task: task, cancelled?: false}, waiting: waiting}

      {:empty, _} ->
        state
    end
  end

  defp next(state), do: state

  defp cancel(%{running: %{id: id}} = state, id) do
    send(self(), :cancel_running)
    put_in(state.running.cancelled?, true)
  end

  defp cancel(state, id),
    do: %{state | waiting: :queue.filter(fn {waiting, _} -> waiting != id end, state.waiting)}

  # The caller is gone: nothing will read an answer. Stopping the task
  # (the session's caller) ends its script too.
  defp interrupt(%{running: %{task: task}} = state) do
    if state.mcp.sandbox, do: Sandbox.cancel(state.mcp.sandbox)
    Task.shutdown(task, :brutal_kill)
    %{state | running: nil, waiting: :queue.new()}
  end

  defp interrupt(state), do: %{state | waiting: :queue.new()}

  defp write(state, reply) do
    IO.write(state.output, [MCP.encode_reply(reply), ?\n])
    state
  end

  defp read_lines(input, server) do
    case IO.read(input, :line) do
      :eof ->
        send(server, :eof)

      {:error, reason} ->
        exit({:read_failed, reason})

      line ->
        send(server, {:line, IO.chardata_to_string(line)})
        read_lines(input, server)
    end
  end

  defp device!(opts, key) do
    case Keyword.get(opts, key, :stdio) do
      :stdio ->
        Process.group_leader()

      device when is_pid(device) or is_atom(device) ->
        device

      other ->
        raise ArgumentError,
              "#{inspect(key)} must be an IO device (a pid or a name), got: #{inspect(other)}"
    end
  end
end
