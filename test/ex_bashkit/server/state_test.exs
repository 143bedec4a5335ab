defmodule ExBashkit.Server.StateTest do
  # The server's state, without a server: waking, hibernating, persisting
  # and the record's encoding.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Session, Store}
  alias ExBashkit.Server.State
  alias ExBashkit.Test.Capabilities.FullStore

  defp state(opts \\ []) do
    State.new(%{
      id: Keyword.get(opts, :id, {:state_test, make_ref()}),
      name: nil,
      session: Keyword.get(opts, :session, []),
      store: Keyword.get(opts, :store),
      persist: Keyword.get(opts, :persist, :on_hibernate),
      key: nil,
      registrar: nil,
      idle_after: 60_000
    })
  end

  defp awake(opts \\ []) do
    {:ok, state} = State.wake(state(opts))
    state
  end

  defp stdout(state, script) do
    {:ok, result} = Session.exec(state.session, script)
    result.stdout
  end

  test "a new state is asleep, with a key of its own" do
    a = state()
    refute State.awake?(a) or State.busy?(a)
    assert byte_size(a.key) == 32
    assert a.key != state().key
    assert :queue.is_empty(a.waiting)
  end

  test "records: what is encoded decodes, anything else is :error" do
    a = state(session: [env: %{"A" => "1"}])
    record = State.encode(a, "snapshot bytes")
    assert State.decode(record) == {:ok, [env: %{"A" => "1"}], a.key, "snapshot bytes"}

    for other <- ["", "junk", :erlang.term_to_binary({ExBashkit.Server, 0, [], "k", "s"})],
        do: assert(State.decode(other) == :error)
  end

  test "without a store, hibernation keeps the snapshot here, and a wake restores it" do
    state = awake()
    assert stdout(state, "cd /tmp && x=1 && echo f > /f") == ""

    {:ok, asleep} = State.hibernate(state)
    refute State.awake?(asleep)
    assert is_binary(asleep.snapshot)

    {:ok, again} = State.wake(asleep)
    assert again.snapshot == nil
    assert stdout(again, "echo $(pwd) $x $(cat /f)") == "/tmp 1 f\n"
  end

  test "with a store, hibernation writes the record, and a fresh state wakes from it" do
    store = {Store.Memory, []}
    id = {:state_test, make_ref()}
    state = awake(id: id, store: store, session: [env: %{"WHO" => "ada"}])
    stdout(state, "x=kept")

    {:ok, asleep} = State.hibernate(state)
    assert asleep.snapshot == nil
    assert {:ok, record} = Store.fetch(store, id)
    assert {:ok, [env: %{"WHO" => "ada"}], _key, _snapshot} = State.decode(record)

    # A server started later, with no session options of its own: the
    # record's options and key come back with the session.
    {:ok, later} = State.wake(state(id: id, store: store))
    assert later.spec == [env: %{"WHO" => "ada"}]
    assert later.key == state.key
    assert stdout(later, "echo $WHO $x") == "ada kept\n"
  end

  test "a store that refuses the record keeps the session awake, nothing lost" do
    state = awake(store: {FullStore, []})
    stdout(state, "x=kept")

    assert {:error, "cannot hibernate: " <> _, same} = State.hibernate(state)
    assert State.awake?(same)
    assert stdout(same, "echo $x") == "kept\n"
  end

  test "a record this version does not read is an error, not a crash" do
    store = {Store.Memory, []}
    id = {:state_test, make_ref()}
    :ok = Store.put(store, id, "not a record")

    assert {:error, message, _state} = State.wake(state(id: id, store: store))
    assert message =~ "is not one this version reads"
  end

  test "persist writes only what changed, and always on a stop" do
    store = {Store.Memory, []}
    id = {:state_test, make_ref()}
    state = awake(id: id, store: store)

    assert State.persist(state, :exec) == state
    assert Store.fetch(store, id) == :error

    dirty = %{state | dirty?: true}
    assert %State{dirty?: false} = State.persist(dirty, :exec)
    assert {:ok, _} = Store.fetch(store, id)

    :ok = Store.delete(store, id)
    State.persist(state, :stop)
    assert {:ok, _} = Store.fetch(store, id)

    # A failed write keeps the state dirty, to be tried again.
    full = %{dirty | store: {FullStore, []}}
    assert State.persist(full, :tick).dirty?
  end

  test "forget removes the record and the store" do
    store = {Store.Memory, []}
    id = {:state_test, make_ref()}
    state = %{awake(id: id, store: store) | dirty?: true} |> State.persist(:exec)
    assert {:ok, _} = Store.fetch(store, id)

    assert %State{store: nil} = State.forget(state)
    assert Store.fetch(store, id) == :error
  end

  test "a session whose worker was killed is dropped only when a store can bring it back" do
    with_store = awake(store: {Store.Memory, []}, session: [isolation: :process])
    without = awake(session: [isolation: :process])

    for state <- [with_store, without] do
      os_pid = Session.info(state.session).os_pid
      {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
      assert wait_until(fn -> Session.info(state.session).os_pid == nil end)
    end

    refute State.awake?(State.recover(with_store))
    assert State.recover(without) == without
    # An in-VM session is never dropped.
    in_vm = awake(store: {Store.Memory, []})
    assert State.recover(in_vm) == in_vm
  end
end
