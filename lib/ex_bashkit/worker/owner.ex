defmodule ExBashkit.Worker.Owner do
  @moduledoc false
  # The process that owns one worker (see ExBashkit.Worker): it starts the
  # OS process, speaks its frames, fans a script's output out to its
  # listeners, hands builtin and virtual_fs calls to the caller's callback
  # server, and kills the worker (SIGKILL) when a script outlives its
  # deadline, is frozen over its memory cap, its caller dies mid-script, or
  # the session is dropped. Every call it answers for a session, and every
  # pending call it names, carries `{ExBashkit.Worker.Owner, owner, id}`.

  use GenServer, restart: :temporary

  alias ExBashkit.{Native, Telemetry}
  alias ExBashkit.Worker.{Hardening, Spares, Zygote}

  # How long a worker may take to build its session (host mounts, CPython).
  @start_deadline_ms 30_000
  # How long a file operation, cancel or info may take before the worker is
  # taken for stuck: they never wait for a script.
  @request_deadline_ms 30_000
  # A script whose caller died stops at its next await point; one that does
  # not by then is inside work that never yields.
  @orphan_grace_ms 1_000

  @doc false
  def child_spec(start), do: %{super(start) | id: __MODULE__}

  @doc false
  def start_link(start), do: GenServer.start_link(__MODULE__, start)

  @doc "What every later call of a session whose worker is gone answers."
  @spec gone(String.t()) :: String.t()
  def gone(why),
    do:
      "the session's worker process is gone (#{why}); it can run nothing more: start a new session"

  @impl true
  def init({executable, plan, native}) do
    state = %{
      port: nil,
      # The Port's process, which the owner kills (a zygote's launcher,
      # whose end makes the zygote kill the worker it forked), and the
      # worker's own, which its session reports.
      port_pid: nil,
      os_pid: nil,
      status: {:starting, [], nil},
      next: 1,
      jobs: %{},
      requests: %{},
      target: nil,
      layers: [],
      cgroups: [],
      plan: plan,
      # How the worker was started, until it is ready: a prepared spare
      # that refuses the session (hardened for other needs) is replaced by
      # a plain one.
      start: nil
    }

    # Starting the process (~5-10 ms without a spare) happens after init:
    # the supervisor starts its children one at a time.
    {:ok, state, {:continue, {:start, executable, plan.args, native}}}
  end

  @impl true
  def handle_continue({:start, executable, args, native}, state) do
    {executable, args} = Zygote.launch(executable, args)

    {port, os_pid} = take_or_open(executable, args, :prepared)
    frame(port, {:new, native})
    timer = Process.send_after(self(), {:deadline, :start}, @start_deadline_ms)
    {:starting, waiting, nil} = state.status
    state = %{state | port: port, port_pid: os_pid, os_pid: os_pid}
    {:noreply, %{state | status: {:starting, waiting, timer}, start: {executable, args, native}}}
  end

  defp take_or_open(executable, args, kind) do
    case Spares.take(executable, args, kind) do
      nil ->
        port = Spares.open(executable, args)
        {:os_pid, os_pid} = Port.info(port, :os_pid)
        {port, os_pid}

      {port, os_pid} ->
        # A spare's Port was opened by ExBashkit.Worker.Spares: it must
        # close when this owner goes, as one it opened would.
        Process.link(port)
        {port, os_pid}
    end
  end

  @impl true
  def handle_call(:ready, from, %{status: {:starting, waiting, timer}} = state),
    do: {:noreply, %{state | status: {:starting, [from | waiting], timer}}}

  def handle_call(:ready, _from, %{status: :ready} = state),
    do: {:reply, {:ok, state.os_pid}, state}

  def handle_call(:info, _from, state) do
    alive = state.status == :ready

    {:reply, %{os_pid: if(alive, do: state.os_pid), alive: alive, layers: state.layers}, state}
  end

  def handle_call(_request, _from, %{status: {:dead, message}} = state),
    do: {:reply, {:error, message}, state}

  def handle_call({:exec, guard, script, caller, tag, callbacks_to, call}, _from, state) do
    {id, state} = next_id(state)
    listeners = if call, do: call.stream_to, else: []
    keep = call != nil and call.keep_output

    job = %{
      kind: :exec,
      guard: guard,
      caller: caller,
      tag: tag,
      monitor: Process.monitor(caller),
      callbacks_to: callbacks_to,
      listeners: listeners,
      keep: keep,
      out: [],
      err: [],
      started: false
    }

    options =
      call &&
        %{
          timeout_ms: call.timeout_ms,
          stdin: call.stdin,
          env: call.env,
          cwd: call.cwd,
          args: call.args,
          credentials: call.credentials,
          stream: listeners != [] or keep
        }

    frame(state.port, {:exec, id, script, options})
    {:reply, {:ok, {__MODULE__, self(), id}}, put_in(state.jobs[id], job)}
  end

  def handle_call({:job, guard, kind, args, caller, tag}, _from, state) do
    {id, state} = next_id(state)

    job = %{
      kind: kind,
      guard: guard,
      caller: caller,
      tag: tag,
      monitor: Process.monitor(caller),
      started: false
    }

    frame(state.port, List.to_tuple([kind, id | args]))
    {:reply, {:ok, {__MODULE__, self(), id}}, put_in(state.jobs[id], job)}
  end

  def handle_call({:fs, guard, op, args}, from, state) do
    {id, state} = next_id(state)
    frame(state.port, {:fs, id, op, args})
    {:noreply, request(state, id, from, guard)}
  end

  def handle_call({:cancel, guard}, from, state) do
    {id, state} = next_id(state)
    frame(state.port, {:cancel, id})
    {:noreply, request(state, id, from, guard)}
  end

  def handle_call({:abandon, id}, _from, state) do
    case state.jobs do
      %{^id => %{started: true} = job} ->
        # Past its deadline and still running: only the kernel can stop it.
        state = kill(state, :timeout, "a script did not stop at its deadline", except: id)
        {:reply, {:killed, kept(job)}, state}

      %{^id => job} ->
        frame(state.port, {:abandon, id})
        Process.demonitor(job.monitor, [:flush])
        {:reply, :queued, %{state | jobs: Map.delete(state.jobs, id)}}

      %{} ->
        {:reply, :answered, state}
    end
  end

  def handle_call({:callback_server, from, server}, _from, state) do
    target = if state.target == from, do: server, else: state.target
    {:reply, :ok, %{state | target: target}}
  end

  def handle_call({:callbacks_done, from, server}, _from, state) do
    target = if state.target in [from, server], do: nil, else: state.target
    {:reply, :ok, %{state | target: target}}
  end

  @impl true
  def handle_cast(:stop, state) do
    state =
      if alive?(state),
        do: kill(state, :closed, "the session was closed", telemetry: false),
        else: state

    {:stop, :normal, state}
  end

  @impl true
  def handle_info({port, {:data, data}}, %{port: port} = state),
    do: {:noreply, handle_frame(:erlang.binary_to_term(data, [:safe]), state)}

  def handle_info({port, {:exit_status, status}}, %{port: port} = state) do
    # The Port closes when its pipes do too: a worker forked by the zygote
    # holds them, and ends when it reads the end of its stdin.
    Spares.close(port)

    if alive?(state) do
      Telemetry.worker_killed(:exited, state.os_pid)
      {:noreply, died(state, :exited, "the worker process exited (status #{status})")}
    else
      {:noreply, state}
    end
  end

  def handle_info({:callback_reply, id, reply}, state) do
    if alive?(state), do: frame(state.port, {:reply, id, reply})
    {:noreply, state}
  end

  def handle_info({:DOWN, monitor, :process, _pid, _reason}, state) do
    case Enum.find(state.jobs, fn {_id, job} -> job.monitor == monitor end) do
      {id, job} ->
        frame(state.port, {:abandon, id})
        if job.started, do: Process.send_after(self(), {:orphan, id}, @orphan_grace_ms)
        {:noreply, %{state | jobs: Map.put(state.jobs, id, %{job | caller: nil})}}

      nil ->
        {:noreply, state}
    end
  end

  def handle_info({:orphan, id}, state) do
    case state.jobs do
      %{^id => %{caller: nil}} ->
        {:noreply, kill(state, :orphaned, "a script whose caller exited did not stop")}

      _ ->
        {:noreply, state}
    end
  end

  def handle_info({:deadline, :start}, %{status: {:starting, _, _}} = state),
    do: {:noreply, kill(state, :start, "the worker did not build its session in time")}

  def handle_info({:deadline, id}, state) do
    if Map.has_key?(state.requests, id),
      do: {:noreply, kill(state, :unresponsive, "the worker stopped answering")},
      else: {:noreply, state}
  end

  def handle_info(:ex_bashkit_session_dropped, state) do
    state = if alive?(state), do: kill(state, :dropped, "the session was dropped"), else: state
    {:stop, :normal, state}
  end

  def handle_info(_other, state), do: {:noreply, state}

  # ---- frames from the worker ------------------------------------------------

  defp handle_frame(
         {:new, {:ok, {report, cgroups, os_pid}}},
         %{status: {:starting, waiting, timer}} = state
       ) do
    state = %{state | cgroups: cgroups, os_pid: os_pid}

    case Hardening.check(report, state.plan) do
      {:ok, layers} ->
        Process.cancel_timer(timer)
        for from <- waiting, do: GenServer.reply(from, {:ok, state.os_pid})
        %{state | status: :ready, layers: layers, start: nil}

      {:error, message} ->
        kill(state, :start, message, telemetry: false)
    end
  end

  # The spare was hardened ahead for the default session's needs (no
  # mounts, no network, the default limits), which are not this session's:
  # a plain spare hardens itself for them.
  defp handle_frame({:new, :unfit}, %{status: {:starting, _, _}} = state) do
    {executable, args, native} = state.start
    Spares.close(state.port)
    {port, os_pid} = take_or_open(executable, args, :plain)
    frame(port, {:new, native})
    %{state | port: port, port_pid: os_pid, os_pid: os_pid}
  end

  defp handle_frame({:new, {:error, message}}, %{status: {:starting, _, _}} = state),
    do: kill(state, :start, message, telemetry: false)

  defp handle_frame({:started, id}, state) do
    case state.jobs do
      %{^id => job} ->
        target = if job.kind == :exec, do: job.callbacks_to, else: state.target
        %{state | jobs: %{state.jobs | id => %{job | started: true}}, target: target}

      %{} ->
        state
    end
  end

  defp handle_frame({:chunk, id, stream, data}, state) do
    case state.jobs do
      %{^id => job} ->
        for {pid, tag} <- job.listeners, do: send(pid, {:ex_bashkit, tag, {stream, data}})

        job =
          cond do
            not job.keep -> job
            stream == :stdout -> %{job | out: [job.out | data]}
            true -> %{job | err: [job.err | data]}
          end

        %{state | jobs: %{state.jobs | id => job}}

      %{} ->
        state
    end
  end

  defp handle_frame({:call, id, target, request}, state) do
    case state.target do
      nil ->
        reply = {:error, "callbacks are only served while a script of this session runs"}
        frame(state.port, {:reply, id, reply})

      server ->
        send(server, {:ex_bashkit_call, {__MODULE__, self(), id}, target, request})
    end

    state
  end

  defp handle_frame({:done, id, outcome, usable}, state) do
    {job, jobs} = Map.pop(state.jobs, id)
    state = %{state | jobs: jobs}

    if job do
      Process.demonitor(job.monitor, [:flush])
      if job.caller, do: send(job.caller, {job.tag, with_kept(outcome, job)})
    end

    state = if job && job.kind == :exec, do: %{state | target: nil}, else: state

    if usable,
      do: state,
      else:
        kill(
          state,
          :frozen,
          "a script went past its memory limit inside work that cannot be interrupted"
        )
  end

  defp handle_frame({kind, id, result}, state) when kind in [:fs, :cancelled] do
    case Map.pop(state.requests, id) do
      {{from, timer, _guard}, requests} ->
        Process.cancel_timer(timer)
        GenServer.reply(from, if(kind == :cancelled, do: {:ok, result}, else: result))
        %{state | requests: requests}

      {nil, _} ->
        state
    end
  end

  defp handle_frame(_unknown, state), do: state

  # ---- helpers ---------------------------------------------------------------

  defp frame(port, term), do: Port.command(port, :erlang.term_to_binary(term))

  defp next_id(state), do: {state.next, %{state | next: state.next + 1}}

  defp request(state, id, from, guard) do
    timer = Process.send_after(self(), {:deadline, id}, @request_deadline_ms)
    put_in(state.requests[id], {from, timer, guard})
  end

  defp alive?(state), do: not match?({:dead, _}, state.status)

  defp kept(%{keep: true, out: out, err: err}),
    do: {IO.iodata_to_binary(out), IO.iodata_to_binary(err)}

  defp kept(_job), do: {"", ""}

  # An error keeps what the script printed when the call asked for it, as
  # the NIF's kept output does.
  defp with_kept({:error, {reason, limit, message, "", ""}}, %{keep: true} = job) do
    {out, err} = kept(job)
    {:error, {reason, limit, message, out, err}}
  end

  defp with_kept(outcome, _job), do: outcome

  # Ends the worker and answers everything waiting on it; later calls get
  # `message`. `except:` names a job whose caller answers itself.
  defp kill(state, reason, why, opts \\ []) do
    if alive?(state) and Port.info(state.port) != nil do
      Native.worker_kill(state.port_pid)
      Spares.close(state.port)
      if Keyword.get(opts, :telemetry, true), do: Telemetry.worker_killed(reason, state.os_pid)
    end

    died(state, reason, why, Keyword.get(opts, :except))
  end

  defp died(state, reason, why, except \\ nil) do
    message = gone(why)

    case state.status do
      {:starting, waiting, timer} ->
        Process.cancel_timer(timer)

        for from <- waiting,
            do: GenServer.reply(from, {:error, "cannot start the session: #{why}"})

      _ ->
        :ok
    end

    for {id, job} <- state.jobs, id != except, job.caller != nil do
      Process.demonitor(job.monitor, [:flush])
      send(job.caller, {job.tag, {:error, error(job, reason, message)}})
    end

    for {_id, {from, timer, _guard}} <- state.requests do
      Process.cancel_timer(timer)
      GenServer.reply(from, {:error, message})
    end

    ExBashkit.Worker.Cgroups.release(state.cgroups)
    %{state | status: {:dead, message}, jobs: %{}, requests: %{}, target: nil, cgroups: []}
  end

  defp error(%{kind: :exec} = job, reason, message) do
    {out, err} = kept(job)

    {if(reason == :timeout, do: :timeout, else: :error), if(reason == :timeout, do: :timeout_ms),
     message, out, err}
  end

  defp error(_job, _reason, message), do: message
end
