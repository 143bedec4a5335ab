defmodule ExBashkit.Server.Ring do
  @moduledoc false
  # Which node owns a server id: rendezvous (highest random weight)
  # hashing over the nodes that run ExBashkit.Server, members of one `:pg`
  # group. Each node ranks the members by a hash of `{id, node}` and the
  # highest wins, so every node that sees the same members names the
  # same owner without asking anyone, and a node that joins takes over
  # exactly the ids it now ranks first (about 1/N of them) while a node
  # that leaves gives away only its own. Consistent hashing gets the same
  # from a ring of virtual nodes, which needs tuning to spread evenly;
  # ranking N members per lookup costs N hashes (well under a microsecond
  # for the clusters this serves) and spreads evenly with none.
  #
  # This process joins the group for its node and follows the scope
  # (`:pg.monitor_scope/1`); the members' pids are kept in a persistent
  # term, read without a message on every lookup and rewritten only when
  # the membership changes. A pid, not a node name: this node's name
  # changes when distribution starts after the application did.
  #
  # When the members change, this node hands the servers of the ids it
  # no longer owns to their new owners (`rebalance/1`), then tells every
  # other member it is done with that view ("settled"). Until every other
  # member has said so for the view this node sees, an id this node owns
  # may still be served elsewhere: a lookup that misses here asks the
  # other members before a server is started (`settled?/0`).

  use GenServer

  alias ExBashkit.Server.Names

  require Logger

  @scope ExBashkit.Server.Cluster
  @group :servers
  @members {__MODULE__, :members}
  @settled {__MODULE__, :settled}

  @doc "The `:pg` scope the ring runs in (a child of the application)."
  def scope, do: @scope

  def start_link(_opts), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  @doc "The owner of `id` among `members` (this node when there are none)."
  @spec owner(term(), [node()]) :: node()
  def owner(_id, []), do: node()
  def owner(_id, [only]), do: only

  def owner(id, members),
    do: Enum.max_by(members, &{:erlang.phash2({id, &1}, 4_294_967_296), &1})

  @doc "The owner of `id` among the live members, as this node sees them."
  @spec owner(term()) :: node()
  def owner(id), do: owner(id, Enum.map(:persistent_term.get(@members, []), &node/1))

  @doc """
  The member that ranks second for `id`: its owner once the owner is
  gone, if nothing else changes. `nil` for a ring of one.
  """
  @spec backup(term()) :: node() | nil
  def backup(id) do
    case members() do
      [_only] -> nil
      [] -> nil
      members -> owner(id, members -- [owner(id, members)])
    end
  end

  @doc "The nodes that run servers, sorted; this one among them once it joined."
  @spec members() :: [node()]
  def members, do: @members |> :persistent_term.get([]) |> Enum.map(&node/1) |> Enum.sort()

  @doc """
  Whether every other member has handed over what this node's view of
  the members says it owns: until then a miss here is not proof that no
  server of the id runs.
  """
  @spec settled?() :: boolean()
  def settled?, do: :persistent_term.get(@settled, true)

  @doc """
  Waits up to `timeout` ms until `node` is a member and every member has
  handed over what this view of the members moves: whether it came to be.
  """
  @spec await(node(), timeout()) :: boolean()
  def await(node, timeout), do: await_at(node, System.monotonic_time(:millisecond) + timeout)

  defp await_at(node, deadline) do
    cond do
      node in members() and settled?() -> true
      System.monotonic_time(:millisecond) > deadline -> false
      true -> Process.sleep(10) && await_at(node, deadline)
    end
  end

  @impl true
  def init(nil) do
    {ref, groups} = :pg.monitor_scope(@scope)
    :ok = :pg.join(@scope, @group, self())
    state = %{ref: ref, view: [], acks: %{}, task: nil, again?: false}
    {:ok, changed(state, Map.get(groups, @group, []) ++ [self()])}
  end

  @impl true
  def handle_info({ref, _join_or_leave, @group, _pids}, %{ref: ref} = state),
    do: {:noreply, changed(state, :pg.get_members(@scope, @group))}

  # Another member handed over what it had of `view`.
  def handle_info({:settled, from, view}, state),
    do: {:noreply, settle(%{state | acks: Map.put(state.acks, from, view)})}

  def handle_info({task, view}, %{task: task} = state) when is_reference(task) do
    Process.demonitor(task, [:flush])
    for pid <- others(), do: send(pid, {:settled, node(), view})
    {:noreply, rebalance_again(%{state | task: nil})}
  end

  def handle_info({:DOWN, task, :process, _pid, reason}, %{task: task} = state) do
    Logger.warning("ExBashkit.Server: handing servers over failed, retrying: #{inspect(reason)}")
    Process.send_after(self(), :rebalance, 1_000)
    {:noreply, %{state | task: nil}}
  end

  def handle_info(:rebalance, state), do: {:noreply, rebalance(state)}
  def handle_info(_other, state), do: {:noreply, state}

  # The new members and whether they are settled are published so that no
  # reader sees the new members as settled before they are: unsettled
  # first, then the members; settled only after them.
  defp changed(state, pids) do
    pids = pids |> Enum.uniq() |> Enum.sort()
    view = pids |> Enum.map(&node/1) |> Enum.sort()
    # A member that left forgets what it said: back, it hands over again.
    state = %{state | view: view, acks: Map.take(state.acks, view)}
    unless settled_view?(state), do: :persistent_term.put(@settled, false)
    if pids != :persistent_term.get(@members, []), do: :persistent_term.put(@members, pids)
    state |> settle() |> rebalance()
  end

  defp settle(state) do
    settled? = settled_view?(state)
    if settled? != settled?(), do: :persistent_term.put(@settled, settled?)
    state
  end

  defp settled_view?(state),
    do: Enum.all?(state.view -- [node()], &(Map.get(state.acks, &1) == state.view))

  # One hand-over at a time; a change while one runs runs another after it.
  defp rebalance(%{task: nil, view: view} = state) do
    task =
      Task.Supervisor.async_nolink(ExBashkit.Server.TaskSupervisor, fn -> hand_over(view) end)

    %{state | task: task.ref, again?: false}
  end

  defp rebalance(state), do: %{state | again?: true}

  defp rebalance_again(%{again?: true} = state), do: rebalance(state)
  defp rebalance_again(state), do: state

  defp others do
    me = Process.whereis(__MODULE__)
    :persistent_term.get(@members, []) -- [me]
  end

  # Each server registered here whose id another member now owns goes
  # there with its session; one that cannot (its capabilities are closures)
  # stays where it runs and is registered with the owner, which finds it
  # from then on.
  # Several at a time: one that waits for its running script holds up no other.
  defp hand_over(view) do
    Names.entries()
    |> Stream.map(fn {id, pid} -> {id, pid, owner(id, view)} end)
    |> Stream.reject(fn {_id, _pid, owner} -> owner == node() end)
    |> Task.async_stream(fn {id, pid, owner} -> hand_over(id, pid, owner) end,
      max_concurrency: 16,
      ordered: false,
      timeout: :infinity
    )
    |> Stream.run()

    view
  end

  defp hand_over(id, pid, owner) do
    case :erpc.call(owner, Names, :lookup, [id], 15_000) do
      nil -> move(id, pid, owner)
      ^pid -> :ok
      # Two servers of one id, as two halves of a partition leave them.
      other -> keep_newer(id, pid, other, owner)
    end
  catch
    # The owner went away meanwhile: the next view's hand-over decides.
    _kind, _reason -> :ok
  end

  # A server on a sandbox node of this one goes to one of the owner's.
  defp move(id, pid, owner) do
    case GenServer.call(pid, {:handover, owner}, :infinity) do
      {:ok, successor} -> Names.forward(id, pid, successor)
      {:error, _cannot_move} -> register_with(id, pid, owner)
    end
  catch
    # The server stopped meanwhile.
    :exit, _ -> :ok
  end

  defp register_with(id, pid, owner) do
    case :erpc.call(owner, Names, :register, [id, pid, nil], 15_000) do
      :ok -> :ok
      {:already_started, other} -> keep_newer(id, pid, other, owner)
    end
  end

  # The server whose claim on the store is newer (a larger epoch) stays;
  # the other stops without writing. Without a store's epochs, the one
  # already at the owner stays.
  defp keep_newer(id, pid, other, owner) do
    if epoch(pid) > epoch(other) do
      fence(other)
      :erpc.call(owner, Names, :unregister, [id, other], 15_000)
      move(id, pid, owner)
    else
      fence(pid)
      Names.unregister(id, pid)
    end
  end

  defp epoch(pid) do
    GenServer.call(pid, :epoch, 15_000)
  catch
    :exit, _ -> -1
  end

  defp fence(pid) do
    GenServer.call(pid, :fence, 15_000)
  catch
    :exit, _ -> :ok
  end
end
