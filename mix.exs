# The NIF compiler (a precompiled library, or cargo) must exist before the
# project compiles, so it is loaded here rather than from lib/.
Code.require_file("native/mix/precompiled.exs", __DIR__)
Code.require_file("native/mix/compiler.exs", __DIR__)

defmodule ExBashkit.MixProject do
  use Mix.Project

  # Above 0.1.7, the release this one is a drop-in replacement for.
  @version "0.2.0"
  @source_url "https://github.com/ex-bashkit/ex_bashkit"

  def project do
    [
      app: :ex_bashkit,
      version: @version,
      elixir: "~> 1.14",
      compilers: [:ex_bashkit_native | Mix.compilers()],
      start_permanent: Mix.env() == :prod,
      elixirc_paths: elixirc_paths(Mix.env()),
      deps: [],
      description:
        "Safe bash sandboxes (bashkit) and an Elixir peer-node code runner for AI agents",
      source_url: @source_url,
      docs: docs(),
      package: [
        licenses: ["MIT"],
        links: %{"GitHub" => @source_url, "Changelog" => "#{@source_url}/blob/main/CHANGELOG.md"},
        files: ~w(lib guides native/ex_bashkit/src native/ex_bashkit/crates
                  native/ex_bashkit/Cargo.toml native/ex_bashkit/Cargo.lock
                  native/ex_bashkit/limits.table native/mix priv/native/.gitkeep
                  checksum-ex_bashkit.exs mix.exs README.md LICENSE CHANGELOG.md)
      ]
    ]
  end

  # For ex_doc, when the docs are built (it is not a dependency here: no
  # package registry is needed to build or test this library).
  defp docs do
    [
      main: "readme",
      source_ref: "v#{@version}",
      extras:
        ["README.md", "guides/which_entry_point.md" | Path.wildcard("guides/*.md")]
        |> Enum.uniq()
        |> Kernel.++(["CHANGELOG.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]),
      groups_for_extras: [Guides: ~r{guides/}],
      groups_for_modules: [
        "Running code": [
          ExBashkit,
          ExBashkit.Session,
          ExBashkit.Code,
          ExBashkit.Result,
          ExBashkit.Error
        ],
        "Sessions as processes": [
          ExBashkit.Server,
          ExBashkit.Store,
          ExBashkit.Store.Disk,
          ExBashkit.Store.Memory
        ],
        Agents: [ExBashkit.Tool, ExBashkit.MCP, ExBashkit.MCP.Stdio, ExBashkit.Shell],
        Extending: [ExBashkit.Builtin, ExBashkit.VirtualFs, ExBashkit.Sandbox],
        "Elixir code": [ExBashkit.Peer],
        Compatibility: [ExBashkit.Pool],
        Observability: [ExBashkit.Telemetry]
      ]
    ]
  end

  def application do
    [mod: {ExBashkit.Application, []}, extra_applications: [:logger, :crypto]]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
