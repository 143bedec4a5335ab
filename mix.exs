defmodule Mix.Tasks.Compile.ExBashkitNative do
  @moduledoc false
  # Builds the Rust NIF crate with cargo and copies the library into
  # priv/native/. Defined here (not in lib/) because it must exist before the
  # project compiles, and it works unchanged when ex_bashkit is a path or git
  # dependency: __DIR__ is this package's root either way.
  use Mix.Task.Compiler

  @root __DIR__
  @crate Path.join(@root, "native/ex_bashkit")
  @dest Path.join(@root, "priv/native/libex_bashkit.so")
  # The digest of the sources the installed library was built from.
  @stamp @dest <> ".sources"

  @impl Mix.Task.Compiler
  def run(_args) do
    if stale?() do
      build()
    else
      {:noop, []}
    end
  end

  @impl Mix.Task.Compiler
  def clean do
    File.rm(@stamp)
    File.rm(@dest)
  end

  # Staleness is decided by the sources' content, not their mtimes: a
  # checkout of older sources, or an edit in the second of the last build,
  # must rebuild all the same.
  defp stale? do
    not File.exists?(@dest) or File.read(@stamp) != {:ok, sources_digest()}
  end

  # The library's sources only: src/bin/ holds the benchmark binary.
  defp sources_digest do
    sources =
      [Path.join(@crate, "Cargo.toml"), Path.join(@crate, "Cargo.lock")] ++
        (Path.wildcard(Path.join(@crate, "src/**/*.rs")) --
           Path.wildcard(Path.join(@crate, "src/bin/**/*.rs")))

    sources
    |> Enum.sort()
    |> Enum.reduce(:crypto.hash_init(:sha256), fn path, hash ->
      hash |> :crypto.hash_update(path) |> :crypto.hash_update(File.read!(path))
    end)
    |> :crypto.hash_final()
    |> Base.encode16(case: :lower)
  end

  defp build do
    cargo = System.find_executable("cargo")

    if cargo == nil do
      error("cargo not found on PATH: install Rust (https://rustup.rs) to build ex_bashkit")
    else
      Mix.shell().info("Compiling NIF crate native/ex_bashkit (cargo build --release)")
      args = ["build", "--release", "--lib", "--manifest-path", Path.join(@crate, "Cargo.toml")]

      case System.cmd(cargo, args, into: IO.stream(:stdio, :line), stderr_to_stdout: true) do
        {_, 0} -> install()
        {_, status} -> error("cargo build failed with exit status #{status}")
      end
    end
  end

  defp install do
    target = System.get_env("CARGO_TARGET_DIR") || Path.join(@crate, "target")

    built =
      Enum.find(
        ["libex_bashkit.so", "libex_bashkit.dylib"],
        &File.exists?(Path.join([target, "release", &1]))
      )

    if built do
      # A running VM may have the old library loaded: overwriting its file
      # in place can crash it, while a rename leaves its inode alone.
      File.mkdir_p!(Path.dirname(@dest))
      partial = "#{@dest}.#{System.unique_integer([:positive])}.partial"
      File.cp!(Path.join([target, "release", built]), partial)
      File.rename!(partial, @dest)
      File.write!(@stamp, sources_digest())
      {:ok, []}
    else
      error("cargo succeeded but no library was found under #{target}/release")
    end
  end

  defp error(message) do
    Mix.shell().error(message)

    diagnostic = %Mix.Task.Compiler.Diagnostic{
      compiler_name: "ex_bashkit_native",
      file: Path.join(@crate, "Cargo.toml"),
      message: message,
      position: nil,
      severity: :error
    }

    {:error, [diagnostic]}
  end
end

defmodule ExBashkit.MixProject do
  use Mix.Project

  @version "0.1.0"

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
      package: [
        files:
          ~w(lib guides native/ex_bashkit/src native/ex_bashkit/Cargo.* priv/native/.gitkeep mix.exs README.md)
      ]
    ]
  end

  def application do
    [mod: {ExBashkit.Application, []}, extra_applications: [:logger, :crypto]]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
