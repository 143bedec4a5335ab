defmodule Mix.Tasks.ExBashkit.Package do
  @shortdoc "Builds and packs the NIF library for this target, and records its checksum"
  @moduledoc """
  Builds the NIF library for this machine's target with every feature,
  packs it (with the worker executable of `isolation: :process`) as a
  precompiled artifact, and writes its SHA-256 into the
  checksum file (`checksum-ex_bashkit.exs`). A release runs it once per
  target, uploads the artifacts where `:precompiled_url` points, and
  publishes the package with the updated checksum file:

      $ mix ex_bashkit.package
      Packed _build/precompiled/libex_bashkit-v0.1.0-nif-2.16-x86_64-unknown-linux-gnu.so.tar.gz
      (sha256:…), recorded in checksum-ex_bashkit.exs

  ## Flags

    * `--output DIR` — where the artifact goes (default `_build/precompiled`).
    * `--checksum-file PATH` — the checksum file to update (default the
      package's own).
    * `--no-build` — packs the library already installed in
      `priv/native/` instead of building it first.
  """

  use Mix.Task

  alias ExBashkit.Precompiled
  alias Mix.Tasks.Compile.ExBashkitNative, as: Compiler

  @switches [output: :string, checksum_file: :string, build: :boolean]

  @impl Mix.Task
  def run(argv) do
    {opts, rest} = OptionParser.parse!(argv, strict: @switches)

    if rest != [],
      do: Mix.raise("unexpected arguments #{inspect(rest)}; see `mix help ex_bashkit.package`")

    if Keyword.get(opts, :build, true) do
      with {:error, _} <- Compiler.build_from_source(),
           do: Mix.raise("the NIF library did not build")
    end

    unless File.exists?(Compiler.installed()) do
      Mix.raise("no NIF library at #{Compiler.installed()}: run without --no-build")
    end

    name = Precompiled.artifact(Mix.Project.config()[:version], Precompiled.target())
    bytes = Precompiled.pack(Compiler.installed(), Compiler.installed_worker())
    output = Keyword.get(opts, :output, Path.join(Mix.Project.build_path(), "../precompiled"))
    path = Path.join(Path.expand(output), name)
    File.mkdir_p!(Path.dirname(path))
    File.write!(path, bytes)

    checksum_file = Keyword.get(opts, :checksum_file, Compiler.checksum_file())
    checksum = Precompiled.sha256(bytes)
    Precompiled.write_checksums(checksum_file, %{name => checksum})
    Mix.shell().info("Packed #{path} (#{checksum}), recorded in #{checksum_file}")
  end
end
