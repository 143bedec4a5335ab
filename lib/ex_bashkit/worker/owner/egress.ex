defmodule ExBashkit.Worker.Owner.Egress do
  @moduledoc false
  # A worker's way to the network: it has none of its own, so its HTTP
  # requests come to the owner, which makes them through the session's
  # `:allow_net` in this VM (the credentials never leave it) and sends
  # each response back in frames.

  alias ExBashkit.Native
  alias ExBashkit.Session.Options.Limits
  alias ExBashkit.Worker.{Protocol, Request}

  # The most of a response body one frame back to the worker holds.
  @http_chunk 1024 * 1024

  @doc "The session's egress, or `nil` without `:allow_net`."
  def new(%{allow_net: :none}), do: nil

  def new(native) do
    Native.egress_new(
      native.allow_net,
      native.block_private_ips,
      native.credentials,
      Limits.value(native.limits, :max_git_transfer_bytes),
      native.package_cache
    )
  end

  @doc """
  Makes the worker's request `id`; its answer comes as `{:ex_bashkit_egress,
  id, answer}`, after the parts of a git transfer's body as
  `{:ex_bashkit_egress_part, id, part}`.
  """
  def request(egress, port, id, request) do
    %{method: method, url: url, headers: headers, body: body, timeout_ms: timeout, max_bytes: max} =
      request

    with {:error, message} <-
           Native.egress_request(egress, {method, url, headers, body, timeout, max}, self(), id),
         do: reply(port, id, {:error, message})
  end

  @doc "Passes on a part of a successful response's body as it arrives (a git pack)."
  def part(port, id, part), do: frame(port, Request.http_part(id, part))

  @doc "Sends a response back, in frames of at most #{@http_chunk} bytes."
  def reply(port, id, {:ok, {status, headers, body}}) do
    for chunk <- chunks(body), do: frame(port, Request.http_body(id, chunk))
    frame(port, Request.http_reply(id, {:ok, {status, headers}}))
  end

  def reply(port, id, {:error, message}),
    do: frame(port, Request.http_reply(id, {:error, message}))

  defp chunks(<<chunk::binary-size(@http_chunk), rest::binary>>), do: [chunk | chunks(rest)]
  defp chunks(<<>>), do: []
  defp chunks(rest), do: [rest]

  defp frame(port, term), do: Port.command(port, Protocol.frame(term))
end
