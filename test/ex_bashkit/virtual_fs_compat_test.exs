defmodule ExBashkit.VirtualFsCompatTest do
  # ex_bashkit 0.1.7's ExBashkit.VirtualFs contract: a backend written for
  # it works here unchanged.
  use ExBashkit.Case, async: true

  defmodule ReadOnlyFs do
    use ExBashkit.VirtualFs

    @impl true
    def read(prefix, "/" <> name) when name != "", do: {:ok, [prefix, ":", name, "\n"]}
    def read(_prefix, _path), do: {:error, :enoent}
  end

  defmodule AgentFs do
    use ExBashkit.VirtualFs

    @impl true
    def read(agent, "/" <> key) do
      case Agent.get(agent, &Map.fetch(&1, key)) do
        {:ok, value} -> {:ok, value}
        :error -> {:error, :enoent}
      end
    end

    @impl true
    def write(agent, "/" <> key, data), do: Agent.update(agent, &Map.put(&1, key, data))

    @impl true
    def list(agent, "/"), do: {:ok, Agent.get(agent, &Map.keys/1)}
  end

  defp agent(map) do
    {:ok, agent} = Agent.start_link(fn -> map end)
    agent
  end

  describe "use ExBashkit.VirtualFs" do
    test "stat/2 is derived from read/2: cat, test -f and stat work with read alone" do
      session = Session.new(virtual_fs: %{"/r" => {ReadOnlyFs, "p"}})

      assert %Result{stdout: "p:x\n"} = run(session, "cat /r/x")
      assert %Result{exit_code: 0} = run(session, "test -f /r/x")
      assert %Result{stdout: "4\n"} = run(session, "stat -c %s /r/x")
      assert %Result{exit_code: 1} = run(session, "test -f /r/")
      assert %Result{exit_code: 0} = run(session, "test -d /r")
    end

    test "every callback defaults to :enotsup" do
      defmodule NothingFs do
        use ExBashkit.VirtualFs
      end

      session = Session.new(virtual_fs: %{"/r" => NothingFs})

      for script <- ["cat /r/f", "echo x > /r/f", "echo x >> /r/f", "mkdir /r/d", "ls /r"] do
        assert %Result{exit_code: code, stderr: stderr} = run(session, script)
        assert code != 0, script
        assert stderr =~ "not supported", script
      end
    end

    test "defaults are overridable, and an override is what runs" do
      kv = agent(%{"a" => "A\n"})
      session = Session.new(virtual_fs: %{"/kv" => {AgentFs, kv}})

      assert %Result{stdout: "a\n"} = run(session, "ls /kv")
      assert %Result{exit_code: 0} = run(session, "echo 42 > /kv/answer")
      assert Agent.get(kv, & &1) == %{"a" => "A\n", "answer" => "42\n"}
      assert %Result{stdout: "42\n"} = run(session, "cat /kv/answer")
      # rm is still the default: the file stays.
      assert %Result{exit_code: 1} = run(session, "rm /kv/a")
      assert Agent.get(kv, &Map.has_key?(&1, "a"))
    end

    test "a bare module gets nil as its arg" do
      defmodule NilArgFs do
        use ExBashkit.VirtualFs
        @impl true
        def read(arg, path), do: {:ok, "#{inspect(arg)} #{path}\n"}
      end

      assert %Result{stdout: "nil /x\n"} =
               run(Session.new(virtual_fs: %{"/n" => NilArgFs}), "cat /n/x")
    end
  end

  describe "the function form" do
    test "requests carry :data for writes and :recursive for mkdir and remove" do
      test = self()

      backend = fn request ->
        send(test, request)
        if request.op == :stat, do: {:error, :enoent}, else: :ok
      end

      session = Session.new(virtual_fs: %{"/rec" => backend})
      run(session, "printf x >> /rec/f; printf y > /rec/g; mkdir -p /rec/a/b; mkdir /rec/c")

      assert_received %{op: :append, path: "/f", data: "x"}
      assert_received %{op: :write, path: "/g", data: "y"}
      assert_received %{op: :mkdir, path: "/a/b", recursive: true}
      assert_received %{op: :mkdir, path: "/c", recursive: false}
      refute_received %{content: _}
      refute_received %{parents: _}
    end

    test "listings may be bare names, {name, kind}, or {name, %{type, size}}" do
      backend = fn
        %{op: :list, path: "/"} ->
          {:ok, ["plain", {"dir", :dir}, {"sized", %{type: :file, size: 3}}]}

        %{op: :stat, path: "/dir"} ->
          {:ok, %{type: :dir, size: 0}}

        %{op: :stat, path: "/"} ->
          {:ok, %{type: :dir, size: 0}}

        %{op: :stat} ->
          {:ok, %{type: :file, size: 1}}

        _ ->
          {:error, :enotsup}
      end

      session = Session.new(virtual_fs: %{"/l" => backend})
      assert %Result{stdout: "dir\nplain\nsized\n"} = run(session, "ls /l")

      assert %Result{stdout: "dir\n"} =
               run(session, "for f in /l/*; do [ -d $f ] && basename $f; done")
    end

    test "rename, beyond 0.1.7, reaches a backend that implements it" do
      test = self()

      backend = fn
        %{op: :rename} = request -> send(test, request) && :ok
        %{op: :stat, path: "/a"} -> {:ok, %{type: :file, size: 1}}
        %{op: :stat} -> {:error, :enoent}
        _ -> {:error, :enotsup}
      end

      assert %Result{exit_code: 0} =
               run(Session.new(virtual_fs: %{"/m" => backend}), "mv /m/a /m/b")

      assert_received %{op: :rename, path: "/a", to: "/b"}
    end
  end
end
