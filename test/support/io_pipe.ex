defmodule ExBashkit.Test.IOPipe do
  @moduledoc false
  # An IO device for tests of line-based transports (ExBashkit.MCP.Stdio):
  # lines are fed to it one at a time and read with IO.read(pipe, :line),
  # which blocks until one is fed or the pipe is closed (then :eof); what
  # is written to it is sent to its owner as {:io_pipe, pipe, chardata}.

  use GenServer

  @doc "A pipe whose writes go to the calling process."
  @spec start() :: pid()
  def start do
    {:ok, pipe} = GenServer.start(__MODULE__, self())
    pipe
  end

  @doc "Makes `line` (a newline is added) the next one to read."
  @spec feed(pid(), String.t()) :: :ok
  def feed(pipe, line), do: GenServer.call(pipe, {:feed, line <> "\n"})

  @doc "Ends the input: reads past what was fed answer :eof."
  @spec close(pid()) :: :ok
  def close(pipe), do: GenServer.call(pipe, :close)

  @impl true
  def init(owner),
    do: {:ok, %{owner: owner, lines: :queue.new(), readers: :queue.new(), closed?: false}}

  @impl true
  def handle_call({:feed, line}, _from, state),
    do: {:reply, :ok, serve(%{state | lines: :queue.in(line, state.lines)})}

  def handle_call(:close, _from, state), do: {:reply, :ok, serve(%{state | closed?: true})}

  @impl true
  def handle_info({:io_request, from, reply_as, request}, state),
    do: {:noreply, request(request, {from, reply_as}, state)}

  defp request({:get_line, _encoding, _prompt}, reader, state),
    do: serve(%{state | readers: :queue.in(reader, state.readers)})

  defp request({:put_chars, _encoding, chars}, reader, state) do
    send(state.owner, {:io_pipe, self(), IO.chardata_to_string(chars)})
    reply(reader, :ok)
    state
  end

  defp request({:put_chars, encoding, module, function, args}, reader, state),
    do: request({:put_chars, encoding, apply(module, function, args)}, reader, state)

  defp request(_other, reader, state) do
    reply(reader, {:error, :request})
    state
  end

  # Answers waiting readers with fed lines, or :eof once closed.
  defp serve(state) do
    case {:queue.out(state.readers), :queue.out(state.lines)} do
      {{{:value, reader}, readers}, {{:value, line}, lines}} ->
        reply(reader, line)
        serve(%{state | readers: readers, lines: lines})

      {{{:value, reader}, readers}, {:empty, _}} when state.closed? ->
        reply(reader, :eof)
        serve(%{state | readers: readers})

      _ ->
        state
    end
  end

  defp reply({from, reply_as}, reply), do: send(from, {:io_reply, reply_as, reply})
end
