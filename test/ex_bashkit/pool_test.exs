defmodule ExBashkit.PoolTest do
  # ExBashkit.Pool keeps ex_bashkit 0.1.7's contract: permits, a bounded
  # queue, {:error, :overloaded} past it, and no permit ever leaked.
  use ExBashkit.Case, async: true

  alias ExBashkit.Pool

  defp start_pool(opts) do
    name = :"pool_#{System.unique_integer([:positive])}"
    start_supervised!(Supervisor.child_spec({Pool, Keyword.put(opts, :name, name)}, id: name))
    name
  end

  # A caller that holds its permit until told to finish; the work runs in
  # the caller, so the pid it reports is the caller's.
  defp hold(pool, value \\ :done) do
    test = self()

    spawn(fn ->
      result =
        Pool.run(pool, fn ->
          send(test, {:holding, self()})

          receive do
            :finish -> value
          end
        end)

      send(test, {:returned, self(), result})
    end)
  end

  defp queued(pool), do: :queue.len(:sys.get_state(pool).waiting)

  test "at most :size callers hold a permit; the next waits for one" do
    pool = start_pool(size: 2, max_queue: 5)
    a = hold(pool)
    b = hold(pool)
    assert_receive {:holding, ^a}
    assert_receive {:holding, ^b}

    c = hold(pool)
    assert wait_until(fn -> queued(pool) == 1 end)
    refute_received {:holding, ^c}

    send(a, :finish)
    assert_receive {:returned, ^a, :done}
    assert_receive {:holding, ^c}
    for pid <- [b, c], do: send(pid, :finish)
    assert_receive {:returned, ^b, :done}
    assert_receive {:returned, ^c, :done}
  end

  test "waiters are admitted in the order they came" do
    pool = start_pool(size: 1, max_queue: 10)
    first = hold(pool)
    assert_receive {:holding, ^first}

    waiters =
      for n <- 1..5 do
        pid = hold(pool, n)
        assert wait_until(fn -> queued(pool) == n end)
        pid
      end

    send(first, :finish)

    for {pid, n} <- Enum.with_index(waiters, 1) do
      assert_receive {:holding, ^pid}
      send(pid, :finish)
      assert_receive {:returned, ^pid, ^n}
    end
  end

  test "past a full queue a caller is turned away at once" do
    pool = start_pool(size: 1, max_queue: 1)
    a = hold(pool)
    assert_receive {:holding, ^a}
    _b = hold(pool)
    assert wait_until(fn -> queued(pool) == 1 end)

    assert Pool.run(pool, fn -> flunk("ran past a full queue") end) == {:error, :overloaded}
    assert Pool.exec(pool, "echo no") == {:error, :overloaded}
  end

  test "a permit comes back when its holder raises, throws, exits or is killed" do
    pool = start_pool(size: 1, max_queue: 0)

    assert_raise RuntimeError, "boom", fn -> Pool.run(pool, fn -> raise "boom" end) end
    assert catch_throw(Pool.run(pool, fn -> throw(:ball) end)) == :ball
    assert catch_exit(Pool.run(pool, fn -> exit(:out) end)) == :out
    assert Pool.run(pool, fn -> :free end) == :free

    a = hold(pool)
    assert_receive {:holding, ^a}
    Process.exit(a, :kill)
    assert wait_until(fn -> :sys.get_state(pool).running == %{} end)
    assert Pool.run(pool, fn -> :free end) == :free
  end

  test "a waiter that dies leaves the queue" do
    pool = start_pool(size: 1, max_queue: 1)
    a = hold(pool)
    assert_receive {:holding, ^a}

    waiter = spawn(fn -> Pool.run(pool, fn -> :never end) end)
    assert wait_until(fn -> queued(pool) == 1 end)
    Process.exit(waiter, :kill)
    assert wait_until(fn -> queued(pool) == 0 end)

    send(a, :finish)
    assert_receive {:returned, ^a, :done}
    assert Pool.run(pool, fn -> :next end) == :next
  end

  test "asking the same pool again while holding a permit raises instead of deadlocking" do
    pool = start_pool(size: 2, max_queue: 2)

    assert_raise RuntimeError, ~r/already holds a permit/, fn ->
      Pool.run(pool, fn -> Pool.run(pool, fn -> :inner end) end)
    end

    # The outer permit was released on the way out.
    assert :sys.get_state(pool).running == %{}
  end

  test "exec/2 and session_exec/3 run scripts under a permit" do
    pool = start_pool(size: 1)
    session = Session.new()
    assert {:ok, %Result{stdout: "1\n"}} = Pool.exec(pool, "echo 1")
    assert {:ok, _} = Pool.session_exec(pool, session, "x=2")
    assert {:ok, %Result{stdout: "2\n"}} = Pool.session_exec(pool, session, "echo $x")
    assert_raise ArgumentError, ~r/script must be a binary/, fn -> Pool.exec(pool, :nope) end
  end

  test "sizes come from the options, then the config, then the defaults" do
    on_exit(fn ->
      Application.delete_env(:ex_bashkit, :pool_size)
      Application.delete_env(:ex_bashkit, :pool_max_queue)
    end)

    defaults = :sys.get_state(start_pool([]))
    assert {defaults.size, defaults.max_queue} == {System.schedulers_online(), 50}

    Application.put_env(:ex_bashkit, :pool_size, 3)
    Application.put_env(:ex_bashkit, :pool_max_queue, 7)
    configured = :sys.get_state(start_pool([]))
    assert {configured.size, configured.max_queue} == {3, 7}

    given = :sys.get_state(start_pool(size: 1, max_queue: 0))
    assert {given.size, given.max_queue} == {1, 0}
  end

  test "bad options raise ArgumentError naming the option" do
    assert_raise ArgumentError, ~r/:size must be a positive integer, got: 0/, fn ->
      Pool.start_link(name: nil, size: 0)
    end

    assert_raise ArgumentError, ~r/:max_queue must be a non-negative integer/, fn ->
      Pool.start_link(name: nil, max_queue: -1)
    end

    assert_raise ArgumentError, ~r/unknown ExBashkit.Pool option :sise/, fn ->
      Pool.start_link(name: nil, sise: 2)
    end

    assert_raise ArgumentError, ~r/0-arity function/, fn -> Pool.run(self(), fn _ -> :x end) end
  end
end
