defmodule ExBashkit.EgressTest do
  # An isolated session's network is the host's: its worker has no
  # interface but a loopback of its own, its requests are made by the host
  # with the session's policy, and the credentials never enter it. Against
  # a real HTTP server on loopback.
  use ExBashkit.Case, async: false

  alias ExBashkit.Test.{HttpServer, Memory}

  @secret "Bearer egress-SECRET-7f3a9c1e5b2d4068"

  setup do
    {_server, port} = HttpServer.start()
    %{base: "http://127.0.0.1:#{port}", port: port}
  end

  defp isolated(opts), do: Session.new([isolation: :process] ++ opts)

  test "the worker has no network of its own, yet its request arrives", %{base: base} do
    session = isolated(allow_net: [base], block_private_ips: false)
    os_pid = Session.info(session).os_pid

    interfaces =
      for line <- "/proc/#{os_pid}/net/dev" |> File.read!() |> String.split("\n"),
          [name, _] <- [String.split(line, ":", parts: 2)],
          name = String.trim(name),
          name != "" and not String.contains?(name, "|"),
          do: name

    assert interfaces == ["lo"]

    assert %Result{stdout: "hit /via-host", exit_code: 0} =
             run(session, "curl -s #{base}/via-host")

    assert_received {:http_request, "/via-host"}
  end

  # 6 s here (it reads the worker's whole memory): ten times that, for a
  # slower machine.
  @tag timeout: 300_000
  test "a credential reaches the server, and is nowhere in the worker's memory", %{base: base} do
    session =
      isolated(
        allow_net: [{base <> "/api", headers: %{"authorization" => @secret}}],
        block_private_ips: false
      )

    os_pid = Session.info(session).os_pid
    assert %Result{stdout: "hit /api/x"} = run(session, "curl -s #{base}/api/x")
    assert_received {:http_headers, "/api/x", headers}
    assert {"authorization", @secret} in headers

    # Positive control: a value the script did handle is found.
    run(session, "marker=control-VALUE-91c2; curl -s -H \"x-marker: $marker\" #{base}/api/y")
    assert in_memory?(os_pid, "control-VALUE-91c2")
    refute in_memory?(os_pid, "egress-SECRET-7f3a9c1e5b2d4068")
    # The session was in use until here: its worker was alive throughout.
    assert {:ok, _} = Session.exec(session, "true")
  end

  # Whether `needle` is anywhere in the worker's readable memory: each
  # mapping read through /proc/<pid>/mem (as root) and searched by grep,
  # so that this VM holds none of it.
  defp in_memory?(os_pid, needle) do
    script = """
    grep ' r' /proc/#{os_pid}/maps | while read range rest; do
      from=$((0x${range%-*})); to=$((0x${range#*-}))
      dd if=/proc/#{os_pid}/mem bs=65536 iflag=skip_bytes,count_bytes \\
        skip=$from count=$((to - from)) status=none 2>/dev/null
    done | grep -a -c -F -e "$1"
    """

    {count, _} = System.cmd("sh", ["-c", script, "sh", needle])
    String.to_integer(String.trim(count)) > 0
  end

  test "a name that resolves to a private address is refused by the host", %{port: port} do
    session = isolated(allow_net: ["http://localhost:#{port}"])
    result = run(session, "curl -s http://localhost:#{port}/private")
    assert result.exit_code == 7
    refute_received {:http_request, _}
  end

  test "a redirect out of the allowlist is refused, hop by hop", %{base: base} do
    session = isolated(allow_net: [base <> "/in"], block_private_ips: false)
    result = run(session, "curl -s -L '#{base}/in/r?to=/out'")
    assert result.exit_code == 7
    assert result.stderr =~ "not in allowlist: #{base}/out"
    assert_received {:http_request, "/in/r?to=/out"}
    refute_received {:http_request, "/out"}

    # A redirect that stays inside the allowlist is followed.
    assert %Result{stdout: "hit /in/ok"} = run(session, "curl -s -L '#{base}/in/r?to=/in/ok'")
  end

  test "a 100 MB response is cut at the cap in the host, which does not grow", %{base: base} do
    session = isolated(allow_net: [base], block_private_ips: false)

    {result, growth_kb} =
      Memory.peak_growth_kb(fn -> run(session, "curl -s #{base}/bytes/100000000 | wc -c") end)

    assert result.exit_code == 63 or result.stdout =~ ~r/^\s*0\s*$/
    assert growth_kb <= 64 * 1024, "the host grew by #{growth_kb} KiB"
    # Within the cap, the body arrives whole.
    assert %Result{stdout: out} = run(session, "curl -s #{base}/bytes/3000000 | wc -c")
    assert String.trim(out) == "3000000"
  end

  test "a session without :allow_net has no way out at all", %{base: base} do
    session = isolated([])
    result = run(session, "curl -s #{base}/nothing")
    assert result.exit_code != 0
    refute_received {:http_request, _}
  end
end
