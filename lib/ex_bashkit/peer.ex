defmodule ExBashkit.Peer do
  @moduledoc """
  Runs Elixir code in a fresh Erlang peer node (OTP's `:peer`).

  Each call gets a new VM that no earlier call has touched, with the host's
  code paths (every compiled module, this library's included), evaluates
  the code there, captures its IO output and raw return value, and stops
  the VM. Nothing carries over between calls: a module defined in one run
  does not exist in the next.

  `output` is what the code writes to standard output and standard error,
  interleaved in the order written, from any process of the run (spawned
  ones and Tasks included). The capture is a unicode IO device: output is
  always valid UTF-8 (bytes written with `IO.binwrite/2` are read as
  Latin-1, like any unicode device does), and writing something that is not
  valid character data raises in the writer, as with any IO device, while
  the run goes on. Reading standard input gives `:eof`.

      iex> ExBashkit.Peer.run(~S|IO.puts("hello"); 1 + 1|)
      {:ok, %{output: "hello\\n", result: 2}}

  This is best-effort isolation, not a security boundary: the code runs with
  the host user's full system access. Use it for trusted experimentation —
  an agent's scratchpad — and use `ExBashkit.Session` for untrusted code.

  ## Options

  #{ExBashkit.Options.docs(ExBashkit.Peer.Job.schema())}

  ## Results

    * `{:ok, %{output: binary, result: term}}` — `result` is the value of
      the last expression, not inspected.
    * `{:error, :timeout, %{output: binary}}`
    * `{:error, :noconnection, %{output: binary}}` — the peer went away,
      for instance through `System.halt/1`.
    * `{:error, {kind, reason, stacktrace}, %{output: binary}}` — an
      exception, exit or throw. Errors are normalized to exceptions with
      `Exception.normalize/3`, as `rescue` would see them (`1 / 0` is
      `{:error, %ArithmeticError{}, _}`, where a raw `catch` gives
      `:badarith`). The stacktrace holds the frames of the user's code
      only, never the evaluator's. A process killed or crashing through a
      link is `{:exit, reason, []}`.

  `run/2` never raises for anything the code does.

  ## Lifetime and speed

  A peer never outlives its run: it is stopped when `run/2` returns for any
  reason, when the calling process is killed, and when the host VM dies
  (the peer watches its controlling process on the host and halts when it
  goes away).

  Booting a VM takes hundreds of milliseconds. After the first call, a
  small pool keeps spare peers booted in the background (never reused: each
  serves one run), so later calls skip the boot. Code in a peer may call
  `run/2` too: the nested run boots a VM of its own, which goes down with
  its parent.

  ## The pool

  By default `run/2` starts the pool itself, under this library's
  supervisor, the first time it is called, with
  `config :ex_bashkit, peer_pool_size: 2` spares (`0`: no spares, every
  run boots its VM). An application that uses no `Peer` has no pool. To
  choose when it starts, and with what size, place it in your own
  supervision tree, before anything that calls `run/2`:

      children = [
        {ExBashkit.Peer, pool_size: 4},
        MyApp.Agent
      ]

  Spares are booted only once `run/2` has been called. When no spare is
  ready, callers wait in line for the next VM to finish booting rather
  than boot their own, and while any caller waits the pool boots one VM
  per waiting caller and no spares: under load, no boot competes for the
  cores with one a caller is waiting for. Every VM is owned by the pool
  from the moment it starts booting: a caller that dies or gives up while
  its VM boots, or while it runs, leaves nothing behind.

  ## Distribution

  Peers are Erlang nodes, so the host VM must be distributed. When it is
  not, the first run starts distribution (see `ensure_distributed!/0`):
  EPMD and the VM's listener are bound to `127.0.0.1`, and the VM is named
  `ex_bashkit_…@127.0.0.1`, so no other machine can connect to it or to
  the peers. To choose otherwise, start distribution yourself before the
  first run (`--sname`/`--name`, or `Node.start/2`, with the kernel's
  `inet_dist_use_interface` and `ERL_EPMD_ADDRESS` as you want them):
  peers then take the host's naming (short or long) and listen where
  `inet_dist_use_interface` says. An EPMD that is already running is used
  as it is.
  """

  alias ExBashkit.Peer.{Job, Pool}

  @doc """
  The pool of spare VMs as a child of your supervision tree (see "The
  pool"): `{ExBashkit.Peer, pool_size: 4}`. `:pool_size` defaults to
  `config :ex_bashkit, peer_pool_size`, or `2`.

      iex> ExBashkit.Peer.child_spec(pool_size: 4).start
      {ExBashkit.Peer.Pool, :start_link, [[size: 4]]}
  """
  @spec child_spec(keyword()) :: Supervisor.child_spec()
  def child_spec(opts) do
    {size, rest} = Keyword.pop(opts, :pool_size)

    if rest != [] do
      raise ArgumentError,
            "ExBashkit.Peer.child_spec/1 takes only :pool_size, got: #{inspect(rest)}"
    end

    %{
      id: Pool,
      start: {Pool, :start_link, [if(size, do: [size: size], else: [])]},
      type: :worker
    }
  end

  alias ExBashkit.Telemetry

  @type result ::
          {:ok, %{output: String.t(), result: term()}}
          | {:error, :timeout | :noconnection, %{output: String.t()}}
          | {:error, {atom(), term(), Exception.stacktrace()}, %{output: String.t()}}

  @type option ::
          {:timeout, pos_integer()}
          | {:max_output, non_neg_integer() | :infinity}
          | {:setup, String.t() | Macro.t() | [String.t() | Macro.t()]}
          | {:env, %{optional(String.t()) => String.t()} | keyword()}
          | {:max_heap_size, pos_integer()}

  @doc """
  Evaluates `code` in a fresh peer node; see the module documentation.

      iex> {:error, {:error, %ArithmeticError{}, _}, %{output: "before\\n"}} =
      ...>   ExBashkit.Peer.run(~S|IO.puts("before"); 1 / 0|)
      iex> ExBashkit.Peer.run("x * 2", setup: "x = 21")
      {:ok, %{output: "", result: 42}}
  """
  @spec run(String.t(), [option()]) :: result()
  def run(code, opts \\ []) do
    job = job!(code, opts)

    Telemetry.span(
      [:ex_bashkit, :peer, :run],
      %{code_bytes: byte_size(code)},
      fn -> run_job(job) end,
      &run_stop/1
    )
  end

  defp run_stop(result) do
    output = result |> elem(tuple_size(result) - 1) |> Map.fetch!(:output)
    status = if elem(result, 0) == :ok, do: :ok, else: peer_status(elem(result, 1))
    {%{output_bytes: byte_size(output)}, %{status: status}}
  end

  defp peer_status(reason) when reason in [:timeout, :noconnection], do: reason
  defp peer_status(_raised), do: :error

  defp run_job(job) do
    deadline = System.monotonic_time(:millisecond) + job.timeout
    ensure_distributed!()

    case Pool.checkout(job.timeout) do
      {:ok, pool, peer} ->
        try do
          evaluate(peer, job, deadline)
        after
          Pool.release(pool, peer)
        end

      {:error, :timeout} ->
        {:error, :timeout, %{output: ""}}

      {:error, _reason} ->
        {:error, :noconnection, %{output: ""}}
    end
  end

  @doc """
  Makes the host VM distributed, which peer nodes need, if it is not yet.

  Starts EPMD when it is not running and gives the VM a unique long name on
  the loopback address (`ex_bashkit_…@127.0.0.1`). Both EPMD and the VM's
  distribution listener are bound to `127.0.0.1`, so no other machine can
  reach them; peers are started the same way. A distribution you start
  yourself is left as it is; see "Distribution" in the module docs.

  `run/2` calls it every time; it is idempotent. Call it at application
  start to choose when the switch happens: turning distribution on changes
  how this VM's pids and references are encoded, so pids serialized before
  (in tokens, caches, `:erlang.term_to_binary/1`) no longer compare equal to
  the live ones.

      iex> ExBashkit.Peer.ensure_distributed!()
      :ok
      iex> Node.alive?()
      true
  """
  @spec ensure_distributed!() :: :ok
  def ensure_distributed! do
    if Node.alive?(), do: :ok, else: start_distribution()
  end

  @loopback {127, 0, 0, 1}

  defp start_distribution do
    # Read by the distribution's listener when it opens, and by peers.
    unless Application.get_env(:kernel, :inet_dist_use_interface) do
      Application.put_env(:kernel, :inet_dist_use_interface, @loopback)
    end

    start_epmd()
    host = Application.get_env(:kernel, :inet_dist_use_interface) |> :inet.ntoa()
    name = :"ex_bashkit_#{System.pid()}_#{System.unique_integer([:positive])}@#{host}"

    case :net_kernel.start([name, :longnames]) do
      {:ok, _} ->
        :ok

      {:error, _} = error ->
        # Another process may have won the race.
        if Node.alive?(), do: :ok, else: raise("cannot start distribution: #{inspect(error)}")
    end
  end

  # An EPMD already running is used as it is; one we start listens on
  # loopback only, unless ERL_EPMD_ADDRESS says otherwise.
  defp start_epmd do
    found =
      case :os.find_executable(~c"epmd") do
        false -> Path.wildcard("#{:code.root_dir()}/erts-*/bin/epmd")
        path -> [List.to_string(path)]
      end

    address = if System.get_env("ERL_EPMD_ADDRESS"), do: [], else: ["-address", "127.0.0.1"]

    case found do
      [path | _] -> System.cmd(path, ["-daemon" | address])
      [] -> raise "cannot start distribution: epmd not found"
    end
  end

  # `deadline` bounds the whole call, the wait for a peer included.
  defp evaluate({_controller, node}, job, deadline) do
    ref = make_ref()
    runner = Node.spawn(node, ExBashkit.Peer.Evaluator, :run, [self(), ref, job.peer])
    monitor = Process.monitor(runner)
    output = %{chunks: [], truncated: false, max: job.max_output}
    collect(ref, monitor, deadline, output)
  end

  defp collect(ref, monitor, deadline, output) do
    # `after` takes at most 32 bits of milliseconds; longer waits go round.
    remaining = min(max(deadline - System.monotonic_time(:millisecond), 0), 0xFFFF_FFFF)

    receive do
      {^ref, :output, _} = message ->
        collect(ref, monitor, deadline, add(output, message))

      {^ref, :truncated} = message ->
        collect(ref, monitor, deadline, add(output, message))

      {^ref, :done, outcome} ->
        Process.demonitor(monitor, [:flush])

        case outcome do
          {:ok, value} -> {:ok, %{output: text(output), result: value}}
          {:error, error} -> {:error, error, %{output: text(output)}}
        end

      {:DOWN, ^monitor, :process, _, :noconnection} ->
        {:error, :noconnection, %{output: text(drain(ref, output))}}

      {:DOWN, ^monitor, :process, _, reason} ->
        {:error, {:exit, reason, []}, %{output: text(drain(ref, output))}}
    after
      remaining ->
        if System.monotonic_time(:millisecond) < deadline do
          collect(ref, monitor, deadline, output)
        else
          Process.demonitor(monitor, [:flush])
          {:error, :timeout, %{output: text(drain(ref, output))}}
        end
    end
  end

  defp add(output, {_ref, :output, chunk}), do: %{output | chunks: [output.chunks | chunk]}
  defp add(output, {_ref, :truncated}), do: %{output | truncated: true}

  # Output that arrived before the peer went away still counts.
  defp drain(ref, output) do
    receive do
      {^ref, :output, _} = message -> drain(ref, add(output, message))
      {^ref, :truncated} = message -> drain(ref, add(output, message))
    after
      0 -> output
    end
  end

  # The peer caps output as it is produced; a cut output ends with a notice.
  defp text(%{chunks: chunks, truncated: false}), do: IO.iodata_to_binary(chunks)

  defp text(%{chunks: chunks, max: max}),
    do: IO.iodata_to_binary([chunks, "\n... (output truncated at #{max} bytes)\n"])

  defp job!(code, _opts) when not is_binary(code) do
    raise ArgumentError, "code must be a string of Elixir source, got: #{inspect(code)}"
  end

  defp job!(code, opts) do
    opts = ExBashkit.Options.validate!(opts, Job.schema(), "ExBashkit.Peer.run/2")
    job = Map.take(opts, [:setup, :max_output, :env, :max_heap_size])
    %{timeout: opts.timeout, max_output: opts.max_output, peer: Map.put(job, :code, code)}
  end
end
