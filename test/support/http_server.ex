defmodule ExBashkit.Test.HttpServer do
  @moduledoc false
  # A tiny HTTP/1.1 server on 127.0.0.1 for the network-allowlist tests.
  # Every request it receives is reported to the owner as
  # `{:http_request, path}`, so a test can tell "denied before any I/O"
  # from "reached the server", then as `{:http_headers, path, headers}`.
  #
  #   GET <path>?to=<location> -> 302 with that Location
  #   GET /bytes/<n>           -> 200 with n bytes of body, streamed
  #   GET /flaky/<n>/<name>    -> 503 the first n times <name> is asked
  #                               for, then 200 with "hit <path>"
  #   GET <path>               -> 200 with body "hit <path>"

  @spec start() :: {pid(), :inet.port_number()}
  def start do
    owner = self()

    {:ok, listen} =
      :gen_tcp.listen(0, [
        :binary,
        ip: {127, 0, 0, 1},
        active: false,
        packet: :http_bin,
        reuseaddr: true
      ])

    {:ok, port} = :inet.port(listen)
    pid = spawn_link(fn -> accept(listen, owner) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    {pid, port}
  end

  defp accept(listen, owner) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        serve(socket, owner)
        accept(listen, owner)

      {:error, _} ->
        :ok
    end
  end

  defp serve(socket, owner) do
    with {:ok, {:http_request, _method, {:abs_path, path}, _version}} <-
           :gen_tcp.recv(socket, 0, 5_000),
         {:ok, headers} <- headers(socket, []) do
      send(owner, {:http_request, path})
      # As received: names lowercased, in order, repeats kept.
      send(owner, {:http_headers, path, headers})
      respond(socket, path)
    end

    :gen_tcp.close(socket)
  end

  @doc false
  # Reads a request's headers up to the blank line.
  def skip_headers(socket) do
    with {:ok, _} <- headers(socket, []), do: :ok
  end

  defp headers(socket, acc) do
    case :gen_tcp.recv(socket, 0, 5_000) do
      {:ok, :http_eoh} ->
        {:ok, Enum.reverse(acc)}

      {:ok, {:http_header, _, name, _, value}} ->
        headers(socket, [{name |> to_string() |> String.downcase(), value} | acc])

      other ->
        other
    end
  end

  # A large body goes out 64 KiB at a time, the same chunk each time: the
  # server's memory stays flat however much it sends.
  defp respond(socket, "/bytes/" <> n) do
    n = String.to_integer(n)
    header = "HTTP/1.1 200 OK\r\ncontent-length: #{n}\r\nconnection: close\r\n\r\n"
    :gen_tcp.send(socket, header)
    chunk = :binary.copy("x", 65_536)
    stream(socket, chunk, n)
  end

  # Requests are served one at a time by the accepting process, which
  # counts the failures it has given in its dictionary.
  defp respond(socket, "/flaky/" <> rest = path) do
    [n, name] = String.split(rest, "/", parts: 2)
    failed = Process.get({:flaky, name}, 0)

    if failed < String.to_integer(n) do
      Process.put({:flaky, name}, failed + 1)

      :gen_tcp.send(
        socket,
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
      )
    else
      :gen_tcp.send(socket, response(path))
    end
  end

  defp respond(socket, path), do: :gen_tcp.send(socket, response(path))

  defp stream(_socket, _chunk, 0), do: :ok

  defp stream(socket, chunk, n) do
    part = binary_part(chunk, 0, min(n, byte_size(chunk)))

    case :gen_tcp.send(socket, part) do
      :ok -> stream(socket, chunk, n - byte_size(part))
      {:error, _} -> :ok
    end
  end

  defp response(path) do
    case String.split(path, "?to=", parts: 2) do
      [_, location] ->
        "HTTP/1.1 302 Found\r\nlocation: #{location}\r\ncontent-length: 0\r\n" <>
          "connection: close\r\n\r\n"

      [_] ->
        body = "hit " <> path

        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n" <>
          "content-length: #{byte_size(body)}\r\nconnection: close\r\n\r\n" <> body
    end
  end
end
