defmodule ExBashkit.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    Supervisor.start_link([ExBashkit.PanicReporter, ExBashkit.Peer.Pool],
      strategy: :one_for_one,
      name: ExBashkit.Supervisor
    )
  end
end
