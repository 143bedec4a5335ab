defmodule ExBashkit.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    ExBashkit.Native.set_memory_budget(memory_budget!())
    ExBashkit.Telemetry.setup()

    # ExBashkit.Peer.Pool joins on first use of ExBashkit.Peer.run/2, unless
    # the user placed one in their own tree.
    children = [
      ExBashkit.PanicReporter,
      # The servers of builtin and virtual_fs calls, and the table of the
      # callback chains their deadlock check reads.
      ExBashkit.Callbacks.child_specs(),
      ExBashkit.Store.Memory,
      # The table of live servers (ExBashkit.Server.list/0), and the one of
      # the servers of the ids this node owns, before them.
      ExBashkit.Server.Directory,
      ExBashkit.Server.Names,
      {DynamicSupervisor,
       name: ExBashkit.Server.Supervisor, strategy: :one_for_one, max_restarts: 1_000},
      # The calls servers run, the relays of their streams, and the ring's
      # hand-overs.
      {Task.Supervisor, name: ExBashkit.Server.TaskSupervisor},
      # Which node owns which id: the nodes running servers, as a :pg group.
      %{id: :pg, start: {:pg, :start_link, [ExBashkit.Server.Ring.scope()]}},
      ExBashkit.Server.Ring,
      # The servers of other nodes to start here when those nodes die.
      ExBashkit.Server.Roster,
      # `isolation: :process`: the owners of live workers, the zygotes'
      # keeper, spare workers and the cgroups' sweeper, in the order
      # worker/tree.ex explains. Spares harden ahead for the default
      # isolated session, whose options they are handed here (the worker
      # modules do not depend on Session's).
      {ExBashkit.Worker.Tree, prepare: &ExBashkit.Session.Options.default_native/0},
      # MCP servers (ExBashkit.MCP.Stdio), and the tasks their tool calls run in.
      {DynamicSupervisor, name: ExBashkit.MCP.Supervisor, strategy: :one_for_one},
      {Task.Supervisor, name: ExBashkit.TaskSupervisor}
    ]

    Supervisor.start_link(List.flatten(children),
      strategy: :one_for_one,
      name: ExBashkit.Supervisor
    )
  end

  # `config :ex_bashkit, :memory_budget_bytes`; nil keeps the default.
  defp memory_budget! do
    case Application.get_env(:ex_bashkit, :memory_budget_bytes) do
      bytes when is_nil(bytes) or (is_integer(bytes) and bytes > 0) ->
        bytes

      other ->
        raise ArgumentError,
              "config :ex_bashkit, :memory_budget_bytes must be a positive integer or nil, " <>
                "got: #{inspect(other)}"
    end
  end
end
