defmodule ExBashkit.Worker.Owner do
  @moduledoc false
  # The process that owns one worker (see ExBashkit.Worker): it starts the
  # OS process, speaks its frames, fans a script's output out to its
  # listeners, hands builtin and virtual_fs calls to the caller's callback
  # server, and kills the worker (SIGKILL) when a script outlives its
  # deadline, is frozen over its memory cap, its caller dies mid-script, or
  # the session is dropped. Every call it answers for a session, and every
  # pending call it names, carries an `ExBashkit.Worker.Handle`.
  #
  # Over 500 lines: one state machine, each event checked against what it
  # waits for, reads best whole; its parts live in owner/ (a job, the
  # bounds of an honest worker, egress, the start).

  use GenServer, restart: :temporary

  alias ExBashkit.{Native, Telemetry}
  alias ExBashkit.Worker.{Handle, Protocol, Request, Zygote}
  alias ExBashkit.Worker.Owner.{Bounds, Egress, Job, Start}
  alias ExBashkit.Worker.Port, as: WorkerPort

  # How long a worker may take to build its session (host mounts, CPython).
  @start_deadline_ms 30_000
  # How long a file operation, cancel or info may take before the worker is
  # taken for stuck: they never wait for a script.
  @request_deadline_ms 30_000
  # A script whose caller died stops at its next await point; one that does
  # not by then is inside work that never yields.
  @orphan_grace_ms 1_000

  @doc """
  How long past its `:timeout_ms`, counted from when the worker started
  it, a script may take to stop by itself before its worker is killed.
  """
  @spec deadline_margin_ms() :: pos_integer()
  def deadline_margin_ms, do: 250

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
    bounds = Bounds.new(native.limits)

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
      # What the session was built with, for its forks (`:native`).
      native: native,
      # How the worker was started, until it is ready: a prepared spare
      # that refuses the session (hardened for other needs) is replaced by
      # a plain one.
      start: nil,
      # Frames still arriving, and what the session's limits let a frame
      # and a script's output hold (ExBashkit.Worker.Protocol).
      inbox: Protocol.inbox(),
      bounds: bounds,
      max_frame: bounds.frame,
      # Jobs this owner stopped waiting for while they looked queued, whose
      # worker may still send their frames until their `:done`: id => whether
      # the worker said it started.
      abandoned: %{},
      # Ids of the builtin and virtual_fs calls the worker is waiting on.
      calls: MapSet.new(),
      # The session's way out (`:allow_net`), in this VM: the worker has no
      # network, and the credentials never leave here. Ids of the requests
      # the worker is waiting on.
      egress: Egress.new(native),
      http: MapSet.new(),
      # The builtins and virtual_fs mounts the session has, and whether a
      # function decides its commands: a call of anything else is forged.
      callables: Bounds.callables(native)
    }

    # Starting the process (~5-10 ms without a spare) happens after init:
    # the supervisor starts its children one at a time.
    {:ok, state, {:continue, {:start, executable, plan.args, native}}}
  end

  @impl true
  def handle_continue({:start, executable, args, native}, state) do
    {executable, args} = Zygote.launch(executable, args)

    # The credentials of `:allow_net` stay in this VM (Owner.Egress).
    native = %{native | credentials: []}
    {port, os_pid} = Start.open(executable, args, :prepared, native)
    timer = Process.send_after(self(), {:deadline, :start}, @start_deadline_ms)
    {:starting, waiting, nil} = state.status
    state = %{state | port: port, port_pid: os_pid, os_pid: os_pid}
    {:noreply, %{state | status: {:starting, waiting, timer}, start: {executable, args, native}}}
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

  def handle_call({:exec, script, caller, tag, callbacks_to, call}, _from, state) do
    {id, state} = next_id(state)
    job = Job.exec(script, caller, tag, callbacks_to, call)

    # A call's fresh credential values replace the session's here, as
    # they do in the VM; the worker never sees them.
    if call && call.credentials && state.egress,
      do: Native.egress_credentials(state.egress, call.credentials)

    # The owner is the worker's one listener (it keeps and forwards the
    # output), and keeps the credentials: the worker sees neither.
    call =
      call &&
        %{call | stream_to: [], credentials: nil, keep_output: job.listeners != [] or job.keep}

    request =
      case script do
        {:run_code, language, input, allow} -> Request.run_code(id, language, input, allow, call)
        script -> Request.exec(id, script, call)
      end

    frame(state.port, request)
    {:reply, {:ok, %Handle{owner: self(), id: id}}, put_in(state.jobs[id], job)}
  end

  def handle_call({:job, kind, args, caller, tag}, _from, state) do
    {id, state} = next_id(state)
    job = Job.other(kind, caller, tag)
    frame(state.port, apply(Request, kind, [id | args]))
    state = put_in(state.jobs[id], job)
    state = if kind == :snapshot, do: max_frame(state), else: state
    {:reply, {:ok, %Handle{owner: self(), id: id}}, state}
  end

  def handle_call({:fs, op, args}, from, state) do
    {id, state} = next_id(state)
    frame(state.port, Request.fs(id, List.to_tuple([op | args])))
    {:noreply, request(state, id, {:fs, op}, from)}
  end

  def handle_call(:cancel, from, state) do
    {id, state} = next_id(state)
    frame(state.port, Request.cancel(id))
    {:noreply, request(state, id, :cancel, from)}
  end

  def handle_call(:native, _from, state), do: {:reply, {:ok, state.native}, state}

  def handle_call(:stats, from, state) do
    {id, state} = next_id(state)
    frame(state.port, Request.stats(id))
    {:noreply, request(state, id, :stats, from)}
  end

  def handle_call({:abandon, id}, _from, state) do
    case state.jobs do
      %{^id => %{started: true} = job} ->
        case Job.due_in(job, deadline_margin_ms()) do
          0 ->
            # Past its deadline and still running: only the kernel can stop it.
            state = kill(state, :timeout, "a script did not stop at its deadline", except: id)
            {:reply, {:killed, Job.kept(job)}, state}

          ms ->
            {:reply, {:wait, ms}, state}
        end

      %{^id => job} ->
        frame(state.port, Request.abandon(id))
        Process.demonitor(job.monitor, [:flush])
        state = %{state | jobs: Map.delete(state.jobs, id)}
        {:reply, :queued, %{state | abandoned: Map.put(state.abandoned, id, false)}}

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
  def handle_cast(:stop, state), do: {:stop, :normal, closed(state)}

  defp closed(state) do
    if alive?(state),
      do: kill(state, :closed, "the session was closed", telemetry: false),
      else: state
  end

  @impl true
  def handle_info({port, {:data, data}}, %{port: port} = state) do
    state =
      case Protocol.feed(state.inbox, data, state.max_frame) do
        {:ok, payloads, inbox} -> handle_payloads(payloads, %{state | inbox: inbox})
        {:violation, why} -> violation(state, why)
      end

    {:noreply, state}
  end

  def handle_info({port, {:exit_status, status}}, %{port: port} = state) do
    # The Port closes when its pipes do too: a worker forked by the zygote
    # holds them, and ends when it reads the end of its stdin.
    WorkerPort.close(port)

    if alive?(state) do
      Telemetry.worker_killed(:exited, state.os_pid)
      {:noreply, died(state, :exited, "the worker process exited (status #{status})")}
    else
      {:noreply, state}
    end
  end

  def handle_info({:ex_bashkit_egress_part, id, part}, state) do
    # A part of a pack (a megabyte), passed on as it arrives. Collected
    # right away: the owner's heap stays small, so it would otherwise
    # keep the parts it passed on until a collection comes much later.
    wanted = alive?(state) and MapSet.member?(state.http, id)
    if wanted, do: Egress.part(state.port, id, part)
    # One more may come; or the worker stopped waiting, and it ends.
    Native.egress_took(state.egress, id, wanted)
    :erlang.garbage_collect()
    {:noreply, state}
  end

  def handle_info({:ex_bashkit_egress, id, answer}, state) do
    if alive?(state) and MapSet.member?(state.http, id) do
      Egress.reply(state.port, id, answer)
      {:noreply, %{state | http: MapSet.delete(state.http, id)}}
    else
      # The worker is gone, or stopped waiting (its deadline): dropped.
      {:noreply, state}
    end
  end

  def handle_info({:callback_reply, id, reply}, state) do
    if alive?(state) and MapSet.member?(state.calls, id) do
      frame(state.port, Request.reply(id, reply))
      {:noreply, %{state | calls: MapSet.delete(state.calls, id)}}
    else
      {:noreply, state}
    end
  end

  def handle_info({:DOWN, monitor, :process, _pid, _reason}, state) do
    case Enum.find(state.jobs, fn {_id, job} -> job.monitor == monitor end) do
      {id, job} ->
        frame(state.port, Request.abandon(id))
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

  # A job abandoned as queued that had started after all, and has not
  # stopped within its grace: only the kernel can stop it.
  def handle_info({:abandoned, id}, state) do
    if Map.has_key?(state.abandoned, id),
      do: {:noreply, kill(state, :timeout, "a script did not stop at its deadline")},
      else: {:noreply, state}
  end

  def handle_info({:deadline, :start}, %{status: {:starting, _, _}} = state),
    do: {:noreply, kill(state, :start, "the worker did not build its session in time")}

  def handle_info({:deadline, id}, state) do
    if Map.has_key?(state.requests, id),
      do: {:noreply, kill(state, :unresponsive, "the worker stopped answering")},
      else: {:noreply, state}
  end

  # The session's guard: closed (`close/1`), or collected.
  def handle_info(:ex_bashkit_session_closed, state), do: {:stop, :normal, closed(state)}

  def handle_info(:ex_bashkit_session_dropped, state) do
    state = if alive?(state), do: kill(state, :dropped, "the session was dropped"), else: state
    {:stop, :normal, state}
  end

  def handle_info(_other, state), do: {:noreply, state}

  # ---- frames from the worker ------------------------------------------------
  #
  # Each frame is decoded and its shape checked by ExBashkit.Worker.Protocol;
  # here each event is checked against what this owner is waiting for. An
  # event that fits nothing pending is a protocol violation: the worker is
  # killed and nothing of the frame reaches a caller.

  defp handle_payloads([], state), do: state

  defp handle_payloads([payload | rest], state) do
    if alive?(state) do
      case Protocol.decode(payload) do
        {:ok, event} -> handle_payloads(rest, event(event, state))
        {:violation, why} -> violation(state, why)
      end
    else
      # Frames that were on their way when the worker was killed.
      state
    end
  end

  defp event({:new, answer}, %{status: {:starting, waiting, timer}} = state) do
    case answer do
      {:ok, report} ->
        case Start.ready(state, report, waiting, timer) do
          {:ok, state} -> state
          {:error, state, message} -> kill(state, :start, message, telemetry: false)
        end

      :unfit ->
        Start.unfit(state)

      {:error, message} ->
        kill(state, :start, message, telemetry: false)
    end
  end

  defp event({:new, _answer}, state), do: violation(state, "a second answer to :new")

  # A job's caller may exit, or stop waiting, while its `:started` is on
  # the way: the owner took the job for queued (no orphan timer; abandoned
  # with `:queued`), but the worker had started it, and a script that never
  # yields does not see the abandon. Its grace begins here instead.
  defp event({:started, id}, state) do
    case state.jobs do
      %{^id => %{started: false} = job} ->
        if job.caller == nil, do: Process.send_after(self(), {:orphan, id}, @orphan_grace_ms)
        target = if job.kind == :exec, do: job.callbacks_to, else: state.target
        job = %{job | started: true, started_at: System.monotonic_time(:millisecond)}
        %{state | jobs: %{state.jobs | id => job}, target: target}

      %{} ->
        case state.abandoned do
          %{^id => false} ->
            Process.send_after(self(), {:abandoned, id}, @orphan_grace_ms)
            %{state | abandoned: %{state.abandoned | id => true}}

          %{} ->
            violation(state, ":started for job #{id}, which is not waiting")
        end
    end
  end

  defp event({:chunk, id, stream, data}, state) do
    case state.jobs do
      %{^id => %{kind: :exec} = job} -> chunk(state, id, job, stream, data)
      %{} -> unless_abandoned(state, id, "output")
    end
  end

  defp event({:call, id, target, request}, state) do
    cond do
      MapSet.member?(state.calls, id) ->
        violation(state, "a call whose id #{id} is waiting already")

      MapSet.size(state.calls) >= state.bounds.calls ->
        violation(state, "more than #{state.bounds.calls} calls waiting at once")

      not Bounds.callable?(target, state.callables) ->
        violation(state, "a call of #{inspect(target)}, which the session does not have")

      state.target == nil ->
        reply = {:error, "callbacks are only served while a script of this session runs"}
        frame(state.port, Request.reply(id, reply))
        state

      true ->
        send(state.target, {:ex_bashkit_call, %Handle{owner: self(), id: id}, target, request})
        %{state | calls: MapSet.put(state.calls, id)}
    end
  end

  defp event({:done, id, outcome, usable}, state) do
    case Map.pop(state.jobs, id) do
      {nil, _jobs} ->
        if Map.has_key?(state.abandoned, id),
          do: frozen(%{state | abandoned: Map.delete(state.abandoned, id)}, usable),
          else: violation(state, "an answer for job #{id}, which is not waiting")

      {job, jobs} ->
        if Protocol.outcome(Job.outcome_kind(job), outcome, state.bounds.output),
          do: done(%{state | jobs: jobs}, job, outcome, usable),
          else: violation(state, "an answer that no #{job.kind} can give")
    end
  end

  defp event({kind, id, result}, state) when kind in [:fs, :cancelled, :stats] do
    case Map.pop(state.requests, id) do
      {{from, timer, what}, requests} ->
        if Bounds.answers?(what, kind, result) do
          Process.cancel_timer(timer)
          GenServer.reply(from, if(kind == :fs, do: result, else: {:ok, result}))
          %{state | requests: requests}
        else
          violation(state, "an answer that no #{inspect(what)} request can have")
        end

      {nil, _} ->
        violation(state, "an answer for request #{id}, which is not waiting")
    end
  end

  defp event({:http, id, request}, state) do
    cond do
      state.egress == nil ->
        violation(state, "a request to the network from a session without :allow_net")

      MapSet.member?(state.http, id) ->
        violation(state, "a request whose id #{id} is waiting already")

      MapSet.size(state.http) >= state.bounds.requests ->
        violation(state, "more than #{state.bounds.requests} requests waiting at once")

      true ->
        Egress.request(state.egress, state.port, id, request)
        %{state | http: MapSet.put(state.http, id)}
    end
  end

  defp event(event, state),
    do: violation(state, "#{inspect(elem(event, 0))} while the worker is starting")

  defp chunk(state, id, job, stream, data) do
    case Job.chunk(job, stream, data, state.bounds.output) do
      {:ok, job} -> %{state | jobs: %{state.jobs | id => job}}
      {:error, why} -> violation(state, why)
    end
  end

  defp done(state, job, outcome, usable) do
    Process.demonitor(job.monitor, [:flush])
    if job.caller, do: send(job.caller, {job.tag, Job.with_kept(outcome, job)})

    state =
      case job.kind do
        :exec -> %{state | target: nil}
        :snapshot -> max_frame(state)
        _ -> state
      end

    frozen(state, usable)
  end

  defp frozen(state, true), do: state

  defp frozen(state, false),
    do:
      kill(
        state,
        :frozen,
        "a script went past its memory limit inside work that cannot be interrupted"
      )

  defp unless_abandoned(state, id, what) do
    if Map.has_key?(state.abandoned, id),
      do: state,
      else: violation(state, "#{what} for job #{id}, which is not waiting")
  end

  # The worker broke the protocol: it is killed, everything waiting on it
  # is answered with an error (reason `:protocol`), and the violation is
  # counted (`ExBashkit.stats/0`) and reported (telemetry).
  defp violation(state, why) do
    Telemetry.protocol_violation(state.os_pid, why)
    kill(state, :protocol, "it broke the protocol: #{why}")
  end

  # ---- helpers ---------------------------------------------------------------

  defp frame(port, term), do: Port.command(port, Protocol.frame(term))

  # The largest frame the worker may send now: what the session's limits
  # let a script's result, a file or a callback's arguments hold, and a
  # snapshot's size while one is being taken. Kept in the state, so that
  # each frame's check is one comparison.
  defp max_frame(state) do
    if Enum.any?(state.jobs, fn {_id, job} -> job.kind == :snapshot end),
      do: %{state | max_frame: state.bounds.snapshot_frame},
      else: %{state | max_frame: state.bounds.frame}
  end

  defp next_id(state), do: {state.next, %{state | next: state.next + 1}}

  defp request(state, id, what, from) do
    timer = Process.send_after(self(), {:deadline, id}, @request_deadline_ms)
    put_in(state.requests[id], {from, timer, what})
  end

  defp alive?(state), do: not match?({:dead, _}, state.status)

  # Ends the worker and answers everything waiting on it; later calls get
  # `message`. `except:` names a job whose caller answers itself.
  defp kill(state, reason, why, opts \\ []) do
    if alive?(state) and Port.info(state.port) != nil do
      Native.worker_kill(state.port_pid)
      WorkerPort.close(state.port)
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
      send(job.caller, {job.tag, {:error, Job.failed(job, reason, message)}})
    end

    for {_id, {from, timer, _what}} <- state.requests do
      Process.cancel_timer(timer)
      GenServer.reply(from, {:error, message})
    end

    ExBashkit.Worker.Cgroups.release(state.cgroups)

    %{
      state
      | status: {:dead, message},
        jobs: %{},
        requests: %{},
        target: nil,
        cgroups: [],
        calls: MapSet.new(),
        abandoned: %{},
        http: MapSet.new(),
        inbox: Protocol.inbox()
    }
  end
end
