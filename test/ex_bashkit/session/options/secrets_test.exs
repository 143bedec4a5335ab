defmodule ExBashkit.SecretsTest do
  # Headers injected at the network boundary, against a real HTTP server on
  # loopback that reports the headers it received.
  use ExBashkit.Case, async: true

  alias ExBashkit.Test.HttpServer

  @secret "Bearer s3cr3t-token-0123456789"

  setup do
    {_server, port} = HttpServer.start()
    %{base: "http://127.0.0.1:#{port}"}
  end

  defp session(base, opts \\ []) do
    Session.new(
      [
        allow_net: [{base <> "/api", headers: %{"authorization" => @secret}}, base <> "/open"],
        block_private_ips: false
      ] ++ opts
    )
  end

  defp received(path) do
    assert_received {:http_headers, ^path, headers}
    headers
  end

  for isolation <- [:none, :process] do
    describe "isolation: #{isolation}" do
      test "the header reaches the server on matching requests only", %{base: base} do
        session = session(base, isolation: unquote(isolation))
        assert %Result{stdout: "hit /api/x"} = run(session, "curl -s #{base}/api/x")
        assert {"authorization", @secret} in received("/api/x")

        assert %Result{stdout: "hit /open/y"} = run(session, "curl -s #{base}/open/y")
        refute List.keymember?(received("/open/y"), "authorization", 0)
      end

      test "the script never sees it", %{base: base} do
        session = session(base, isolation: unquote(isolation))

        script = """
        curl -sv #{base}/api/v 2>&1
        env; set; declare -p
        cat /proc/self/environ 2>&1
        """

        result = run(session, script)
        refute result.stdout =~ "s3cr3t"
        refute result.stderr =~ "s3cr3t"
        {:ok, snapshot} = Session.snapshot(session)
        refute snapshot =~ "s3cr3t"
        refute inspect(session) =~ "s3cr3t"
      end

      test "a script's own header of that name neither replaces nor reads it", %{base: base} do
        session = session(base, isolation: unquote(isolation))
        run(session, "curl -s -H 'Authorization: Bearer mine' #{base}/api/own")
        headers = received("/api/own")
        assert {"authorization", @secret} in headers
        refute {"authorization", "Bearer mine"} in headers
      end
    end
  end

  for isolation <- [:none, :process] do
    test "a function value is called again before each call: a token can rotate " <>
           "(isolation: #{isolation})",
         %{base: base} do
      {:ok, counter} = Agent.start_link(fn -> 0 end)
      token = fn -> "Bearer rotating-#{Agent.get_and_update(counter, &{&1 + 1, &1 + 1})}" end

      session =
        Session.new(
          allow_net: [{base <> "/api", headers: [authorization: token]}],
          block_private_ips: false,
          isolation: unquote(isolation)
        )

      run(session, "curl -s #{base}/api/one")

      [{"authorization", first}] =
        Enum.filter(received("/api/one"), &(elem(&1, 0) == "authorization"))

      run(session, "curl -s #{base}/api/two")

      [{"authorization", second}] =
        Enum.filter(received("/api/two"), &(elem(&1, 0) == "authorization"))

      assert first =~ ~r/^Bearer rotating-\d+$/
      assert second =~ ~r/^Bearer rotating-\d+$/
      assert first != second
    end
  end

  test "a function that fails fails the call, naming the header, not a value", %{base: base} do
    {:ok, fail?} = Agent.start_link(fn -> false end)

    token = fn ->
      if Agent.get(fail?, & &1), do: raise("vault down: s3cr3t"), else: "Bearer fine"
    end

    session =
      Session.new(
        allow_net: [{base <> "/api", headers: %{"x-token" => token}}],
        block_private_ips: false
      )

    Agent.update(fail?, fn _ -> true end)
    assert {:error, message} = Session.exec(session, "curl -s #{base}/api/x")
    assert message =~ ~s(header function "x-token")
    refute_received {:http_request, _}
  end

  test "a redirect out of the pattern does not carry it", %{base: base} do
    session = session(base)
    run(session, "curl -sL '#{base}/api/r?to=#{base}/open/landed'")
    assert {"authorization", @secret} in received("/api/r?to=#{base}/open/landed")

    # Followed or not, the hop outside the pattern has no injected header.
    receive do
      {:http_headers, "/open/landed", headers} ->
        refute List.keymember?(headers, "authorization", 0)
    after
      0 -> :ok
    end
  end

  test "errors about the option never show a header's value" do
    for entry <- [
          {"http://h/api", headers: %{"bad name" => "s3cr3t"}},
          {"http://h/api", headers: %{"x-key" => "s3cr3t\r\nx-evil: 1"}},
          {"http://h/api", headers: %{}},
          {"http://h/api", cookies: "s3cr3t"}
        ] do
      error = assert_raise ArgumentError, fn -> Session.new(allow_net: [entry]) end
      refute Exception.message(error) =~ "s3cr3t"
    end
  end
end
