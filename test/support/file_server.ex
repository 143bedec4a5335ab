defmodule ExBashkit.Test.FileServer do
  @moduledoc false
  # Serves the files of a directory over HTTP/1.1 on 127.0.0.1, for the
  # precompiled-library tests and the package registries: GET /<path>
  # answers the file at that path, else the file named by its last part,
  # or 404. Each request is reported to the owner as `{:file_server, path}`.

  alias ExBashkit.Test.HttpServer

  # One request per connection, said so (clients that keep connections
  # alive, as Node's do, then open a new one).
  @close "connection: close\r\n"

  @doc """
  Starts serving `dir`. `latency_ms:` holds each answer back that long
  (a registry across a network, for the benchmarks); connections are
  then served side by side, as a registry's are.
  """
  @spec start(Path.t(), keyword()) :: {pid(), :inet.port_number()}
  def start(dir, opts \\ []) do
    owner = self()
    latency = Keyword.get(opts, :latency_ms, 0)
    # A backlog for a client that opens several connections at once (the
    # default 5 drops the rest, which then wait a second to try again).
    listen_opts = [:binary, ip: {127, 0, 0, 1}, active: false, packet: :http_bin]
    listen_opts = [{:backlog, 128}, {:reuseaddr, true} | listen_opts]
    {:ok, listen} = :gen_tcp.listen(0, listen_opts)
    {:ok, port} = :inet.port(listen)
    pid = spawn_link(fn -> accept(listen, dir, owner, latency) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    {pid, port}
  end

  @doc "The paths requested since the last call (taken from the mailbox), oldest first."
  @spec requests() :: [String.t()]
  def requests do
    receive do
      {:file_server, path} -> [path | requests()]
    after
      0 -> []
    end
  end

  defp accept(listen, dir, owner, 0) do
    with {:ok, socket} <- :gen_tcp.accept(listen) do
      serve(socket, dir, owner, 0)
      accept(listen, dir, owner, 0)
    end
  end

  defp accept(listen, dir, owner, latency) do
    with {:ok, socket} <- :gen_tcp.accept(listen) do
      server = spawn_link(fn -> receive(do: (:go -> serve(socket, dir, owner, latency))) end)
      :ok = :gen_tcp.controlling_process(socket, server)
      send(server, :go)
      accept(listen, dir, owner, latency)
    end
  end

  defp serve(socket, dir, owner, latency) do
    with {:ok, {:http_request, :GET, {:abs_path, "/" <> name}, _}} <-
           :gen_tcp.recv(socket, 0, 5_000),
         :ok <- HttpServer.skip_headers(socket) do
      send(owner, {:file_server, name})
      # The path under `dir` where it names a file there (never `..`),
      # else the file named by its last part.
      nested = Path.join(dir, name)

      path =
        if ".." not in Path.split(name) and File.regular?(nested),
          do: nested,
          else: Path.join(dir, Path.basename(name))

      response =
        case File.read(path) do
          {:ok, body} ->
            ["HTTP/1.1 200 OK\r\n#{@close}content-length: #{byte_size(body)}\r\n\r\n", body]

          {:error, _} ->
            "HTTP/1.1 404 Not Found\r\n#{@close}content-length: 0\r\n\r\n"
        end

      Process.sleep(latency)
      :gen_tcp.send(socket, response)
    end

    :gen_tcp.close(socket)
  end
end
