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
    assert wait_until(fn -> Pool.spares() == [] end)
    %{before: beams()}
  end

  test "timeouts leave no VM behind", %{before: before} do
    for _ <- 1..5 do
      assert {:error, :timeout, %{output: os_pid}} =
               Peer.run(~S|IO.write(System.pid()); Process.sleep(:infinity)|, timeout: 1_000)

      refute alive?(os_pid)
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
    assert alive?(os_pid)

    System.cmd("kill", ["-9", "#{host_pid}"])

    assert wait_until(fn -> not alive?(os_pid) end, 1_000)
    # The host's spare peers went too.
    assert wait_until(fn -> beams() <= before end, 1_000)
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

  defp alive?(os_pid), do: File.exists?("/proc/#{os_pid}") and not zombie?(os_pid)

  defp zombie?(os_pid) do
    case File.read("/proc/#{os_pid}/stat") do
      {:ok, stat} -> stat |> String.split(") ") |> List.last() |> String.starts_with?("Z")
      _ -> true
    end
  end

  # BEAM VMs running on this machine.
  defp beams do
    Path.wildcard("/proc/[0-9]*/comm")
    |> Enum.count(fn comm ->
      match?({:ok, "beam" <> _}, File.read(comm)) and
        not zombie?(comm |> Path.dirname() |> Path.basename())
    end)
  end
end
