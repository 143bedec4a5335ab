defmodule ExBashkit.Worker.Hardening do
  @moduledoc false
  # The kernel's layers around a worker process (native/ex_bashkit/crates/
  # jail applies them): how a worker is started for a session, what
  # it reports, and what the host offers. See guides/isolation.md, "What
  # isolation: :process defends against".
  #
  # Config: `:harden_workers` (default true; false only to measure),
  # `:worker_user` (`:nobody` by default, `{uid, gid}`, or `:keep`: who a
  # worker of a VM running as root becomes), `:require_layers` (layers
  # whose absence makes `new/1` fail).

  require Logger

  @layers [
    :no_new_privs,
    :unprivileged_user,
    :seccomp,
    :landlock,
    :network_namespace,
    :rlimits,
    :cgroup
  ]

  @nobody {65_534, 65_534}

  @doc "The layers a worker can report."
  @spec layers() :: [atom()]
  def layers, do: @layers

  @doc """
  How to start the worker of a session built from `native`: its command
  line, and the layers it must have (`:require_layers`). Raises
  `ArgumentError` naming a bad config value.
  """
  @spec plan(struct()) :: %{args: [String.t()], required: [atom()], harden: boolean()}
  def plan(_native) do
    harden = config!(:harden_workers, true, &is_boolean/1, "true or false")
    required = config!(:require_layers, [], &required?/1, "a list of #{inspect(@layers)}")

    user =
      case config!(:worker_user, :nobody, &user?/1, ":nobody, :keep or {uid, gid}") do
        :keep -> []
        :nobody -> user_arg(@nobody)
        ids -> user_arg(ids)
      end

    # No worker has a network, whatever its session's `:allow_net`: its
    # requests go through the host (ExBashkit.Worker.Egress).
    args = ["--harden=#{if harden, do: "on", else: "off"}" | user]
    %{args: args, required: required, harden: harden}
  end

  defp user?(user), do: user in [:nobody, :keep] or match?({u, g} when u > 0 and g >= 0, user)
  defp user_arg({uid, gid}), do: ["--user=#{uid}:#{gid}"]

  @doc """
  The layers in force from a worker's report (`[{layer, :ok | {:missing,
  reason}}]`) for a worker started by `plan`, or an error naming a required
  layer that is missing. Each missing layer is logged once per VM.
  """
  @spec check([{atom(), :ok | {:missing, String.t()}}], map()) ::
          {:ok, [atom()]} | {:error, String.t()}
  def check(_report, %{harden: false, required: [layer | _]}),
    do: {:error, required_message(layer, "harden_workers is false")}

  def check(_report, %{harden: false}) do
    log_once(
      :harden_workers,
      "worker processes run without any kernel layer: harden_workers is false"
    )

    {:ok, []}
  end

  def check(report, %{required: required}) do
    missing = for {layer, {:missing, reason}} <- report, do: {layer, reason}

    for {layer, reason} <- missing,
        do: log_once(layer, "worker processes run without the #{inspect(layer)} layer: #{reason}")

    case Enum.find(missing, fn {layer, _} -> layer in required end) do
      nil -> {:ok, for({layer, :ok} <- report, do: layer)}
      {layer, reason} -> {:error, required_message(layer, reason)}
    end
  end

  defp required_message(layer, reason),
    do:
      "the layer #{inspect(layer)} is required (config :ex_bashkit, :require_layers) " <>
        "but missing on this host: #{reason}"

  defp required?(layers), do: is_list(layers) and Enum.all?(layers, &(&1 in @layers))

  defp log_once(key, message) do
    key = {__MODULE__, :logged, key}

    unless :persistent_term.get(key, false) do
      :persistent_term.put(key, true)

      Logger.warning(
        "ExBashkit: #{message} (see guides/isolation.md; " <>
          "config :ex_bashkit, require_layers: [...] makes a missing layer an error)"
      )
    end
  end

  @doc "What this host offers worker processes (`ExBashkit.isolation_info/0`)."
  @spec host() :: map()
  def host do
    {seccomp, landlock_abi, user_namespaces, root} = ExBashkit.Native.host_isolation()

    %{
      seccomp: seccomp,
      landlock_abi: landlock_abi,
      user_namespaces: user_namespaces,
      network_namespaces: root or user_namespaces,
      # A root VM places each worker in a cgroup below its own.
      cgroup: root and ExBashkit.Native.worker_cgroup_bases() != [],
      root: root,
      worker_user: if(root, do: worker_user()),
      hardening: Application.get_env(:ex_bashkit, :harden_workers, true)
    }
  end

  defp worker_user do
    case Application.get_env(:ex_bashkit, :worker_user, :nobody) do
      :nobody -> @nobody
      other -> other
    end
  end

  defp config!(key, default, valid?, expected) do
    value = Application.get_env(:ex_bashkit, key, default)

    if valid?.(value),
      do: value,
      else:
        raise(
          ArgumentError,
          "config :ex_bashkit, #{inspect(key)} must be #{expected}, got: #{inspect(value)}"
        )
  end
end
