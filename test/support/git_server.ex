defmodule ExBashkit.Test.GitServer do
  @moduledoc false
  # Real git's smart HTTP on 127.0.0.1: each request is handed to
  # `git http-backend` (CGI) serving the bare repositories under `root`,
  # pushes allowed. A client's `Git-Protocol` header reaches git as a web
  # server hands it to CGI (`HTTP_GIT_PROTOCOL`), so a client that asks
  # for protocol version 2 gets it; `protocol: 0` serves a server that
  # drops the header, which answers in version 0. Every request is reported to the owner as
  # `{:git_http, method, path_and_query, headers}` (header names
  # lowercased), so a test sees what reached the server.

  @spec start(Path.t(), keyword()) :: {pid(), :inet.port_number()}
  def start(root, opts \\ []) do
    passed = if Keyword.get(opts, :protocol, 2) == 2, do: ["git-protocol"], else: []
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
    pid = spawn_link(fn -> accept(listen, {root, passed}, owner) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    {pid, port}
  end

  defp accept(listen, served, owner) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        serve(socket, served, owner)
        accept(listen, served, owner)

      {:error, _} ->
        :ok
    end
  end

  defp serve(socket, served, owner) do
    with {:ok, {:http_request, method, {:abs_path, target}, _}} <-
           :gen_tcp.recv(socket, 0, 10_000),
         {:ok, headers} <- headers(socket, []) do
      send(owner, {:git_http, to_string(method), target, headers})

      length =
        headers |> List.keyfind("content-length", 0, {nil, "0"}) |> elem(1) |> String.to_integer()

      :ok = :inet.setopts(socket, packet: :raw)
      body = if length > 0, do: recv_exactly(socket, length), else: ""
      :gen_tcp.send(socket, cgi(served, to_string(method), target, headers, body))
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

  defp passed_header(headers, passed, name) do
    if name in passed, do: headers |> List.keyfind(name, 0, {nil, ""}) |> elem(1), else: ""
  end

  defp cgi({root, passed}, method, target, headers, body) do
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
      {"HTTP_GIT_PROTOCOL", passed_header(headers, passed, "git-protocol")},
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
