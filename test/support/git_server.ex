defmodule ExBashkit.Test.GitServer do
  @moduledoc false
  # Real git's smart HTTP on 127.0.0.1: each request is handed to
  # `git http-backend` (CGI) serving the bare repositories under `root`,
  # pushes allowed. Every request is reported to the owner as
  # `{:git_http, method, path_and_query, headers}` (header names
  # lowercased), so a test sees what reached the server.

  @spec start(Path.t()) :: {pid(), :inet.port_number()}
  def start(root) do
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
    pid = spawn_link(fn -> accept(listen, root, owner) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    {pid, port}
  end

  defp accept(listen, root, owner) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        serve(socket, root, owner)
        accept(listen, root, owner)

      {:error, _} ->
        :ok
    end
  end

  defp serve(socket, root, owner) do
    with {:ok, {:http_request, method, {:abs_path, target}, _}} <-
           :gen_tcp.recv(socket, 0, 10_000),
         {:ok, headers} <- headers(socket, []) do
      send(owner, {:git_http, to_string(method), target, headers})

      length =
        headers |> List.keyfind("content-length", 0, {nil, "0"}) |> elem(1) |> String.to_integer()

      :ok = :inet.setopts(socket, packet: :raw)
      body = if length > 0, do: recv_exactly(socket, length), else: ""
      :gen_tcp.send(socket, cgi(root, to_string(method), target, headers, body))
    end

    :gen_tcp.close(socket)
  end

  defp recv_exactly(socket, length) do
    {:ok, body} = :gen_tcp.recv(socket, length, 10_000)
    body
  end

  defp headers(socket, acc) do
    case :gen_tcp.recv(socket, 0, 10_000) do
      {:ok, {:http_header, _, name, _, value}} ->
        headers(socket, [{String.downcase(to_string(name)), value} | acc])

      {:ok, :http_eoh} ->
        {:ok, Enum.reverse(acc)}

      other ->
        other
    end
  end

  defp cgi(root, method, target, headers, body) do
    {path, query} =
      case String.split(target, "?", parts: 2) do
        [path, query] -> {path, query}
        [path] -> {path, ""}
      end

    input = Path.join(System.tmp_dir!(), "git_http_#{System.unique_integer([:positive])}")
    File.write!(input, body)

    env = [
      {"GIT_PROJECT_ROOT", root},
      {"GIT_HTTP_EXPORT_ALL", "1"},
      {"REMOTE_USER", "agent"},
      {"REMOTE_ADDR", "127.0.0.1"},
      {"PATH_INFO", path},
      {"QUERY_STRING", query},
      {"REQUEST_METHOD", method},
      {"CONTENT_TYPE", headers |> List.keyfind("content-type", 0, {nil, ""}) |> elem(1)},
      {"CONTENT_LENGTH", Integer.to_string(byte_size(body))},
      # Real git gzips a large request body.
      {"HTTP_CONTENT_ENCODING",
       headers |> List.keyfind("content-encoding", 0, {nil, ""}) |> elem(1)},
      {"GIT_CONFIG_GLOBAL", "/dev/null"},
      {"GIT_CONFIG_NOSYSTEM", "1"}
    ]

    {out, _} =
      System.cmd("sh", ["-c", "exec git http-backend < \"$1\" 2>/dev/null", "sh", input], env: env)

    File.rm(input)
    [head, payload] = :binary.split(out, ["\r\n\r\n", "\n\n"])

    cgi_headers =
      for line <- String.split(head, ["\r\n", "\n"], trim: true) do
        [name, value] = String.split(line, ":", parts: 2)
        {name, String.trim(value)}
      end

    {status, cgi_headers} =
      case List.keytake(cgi_headers, "Status", 0) do
        {{_, status}, rest} -> {status, rest}
        nil -> {"200 OK", cgi_headers}
      end

    lines = Enum.map(cgi_headers, fn {name, value} -> "#{name}: #{value}\r\n" end)

    [
      "HTTP/1.1 #{status}\r\n",
      lines,
      "Content-Length: #{byte_size(payload)}\r\nConnection: close\r\n\r\n",
      payload
    ]
  end
end
