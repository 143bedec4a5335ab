defmodule ExBashkit.Worker.Tree do
  @moduledoc false
  # The processes of `isolation: :process`, under one `:rest_for_one`
  # supervisor, each after what it depends on:
  #
  #   1. `ExBashkit.Worker.Supervisor`: the owners of live workers, first,
  #      so that no other crash here ends them. An owner is temporary (a
  #      session cannot be restarted) and watches its own worker's Port: when
  #      a worker dies, for whatever reason, its owner answers its callers.
  #   2. `ExBashkit.Worker.Zygote`: the zygotes that fork workers. If its
  #      keeper dies, its Ports close, each zygote reads EOF and exits, and
  #      the workers it forked die with it (`PR_SET_PDEATHSIG`);
  #   3. `ExBashkit.Worker.Spares`: workers forked ahead of need, by those
  #      zygotes: restarted with the keeper, the spares it holds are gone
  #      at once instead of at the next take;
  #   4. `ExBashkit.Worker.Cgroups`: removes the cgroups of workers that are
  #      gone; depends on nothing, and sweeps as it starts.
  #
  # Owners come before the zygote, not after: a keeper's restart would end
  # every owner, also those whose workers live on (started by exec, or
  # forked by another executable's zygote).

  use Supervisor

  @doc "Starts the subtree; `:prepare` is handed to `ExBashkit.Worker.Spares`."
  def start_link(opts), do: Supervisor.start_link(__MODULE__, opts, name: __MODULE__)

  @impl true
  def init(opts) do
    children = [
      {DynamicSupervisor, name: ExBashkit.Worker.Supervisor, strategy: :one_for_one},
      ExBashkit.Worker.Zygote,
      {ExBashkit.Worker.Spares, prepare: Keyword.fetch!(opts, :prepare)},
      ExBashkit.Worker.Cgroups
    ]

    Supervisor.init(children, strategy: :rest_for_one)
  end
end
