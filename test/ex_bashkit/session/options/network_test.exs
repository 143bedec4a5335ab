defmodule ExBashkit.NetworkTest do
  # Against a real HTTP server on loopback, started by each test. The server
  # reports every request it receives, so "denied" means "never sent".
  use ExBashkit.Case, async: true

  alias ExBashkit.Test.HttpServer

  setup do
    {_server, port} = HttpServer.start()
    %{port: port, base: "http://127.0.0.1:#{port}"}
  end

  defp curl(session, url) do
    {:ok, %Result{} = result} = Session.exec(session, "curl -s '#{url}'")
    result
  end

  defp assert_denied(%Result{} = result, reason) do
    assert result.stderr =~ reason
    assert result.exit_code != 0
    refute_received {:http_request, _}
  end

  test "without :allow_net, curl, wget and http fail before any I/O", %{base: base} do
    session = Session.new(block_private_ips: false)

    for tool <- ["curl -s", "wget -q -O -"] do
      {:ok, result} = Session.exec(session, "#{tool} #{base}/api/x")
      assert_denied(result, "network access not configured")
    end

    # bashkit's `http` reports this on stdout, with exit status 0.
    {:ok, result} = Session.exec(session, "http GET #{base}/api/x")
    assert result.stdout =~ "network access not configured"
    refute_received {:http_request, _}
  end

  test "loopback is blocked even when allowlisted, unless block_private_ips: false", ctx do
    blocked = Session.new(allow_net: [ctx.base <> "/api"])
    assert_denied(curl(blocked, ctx.base <> "/api/x"), "private/reserved IP 127.0.0.1")

    by_name = Session.new(allow_net: ["http://localhost:#{ctx.port}/api"])
    assert_denied(curl(by_name, "http://localhost:#{ctx.port}/api/x"), "private")

    allowed = Session.new(allow_net: [ctx.base <> "/api"], block_private_ips: false)
    assert %Result{exit_code: 0, stdout: "hit /api/x"} = curl(allowed, ctx.base <> "/api/x")
    assert_received {:http_request, "/api/x"}
  end

  test "the allowlist matches scheme, host, port and path prefix", ctx do
    session = Session.new(allow_net: [ctx.base <> "/api"], block_private_ips: false)

    for url <- [
          ctx.base <> "/other",
          ctx.base <> "/apix",
          "http://127.0.0.1:#{ctx.port + 1}/api/x",
          "http://localhost:#{ctx.port}/api/x",
          "https://127.0.0.1:#{ctx.port}/api/x"
        ] do
      assert_denied(curl(session, url), "not in allowlist")
    end

    assert %Result{stdout: "hit /api"} = curl(session, ctx.base <> "/api")
    assert %Result{stdout: "hit /api/v1/deep?q=1"} = curl(session, ctx.base <> "/api/v1/deep?q=1")
  end

  test "wget and http obey the same allowlist", ctx do
    session = Session.new(allow_net: [ctx.base <> "/api"], block_private_ips: false)

    assert {:ok, %Result{stdout: "hit /api/w"}} =
             Session.exec(session, "wget -q -O - #{ctx.base}/api/w")

    assert {:ok, %Result{stdout: "hit /api/h"}} =
             Session.exec(session, "http GET #{ctx.base}/api/h")

    assert_received {:http_request, "/api/w"}
    assert_received {:http_request, "/api/h"}
    {:ok, denied} = Session.exec(session, "wget -q -O - #{ctx.base}/private")
    assert_denied(denied, "not in allowlist")
  end

  test "redirects are not followed, and -L does not escape the allowlist", ctx do
    session = Session.new(allow_net: [ctx.base <> "/api"], block_private_ips: false)

    assert %Result{stdout: ""} = curl(session, ctx.base <> "/api/r?to=/secret")
    assert_received {:http_request, "/api/r?to=/secret"}

    {:ok, followed} = Session.exec(session, "curl -s -L '#{ctx.base}/api/r?to=/secret'")
    assert_received {:http_request, "/api/r?to=/secret"}
    assert_denied(followed, "not in allowlist: #{ctx.base}/secret")

    # A redirect that stays inside the allowlist may be followed with -L.
    {:ok, inside} = Session.exec(session, "curl -s -L '#{ctx.base}/api/r?to=/api/ok'")
    assert inside.stdout == "hit /api/ok"
  end

  test "allow_net: :all permits any URL but still blocks private IPs by default", ctx do
    assert_denied(curl(Session.new(allow_net: :all), ctx.base <> "/x"), "private")

    open = Session.new(allow_net: :all, block_private_ips: false)
    assert %Result{stdout: "hit /anything"} = curl(open, ctx.base <> "/anything")
  end

  test "malformed network options raise ArgumentError" do
    for {opts, message} <- [
          {[allow_net: "https://example.com"], ~r/:allow_net must be a list/},
          {[allow_net: ["example.com"]], ~r/pattern "example.com" must be an http/},
          {[allow_net: ["ftp://example.com"]], ~r/must be an http/},
          {[allow_net: [:all]], ~r/must be an http/},
          {[block_private_ips: :no], ~r/:block_private_ips must be true or false/}
        ] do
      assert_raise ArgumentError, message, fn -> Session.new(opts) end
    end
  end
end
