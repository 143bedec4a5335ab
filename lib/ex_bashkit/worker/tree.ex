defmodule ExBashkit.Worker.Tree do
  @moduledoc false
  # The processes of `isolation: :process`, under one `:rest_for_one`
  # supervisor, in the order they depend on each other:
  #
  #   1. `ExBashkit.Worker.Zygote`: the zygotes that fork every worker. A
  #      zygote's workers die with it (`PR_SET_PDEATHSIG`), so when it goes,
  #      everything after it is restarted rather than left holding dead
  #      workers;
  #   2. `ExBashkit.Worker.Supervisor`: the owners of live workers;
  #   3. `ExBashkit.Worker.Spares`: workers started ahead of need, handed to
  #      new owners (an owner that finds it gone starts its own);
  #   4. `ExBashkit.Worker.Cgroups`: removes the cgroups of workers that are
  #      gone (owners only tell it).

  use Supervisor

  @doc "Starts the subtree; `:prepare` is handed to `ExBashkit.Worker.Spares`."
  def start_link(opts), do: Supervisor.start_link(__MODULE__, opts, name: __MODULE__)

  @impl true
  def init(opts) do
    children = [
      ExBashkit.Worker.Zygote,
      {DynamicSupervisor, name: ExBashkit.Worker.Supervisor, strategy: :one_for_one},
      {ExBashkit.Worker.Spares, prepare: Keyword.fetch!(opts, :prepare)},
      ExBashkit.Worker.Cgroups
    ]

    Supervisor.init(children, strategy: :rest_for_one)
  end
end
