defmodule ExBashkit.Pool do
  @moduledoc """
  Admission control for scripts: at most `:size` callers run at once, at
  most `:max_queue` more wait, and the rest are turned away with
  `{:error, :overloaded}` at once.

  This is ex_bashkit 0.1.7's `ExBashkit.Pool`, with the same options,
  functions and answers, so code written against 0.1.7 keeps working. Its
  purpose here differs: in 0.1.7 a running script held a dirty scheduler
  thread, and the pool kept scripts from starving the VM's native work.
  Here a script holds a dirty scheduler only for its first steps, at most
  one fewer at once than there are cores, and only until it first waits
  or its session shows it runs long; then it runs on the library's own
  interpreter threads while its caller sits in `receive`. So the VM is not
  at risk without a pool. What the pool gives
  you is load shedding: a bound on how many sandboxed scripts your
  application runs at once, and a fast, explicit "no" past that bound
  instead of an ever-growing backlog.

  It is opt-in: add it to your supervision tree and route the calls you
  want bounded through it.

      children = [
        {ExBashkit.Pool, size: 8, max_queue: 100}
      ]

      ExBashkit.Pool.run(fn -> ExBashkit.Session.exec(session, script) end)
      #=> {:ok, %ExBashkit.Result{}} | {:error, :overloaded}

  ## Options

    * `:name` — where the pool is registered (default `ExBashkit.Pool`);
      give each pool its own to run several.
    * `:size` — how many callers may hold a permit at once (default
      `config :ex_bashkit, :pool_size`, else `System.schedulers_online/0`).
    * `:max_queue` — how many callers may wait for a permit before the next
      is refused (default `config :ex_bashkit, :pool_max_queue`, else 50).

  ## Guarantees

    * The work runs in the calling process; the pool only admits it.
    * A permit is released when the work returns, raises, throws or exits,
      and when its holder dies (every holder and waiter is monitored). A
      waiter that dies leaves the queue.
    * Waiters are admitted in the order they came.
    * A process that holds a permit and asks the same pool for another
      would wait for a slot only it can free: `run/2` raises instead.

      iex> {:ok, _} = ExBashkit.Pool.start_link(name: :doc_pool, size: 2)
      iex> {:ok, result} = ExBashkit.Pool.exec(:doc_pool, "echo pooled")
      iex> {result.stdout, result.exit_code}
      {"pooled\\n", 0}
      iex> GenServer.stop(:doc_pool)
      :ok
  """

  use GenServer

  @default_max_queue 50

  @typedoc "A pool: its registered name or pid."
  @type pool :: GenServer.server()

  @typedoc "An option of `start_link/1`."
  @type option ::
          {:name, GenServer.name()} | {:size, pos_integer()} | {:max_queue, non_neg_integer()}

  @doc """
  Starts a pool (see the options above). Bad options raise `ArgumentError`
  in the caller.

      iex> {:ok, pid} = ExBashkit.Pool.start_link(name: nil, size: 1, max_queue: 0)
      iex> ExBashkit.Pool.run(pid, fn -> :ran end)
      :ran
      iex> GenServer.stop(pid)
      :ok
  """
  @spec start_link([option()]) :: GenServer.on_start()
  def start_link(opts \\ []) do
    unless Keyword.keyword?(opts) do
      raise ArgumentError, "ExBashkit.Pool options must be a keyword list, got: #{inspect(opts)}"
    end

    {name, opts} = Keyword.pop(opts, :name, __MODULE__)
    limits = limits!(opts)

    if name == nil,
      do: GenServer.start_link(__MODULE__, limits),
      else: GenServer.start_link(__MODULE__, limits, name: name)
  end

  @doc """
  Runs `fun` under a permit of `pool` (default `ExBashkit.Pool`) and
  returns its value; `{:error, :overloaded}` at once when the pool and its
  queue are full. Waits, with no timeout, while queued.

      iex> {:ok, pool} = ExBashkit.Pool.start_link(name: nil, size: 1)
      iex> ExBashkit.Pool.run(pool, fn -> 6 * 7 end)
      42
      iex> GenServer.stop(pool)
      :ok
  """
  @spec run(pool(), (() -> result)) :: result | {:error, :overloaded} when result: term()
  def run(pool \\ __MODULE__, fun)

  def run(pool, fun) when is_function(fun, 0) do
    case GenServer.call(pool, :acquire, :infinity) do
      :ok ->
        try do
          fun.()
        after
          GenServer.cast(pool, {:release, self()})
        end

      {:error, :overloaded} = overloaded ->
        overloaded

      {:error, :reentrant} ->
        raise "ExBashkit.Pool.run/2 was called from a process that already holds a permit " <>
                "of this pool: it would wait forever for a slot only it can free. Run the " <>
                "nested work outside the pool or on another pool."
    end
  end

  def run(_pool, fun) do
    raise ArgumentError, "ExBashkit.Pool.run/2 takes a 0-arity function, got: #{inspect(fun)}"
  end

  @doc """
  `ExBashkit.exec/1` under a permit.

      iex> {:ok, pool} = ExBashkit.Pool.start_link(name: nil)
      iex> {:ok, result} = ExBashkit.Pool.exec(pool, "echo hi")
      iex> result.stdout
      "hi\\n"
      iex> GenServer.stop(pool)
      :ok
  """
  @spec exec(pool(), binary()) ::
          {:ok, ExBashkit.Result.t()} | {:error, String.t() | :overloaded}
  def exec(pool \\ __MODULE__, script) do
    script = ExBashkit.Caller.script!(script)
    run(pool, fn -> ExBashkit.exec(script) end)
  end

  @doc """
  `ExBashkit.Session.exec/2` under a permit.

      iex> {:ok, pool} = ExBashkit.Pool.start_link(name: nil)
      iex> session = ExBashkit.Session.new()
      iex> {:ok, _} = ExBashkit.Pool.session_exec(pool, session, "x=1")
      iex> {:ok, result} = ExBashkit.Pool.session_exec(pool, session, "echo $x")
      iex> result.stdout
      "1\\n"
      iex> GenServer.stop(pool)
      :ok
  """
  @spec session_exec(pool(), ExBashkit.Session.t(), binary()) ::
          {:ok, ExBashkit.Result.t()} | {:error, String.t() | :overloaded}
  def session_exec(pool \\ __MODULE__, session, script) do
    script = ExBashkit.Caller.script!(script)
    run(pool, fn -> ExBashkit.Session.exec(session, script) end)
  end

  defp limits!(opts) do
    size =
      Keyword.get(opts, :size) || Application.get_env(:ex_bashkit, :pool_size) ||
        System.schedulers_online()

    max_queue =
      Keyword.get(opts, :max_queue) || Application.get_env(:ex_bashkit, :pool_max_queue) ||
        @default_max_queue

    unless is_integer(size) and size > 0 do
      raise ArgumentError,
            "ExBashkit.Pool :size must be a positive integer, got: #{inspect(size)}"
    end

    unless is_integer(max_queue) and max_queue >= 0 do
      raise ArgumentError,
            "ExBashkit.Pool :max_queue must be a non-negative integer, got: #{inspect(max_queue)}"
    end

    case Keyword.keys(opts) -- [:size, :max_queue] do
      [] -> {size, max_queue}
      [key | _] -> raise ArgumentError, "unknown ExBashkit.Pool option #{inspect(key)}"
    end
  end

  # The state keeps 0.1.7's shape: `running` maps each holder to its
  # monitor, `waiting` is a `:queue` of `{from, monitor, pid}`.
  @impl true
  def init({size, max_queue}) do
    {:ok, %{size: size, max_queue: max_queue, running: %{}, waiting: :queue.new()}}
  end

  @impl true
  def handle_call(:acquire, {pid, _} = from, state) do
    cond do
      Map.has_key?(state.running, pid) ->
        {:reply, {:error, :reentrant}, state}

      map_size(state.running) < state.size ->
        {:reply, :ok, hold(state, pid, Process.monitor(pid))}

      :queue.len(state.waiting) < state.max_queue ->
        waiter = {from, Process.monitor(pid), pid}
        {:noreply, %{state | waiting: :queue.in(waiter, state.waiting)}}

      true ->
        {:reply, {:error, :overloaded}, state}
    end
  end

  @impl true
  def handle_cast({:release, pid}, state) do
    case Map.pop(state.running, pid) do
      {nil, _} ->
        {:noreply, state}

      {monitor, running} ->
        Process.demonitor(monitor, [:flush])
        {:noreply, admit_next(%{state | running: running})}
    end
  end

  @impl true
  def handle_info({:DOWN, monitor, :process, pid, _reason}, state) do
    case state.running do
      %{^pid => ^monitor} ->
        {:noreply, admit_next(%{state | running: Map.delete(state.running, pid)})}

      _ ->
        waiting = :queue.filter(fn {_, waiter, _} -> waiter != monitor end, state.waiting)
        {:noreply, %{state | waiting: waiting}}
    end
  end

  defp hold(state, pid, monitor), do: %{state | running: Map.put(state.running, pid, monitor)}

  defp admit_next(state) do
    case :queue.out(state.waiting) do
      {{:value, {from, monitor, pid}}, waiting} ->
        GenServer.reply(from, :ok)
        hold(%{state | waiting: waiting}, pid, monitor)

      {:empty, _} ->
        state
    end
  end
end
