defmodule ExBashkit.Peer.Evaluator do
  @moduledoc false
  # The half of ExBashkit.Peer that runs inside the peer node.
  #
  # `boot/1` prepares a fresh node: Elixir started, the evaluator warmed up,
  # and a watchdog that halts the node as soon as its controlling process on
  # the host exits — when it is stopped, when its owner dies, or when the
  # whole host VM goes away (the monitor then fires with :noconnection).
  #
  # `run/3` evaluates one piece of code. Output goes to a capture device (an
  # IO server) that forwards it to the host as it is produced, capped at
  # `:max_output` bytes, and that also delivers the final outcome, so the
  # host sees all output sent before the result, in order.

  @doc "The host's environment variables a peer keeps: what a VM needs to run."
  @spec kept_env() :: [String.t()]
  def kept_env, do: ~w(PATH HOME LANG LC_ALL LC_CTYPE TMPDIR)

  @doc "Readies a freshly booted node for one `run/3`, with the host's code path."
  @spec boot(pid(), [charlist()]) :: :ok
  def boot(controller, code_path) do
    # Before any module beyond this one loads: protocols must come from the
    # host's consolidated directory.
    true = :code.set_path(code_path)
    {:ok, _} = Application.ensure_all_started(:elixir)
    _ = Application.ensure_all_started(:logger)
    # The peer's log would land on the host's console, not in the output.
    :ok = :logger.set_primary_config(:level, :none)

    spawn(fn ->
      monitor = Process.monitor(controller)

      receive do
        {:DOWN, ^monitor, :process, _, _} -> :erlang.halt(0, flush: false)
      end
    end)

    # Loads the parser and evaluator now rather than in the first run.
    {2, _} = Code.eval_string("1 + 1")
    :ok
  end

  @doc """
  Evaluates `setup` then `code`, reporting to `host` as `{ref, :output,
  chunk}` messages, one `{ref, :truncated}` when output passes the cap, and
  a final `{ref, :done, outcome}`.
  """
  @spec run(pid(), reference(), map()) :: :ok
  def run(host, ref, %{code: code, setup: setup, max_output: max_output} = job) do
    # The host's environment was left out when this node booted, but a
    # variable the host set while the boot was starting may have slipped
    # through: clear again, now, what is not kept.
    for {name, _} <- System.get_env(), name not in kept_env(), do: System.delete_env(name)
    Enum.each(job.env, fn {name, value} -> System.put_env(name, value) end)

    if heap = job.max_heap_size do
      :erlang.system_flag(:max_heap_size, %{size: heap, kill: true, error_logger: false})
    end

    device = spawn_link(fn -> capture(host, ref, max_output) end)
    sink = spawn_link(fn -> sink() end)
    redirect_standard_error(sink)
    runner = self()

    {evaluator, monitor} =
      spawn_monitor(fn ->
        Process.group_leader(self(), sink)
        send(runner, {:outcome, evaluate(setup, code, device)})
      end)

    outcome =
      receive do
        {:outcome, outcome} ->
          Process.demonitor(monitor, [:flush])
          outcome

        {:DOWN, ^monitor, :process, ^evaluator, reason} ->
          {:error, {:exit, reason, []}}
      end

    # The host must see the outcome before this process's exit, which it
    # monitors: wait until the device has sent it.
    send(device, {:finish, outcome, self()})

    receive do
      :finished -> :ok
    end
  end

  defp evaluate(setup, code, device) do
    {binding, env} =
      Enum.reduce(setup, {[], Code.env_for_eval([])}, fn quoted, {binding, env} ->
        {_, binding, env} = Code.eval_quoted_with_env(quoted, binding, env)
        {binding, env}
      end)

    Process.group_leader(self(), device)
    redirect_standard_error(device)
    quoted = Code.string_to_quoted!(code, file: "nofile")
    {value, _, _} = Code.eval_quoted_with_env(quoted, binding, env)
    {:ok, value}
  catch
    kind, reason ->
      stacktrace = user_frames(__STACKTRACE__)
      {:error, {kind, Exception.normalize(kind, reason, stacktrace), stacktrace}}
  end

  # This node serves one run, so `:standard_error` can simply be renamed:
  # whatever the code writes to it lands in the same capture as standard
  # output, interleaved as written.
  defp redirect_standard_error(device) do
    if Process.whereis(:standard_error), do: Process.unregister(:standard_error)
    Process.register(device, :standard_error)
  end

  # The frames from the evaluator's entry point down are ours (this module,
  # Code, the Elixir and Erlang evaluators): the user sees none of them.
  @entry [__MODULE__, Code, Module.ParallelChecker, :elixir]
  defp user_frames(stacktrace) do
    stacktrace
    |> Enum.take_while(fn frame -> elem(frame, 0) not in @entry end)
    |> Enum.reverse()
    |> Enum.drop_while(&evaluator_frame?/1)
    |> Enum.reverse()
  end

  defp evaluator_frame?({:erl_eval, _, _, _}), do: true

  defp evaluator_frame?({module, _, _, _}),
    do: String.starts_with?(Atom.to_string(module), "elixir_")

  # The IO server user code writes to, standard output and standard error
  # alike. `left` is the byte budget (or :infinity, or :spent once the host
  # has been told of the truncation). Like a unicode IO device, it turns
  # what it is given into UTF-8 and refuses what it cannot: the writer gets
  # the error (and raises), the capture goes on.
  defp capture(host, ref, left) do
    receive do
      {:io_request, from, reply_as, request} ->
        {reply, chars} = io(request)
        left = forward(host, ref, chars, left)
        send(from, {:io_reply, reply_as, reply})
        capture(host, ref, left)

      {:finish, outcome, runner} ->
        send(host, {ref, :done, outcome})
        send(runner, :finished)
    end
  end

  defp forward(_host, _ref, "", left), do: left
  defp forward(_host, _ref, _chars, :spent), do: :spent

  defp forward(host, ref, chars, left) when left == :infinity or byte_size(chars) <= left do
    send(host, {ref, :output, chars})
    if left == :infinity, do: left, else: left - byte_size(chars)
  end

  defp forward(host, ref, chars, left) do
    send(host, {ref, :output, binary_part(chars, 0, char_boundary(chars, left))})
    send(host, {ref, :truncated})
    :spent
  end

  # The largest cut at or before `at` that does not split a UTF-8 character:
  # back up over continuation bytes (0b10xxxxxx).
  defp char_boundary(_chars, 0), do: 0

  defp char_boundary(chars, at) do
    case :binary.at(chars, at) do
      byte when Bitwise.band(byte, 0xC0) == 0x80 -> char_boundary(chars, at - 1)
      _ -> at
    end
  end

  defp io({:put_chars, encoding, chars}), do: put_chars(encoding, chars)

  defp io({:put_chars, encoding, module, function, args}) do
    put_chars(encoding, apply(module, function, args))
  rescue
    _ -> {{:error, :put_chars}, ""}
  end

  defp io({:put_chars, chars}), do: io({:put_chars, :latin1, chars})

  defp io({:put_chars, module, function, args}),
    do: io({:put_chars, :latin1, module, function, args})

  defp io({:requests, requests}) do
    Enum.reduce_while(requests, {:ok, ""}, fn request, {:ok, acc} ->
      case io(request) do
        {:ok, chars} -> {:cont, {:ok, acc <> chars}}
        {error, _} -> {:halt, {error, acc}}
      end
    end)
  end

  defp io({:setopts, _}), do: {:ok, ""}
  defp io(:getopts), do: {[binary: true, encoding: :unicode], ""}
  # There is no input to read.
  defp io({request, _, _}) when request in [:get_chars, :get_line], do: {:eof, ""}
  defp io({request, _, _, _}) when request in [:get_chars, :get_line], do: {:eof, ""}
  defp io({:get_until, _, _, _, _, _}), do: {:eof, ""}
  defp io({:get_until, _, _, _, _}), do: {:eof, ""}
  defp io(_other), do: {{:error, :enotsup}, ""}

  # `{:error, :no_translation}` for characters that have no UTF-8 form
  # (the writer raises ErlangError), `{:error, :put_chars}` for what is not
  # chardata at all (the writer raises ArgumentError).
  defp put_chars(encoding, chars) when encoding in [:unicode, :utf8, :latin1] do
    from = if encoding == :latin1, do: :latin1, else: :unicode

    case :unicode.characters_to_binary(chars, from) do
      binary when is_binary(binary) -> {:ok, binary}
      _ -> {{:error, :no_translation}, ""}
    end
  rescue
    ArgumentError -> {{:error, :put_chars}, ""}
  end

  defp put_chars(_encoding, _chars), do: {{:error, :put_chars}, ""}

  # Setup's output goes nowhere.
  defp sink do
    receive do
      {:io_request, from, reply_as, request} ->
        {reply, _} = io(request)
        send(from, {:io_reply, reply_as, reply})
        sink()
    end
  end
end
