defmodule ExBashkit.PeerLifetimeTest do
  # Counts the OS's BEAM processes, so it runs alone (async: false modules
  # run after all async ones), with the spare pool turned off meanwhile.
  use ExBashkit.Case, async: false

  alias ExBashkit.Peer
  alias ExBashkit.Peer.Pool

  @moduletag timeout: 180_000

  setup do
    Peer.ensure_distributed!()
    :ok = Pool.resize(0)
    on_exit(fn -> Pool.resize(Application.get_env(:ex_bashkit, :peer_pool_size, 2)) end)
    # Spares of an earlier test may still be booting.
    assert wait_until(fn -> match?(%{spares: [], booting: 0, lent: 0}, Pool.info()) end, 5_000)
    %{before: beams()}
  end

  test "timeouts leave no VM behind", %{before: before} do
    for _ <- 1..5 do
      assert {:error, :timeout, %{output: os_pid}} =
               Peer.run(~S|IO.write(System.pid()); Process.sleep(:infinity)|, timeout: 1_000)

      # The node is down when run/2 returns; its OS process exits right after.
      assert wait_until(fn -> not alive?(os_pid) end)
    end

    assert wait_until(fn -> beams() <= before end)
  end

  test "a killed caller takes its peer down", %{before: before} do
    file = Path.join(host_dir!("peer"), "pid")

    caller =
      spawn(fn -> Peer.run(~s|File.write!("#{file}", System.pid()); Process.sleep(:infinity)|) end)

    assert wait_until(fn -> File.exists?(file) and File.read!(file) != "" end)
    os_pid = File.read!(file)
    assert alive?(os_pid)

    Process.exit(caller, :kill)
    assert wait_until(fn -> not alive?(os_pid) end)
    assert wait_until(fn -> beams() <= before end)
  end

  test "peers die with the host VM, even killed with SIGKILL", %{before: before} do
    file = Path.join(host_dir!("peer_host"), "pid")

    script = """
    {:ok, _} = Application.ensure_all_started(:ex_bashkit)
    spawn(fn -> ExBashkit.Peer.run(~s|File.write!("#{file}", System.pid()); Process.sleep(:infinity)|) end)
    Process.sleep(:infinity)
    """

    paths = Enum.flat_map(:code.get_path(), &["-pa", List.to_string(&1)])
    elixir = System.find_executable("elixir")
    host = Port.open({:spawn_executable, elixir}, [:binary, args: paths ++ ["-e", script]])
    {:os_pid, host_pid} = Port.info(host, :os_pid)

    assert wait_until(fn -> File.exists?(file) and File.read!(file) != "" end, 3_000)
    os_pid = File.read!(file)
    # The host names itself after its OS pid (Peer.ensure_distributed!/0).
    host_tree = "ex_bashkit_#{host_pid}_"
    assert alive?(os_pid, host_tree)
    assert beams(host_tree) >= 1

    System.cmd("kill", ["-9", "#{host_pid}"])

    assert wait_until(fn -> not alive?(os_pid, host_tree) end, 1_000)
    # The host's spare peers went too.
    assert wait_until(fn -> beams(host_tree) == 0 end, 1_000)
    assert beams() <= before
  end

  # With the pool off every run boots its VM; with it on, callers beyond
  # the spares wait for boots in flight.
  for size <- [0, 2] do
    test "callers killed while their VM boots leave no VM behind (pool size #{size})",
         %{before: before} do
      :ok = Pool.resize(unquote(size))

      for kill_after <- [10, 150, 250] do
        Task.async_stream(1..4, fn _ -> Peer.run("Process.sleep(:infinity)") end,
          timeout: kill_after,
          on_timeout: :kill_task
        )
        |> Enum.to_list()
      end

      :ok = Pool.resize(0)
      assert wait_until(fn -> beams() <= before end, 1_500)
    end
  end

  test "a caller whose group leader is not a standard IO device gets its run",
       %{before: before} do
    captured =
      ExUnit.CaptureIO.capture_io(fn ->
        send(self(), {:run, Peer.run(~S|IO.puts("hi"); 1 + 1|)})
      end)

    assert_received {:run, {:ok, %{output: "hi\n", result: 2}}}
    assert captured == ""
    assert wait_until(fn -> beams() <= before end)
  end

  test ":timeout bounds the whole call, the boot of its VM included", %{before: before} do
    # A boot takes hundreds of milliseconds; the run itself none.
    assert {:error, :timeout, %{output: ""}} = Peer.run("1 + 1", timeout: 20)
    assert wait_until(fn -> beams() <= before end, 1_000)
  end

  test "a run inside a run leaves no VM behind when the outer run times out",
       %{before: before} do
    code = ~S|ExBashkit.Peer.run("Process.sleep(:infinity)")|
    assert {:error, :timeout, _} = Peer.run(code, timeout: 3_000)
    assert wait_until(fn -> beams() <= before end, 2_000)
  end

  test "EPMD, this VM and its peers accept connections on loopback only" do
    :ok = Pool.resize(2)
    {:ok, _} = Peer.run("1")
    assert wait_until(fn -> length(Pool.spares()) == 2 end, 5_000)

    # Only this VM's own nodes: EPMD also lists those of any other VM on the
    # machine, which may be stopping while this test looks at their ports.
    ours =
      for node <- [node() | Pool.spares()], do: node |> to_string() |> String.split("@") |> hd()

    {:ok, registered} = :erl_epmd.names(~c"127.0.0.1")
    node_ports = for {name, port} <- registered, to_string(name) in ours, do: port
    # This VM and its two spares.
    assert length(node_ports) == 3
    ports = [4369 | node_ports]

    for port <- ports do
      addresses = listening_addresses(port)
      assert addresses != [], "nothing listens on #{port}"

      assert Enum.all?(addresses, &(&1 in [{127, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 1}])),
             "port #{port} listens on #{inspect(addresses)}"
    end
  end

  describe "placing the pool" do
    setup do
      on_exit(fn ->
        # Back to the default pool, under ExBashkit's supervisor.
        if Process.whereis(Pool) == nil, do: Peer.run("1")
      end)
    end

    test "an application that never calls run/2 starts no pool" do
      script = """
      {:ok, _} = Application.ensure_all_started(:ex_bashkit)
      IO.write(inspect(Process.whereis(ExBashkit.Peer.Pool)))
      """

      paths = Enum.flat_map(:code.get_path(), &["-pa", List.to_string(&1)])
      assert {"nil", 0} = System.cmd(System.find_executable("elixir"), paths ++ ["-e", script])
    end

    test "a pool in the caller's own tree is the one run/2 uses", %{before: before} do
      :ok = Supervisor.terminate_child(ExBashkit.Supervisor, Pool)
      :ok = Supervisor.delete_child(ExBashkit.Supervisor, Pool)
      assert Process.whereis(Pool) == nil

      pool = start_supervised!({Pool, size: 1})
      assert {:ok, %{result: 2}} = Peer.run("1 + 1")
      assert Process.whereis(Pool) == pool
      assert wait_until(fn -> length(Pool.spares()) == 1 end, 5_000)

      # Its spares go with it.
      :ok = stop_supervised(Pool)
      assert wait_until(fn -> beams() <= before end, 2_000)

      # Without one, the first run starts the default pool again.
      assert {:ok, %{result: 3}} = Peer.run("1 + 2")

      assert {Pool, pid, :worker, _} =
               List.keyfind(Supervisor.which_children(ExBashkit.Supervisor), Pool, 0)

      assert Process.whereis(Pool) == pid
    end

    test "bad pool options raise ArgumentError" do
      assert_raise ArgumentError, ~r/:size must be a non-negative integer/, fn ->
        Pool.start_link(size: -1)
      end

      assert_raise ArgumentError, ~r/unknown option :name/, fn ->
        Pool.start_link(name: :other)
      end

      assert_raise ArgumentError, ~r/keyword list/, fn -> Pool.start_link(:big) end
    end
  end

  # The local addresses of the TCP sockets listening on `port`.
  defp listening_addresses(port) do
    for file <- ["/proc/net/tcp", "/proc/net/tcp6"],
        {:ok, table} <- [File.read(file)],
        line <- table |> String.split("\n", trim: true) |> tl(),
        [_, local, _, "0A" | _] <- [String.split(line)],
        [ip, ^port] <- [local |> String.split(":") |> decode_endpoint()],
        do: ip
  end

  defp decode_endpoint([ip, port]) do
    # /proc prints each 32-bit word of the address in host (little-endian) order.
    words = for <<word::binary-size(8) <- ip>>, do: word |> Base.decode16!() |> reverse()
    bytes = IO.iodata_to_binary(words)

    ip =
      case bytes do
        <<a, b, c, d>> -> {a, b, c, d}
        _ -> List.to_tuple(for <<group::16 <- bytes>>, do: group)
      end

    [ip, String.to_integer(port, 16)]
  end

  defp reverse(binary),
    do: binary |> :binary.bin_to_list() |> Enum.reverse() |> :binary.list_to_bin()

  # A VM of the peer tree rooted at `root` (this VM's by default) with this
  # pid. Pids wrap (threads take them too, and pid_max may be 32768): a
  # pid seen again may be anyone's by now, which once failed a wait here.
  defp alive?(os_pid, root \\ Atom.to_string(node())) do
    with true <- process?(os_pid),
         {:ok, args} <- File.read("/proc/#{os_pid}/cmdline"),
         [_, rooted_at | _] <- String.split(args, "\0-ex_bashkit_root\0") do
      String.starts_with?(rooted_at, root)
    else
      _ -> false
    end
  end

  # BEAM VMs in the peer trees rooted at this VM, or at a node whose name
  # starts with `root` (every peer's command line names its root). Another
  # suite on the same machine (`mix test & mix test`) starts VMs too, which
  # counting every BEAM here once mistook for ours.
  defp beams(root \\ Atom.to_string(node())) do
    Path.wildcard("/proc/[0-9]*/cmdline")
    |> Enum.count(fn cmdline ->
      with {:ok, args} <- File.read(cmdline),
           true <- process?(cmdline |> Path.dirname() |> Path.basename()),
           [_, rooted_at | _] <- String.split(args, "\0-ex_bashkit_root\0") do
        String.starts_with?(rooted_at, root)
      else
        _ -> false
      end
    end)
  end
end
