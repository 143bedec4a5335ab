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

  @spec start(Path.t()) :: {pid(), :inet.port_number()}
  def start(dir) do
    owner = self()
    # A backlog for a client that opens several connections at once (the
    # default 5 drops the rest, which then wait a second to try again).
    opts = [:binary, ip: {127, 0, 0, 1}, active: false, packet: :http_bin, reuseaddr: true]
    opts = [{:backlog, 128} | opts]
    {:ok, listen} = :gen_tcp.listen(0, opts)
    {:ok, port} = :inet.port(listen)
    pid = spawn_link(fn -> accept(listen, dir, owner) end)
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

  defp accept(listen, dir, owner) do
    with {:ok, socket} <- :gen_tcp.accept(listen) do
      serve(socket, dir, owner)
      accept(listen, dir, owner)
    end
  end

  defp serve(socket, dir, owner) do
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

      :gen_tcp.send(socket, response)
    end

    :gen_tcp.close(socket)
  end
end
