defmodule ExBashkit.GitLyingServerTest do
  # A server that speaks git's protocol version 2 up to the fetch and then
  # lies: an error line, an error on the sideband, a line longer than git
  # allows, progress that never ends, a pack that is not one, an answer cut
  # short. Each clone fails with a clear message within the session's
  # limits, leaves nothing behind, and the session goes on; the same hostile
  # answer a hundred times over leaves nothing either.
  use ExBashkit.Case, async: true

  @moduletag :git

  @head String.duplicate("ab", 20)

  # Starts a server on 127.0.0.1 whose fetch answer is `fetch_body`.
  defp serve(fetch_body) do
    {:ok, listen} =
      :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false, reuseaddr: true])

    {:ok, port} = :inet.port(listen)
    pid = spawn_link(fn -> accept(listen, fetch_body) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    "http://127.0.0.1:#{port}"
  end

  defp accept(listen, fetch_body) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        answer(socket, fetch_body)
        accept(listen, fetch_body)

      {:error, _} ->
        :ok
    end
  end

  defp answer(socket, fetch_body) do
    request = read_request(socket, "")

    {type, body} =
      cond do
        request =~ "GET /r.git/info/refs" ->
          {"advertisement",
           pkt("version 2\n") <>
             pkt("agent=liar\n") <>
             pkt("ls-refs=unborn\n") <> pkt("fetch=shallow\n") <> "0000"}

        request =~ "command=ls-refs" ->
          {"result",
           pkt("#{@head} HEAD symref-target:refs/heads/main\n") <>
             pkt("#{@head} refs/heads/main\n") <> "0000"}

        true ->
          {"result", fetch_body}
      end

    :gen_tcp.send(socket, [
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-#{type}\r\n",
      "Content-Length: #{byte_size(body)}\r\nConnection: close\r\n\r\n",
      body
    ])

    :gen_tcp.close(socket)
  end

  # The request's head and body (by its Content-Length).
  defp read_request(socket, acc) do
    case :binary.split(acc, "\r\n\r\n") do
      [head, body] ->
        length =
          case Regex.run(~r/content-length: *(\d+)/i, head) do
            [_, n] -> String.to_integer(n)
            nil -> 0
          end

        head <> read_body(socket, body, length)

      [_] ->
        {:ok, more} = :gen_tcp.recv(socket, 0, 10_000)
        read_request(socket, acc <> more)
    end
  end

  defp read_body(_socket, body, length) when byte_size(body) >= length, do: body

  defp read_body(socket, body, length) do
    {:ok, more} = :gen_tcp.recv(socket, 0, 10_000)
    read_body(socket, body <> more, length)
  end

  defp pkt(data),
    do:
      ((byte_size(data) + 4)
       |> Integer.to_string(16)
       |> String.pad_leading(4, "0")
       |> String.downcase()) <> data

  defp band(n, data), do: pkt(<<n>> <> data)

  defp session(base, opts \\ []) do
    Session.new(
      [git: true, cwd: "/home/user", allow_net: [base <> "/"], block_private_ips: false] ++ opts
    )
  end

  # Each lie as parts: a pkt-line, a sideband line on a band, raw bytes.
  @lies [
    {"an error line", [pkt: "ERR upload-pack: not our ref\n"],
     "remote error: upload-pack: not our ref"},
    {"an error on the sideband", [pkt: "packfile\n", band: {3, "disk on fire\n"}, raw: "0000"],
     "remote error: disk on fire"},
    {"a line longer than git allows",
     [pkt: "packfile\n", raw: "fff9" <> String.duplicate("x", 100)],
     "protocol error: bad line length"},
    {"a pack that is not one",
     [pkt: "packfile\n", band: {1, "PACK not really a pack"}, raw: "0000"], "pack"},
    {"no pack at all", [pkt: "acknowledgments\n", pkt: "NAK\n", raw: "0000"],
     "the server sent no pack"},
    {"an answer cut short", [pkt: "packfile\n", band: {1, "PACK"}], "the server sent no pack"},
    {"a band that is none", [pkt: "packfile\n", band: {7, "?"}, raw: "0000"], "bad band"}
  ]

  defp body(parts) do
    Enum.map_join(parts, fn
      {:pkt, data} -> pkt(data)
      {:band, {n, data}} -> band(n, data)
      {:raw, bytes} -> bytes
    end)
  end

  for {lie, parts, said} <- @lies do
    test "a server whose fetch answers with #{lie}: the clone fails saying so and leaves nothing" do
      base = serve(body(unquote(parts)))
      session = session(base)

      assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone #{base}/r.git")
      assert stderr =~ unquote(said)
      assert %Result{exit_code: 1} = run(session, "test -e /home/user/r")
      assert %Result{stdout: "alive\n"} = run(session, "echo alive")
    end
  end

  test "progress that never ends is cut at :max_git_transfer_bytes, in the VM and in a worker" do
    endless = pkt("packfile\n") <> String.duplicate(band(2, String.duplicate("p", 60_000)), 40)
    base = serve(endless)

    for isolation <- [:none, :process] do
      session = session(base, isolation: isolation, limits: [max_git_transfer_bytes: 1_000_000])
      assert %Result{exit_code: 128, stderr: stderr} = run(session, "git clone #{base}/r.git")
      assert stderr =~ ":max_git_transfer_bytes"
      assert %Result{exit_code: 1} = run(session, "test -e /home/user/r")
    end
  end

  test "the same lie a hundred times over leaves nothing behind" do
    base = serve(pkt("packfile\n") <> band(1, "PACK not really a pack") <> "0000")
    session = session(base)

    for _ <- 1..100 do
      assert %Result{exit_code: 128} = run(session, "git clone -q #{base}/r.git")
    end

    assert %Result{stdout: ""} = run(session, "ls -A /home/user")
  end
end
