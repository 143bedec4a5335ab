defmodule Mix.Tasks.Compile.ExBashkitNative do
  @moduledoc false
  # Installs the NIF library in priv/native/: a precompiled one downloaded
  # and checked against the package's checksum file when there is one for
  # this machine, else one built from the crate with cargo. Loaded by
  # mix.exs (it must exist before the project compiles); it works the same
  # when ex_bashkit is a path, git or Hex dependency, since @root is this
  # package's root either way.
  #
  # Settings (config :ex_bashkit, ... in the user's config, or the
  # environment):
  #   build_from_source: true  (EX_BASHKIT_BUILD=1)   always use cargo
  #   features: [:python, :cpython, :jq, :network, :mounts, :javascript, :git, :sqlite]  what cargo builds in
  #   precompiled_url: "https://…"  (EX_BASHKIT_PRECOMPILED_URL)
  #   target: "x86_64-unknown-linux-gnu"  (EX_BASHKIT_TARGET)
  #   $CARGO: the cargo to run (default: the one on PATH)
  use Mix.Task.Compiler

  alias ExBashkit.Precompiled

  @root Path.expand("../..", __DIR__)
  @crate Path.join(@root, "native/ex_bashkit")
  @dest Path.join(@root, "priv/native/libex_bashkit.so")
  @checksums Path.join(@root, "checksum-ex_bashkit.exs")
  # What the installed library is: the source digest and features it was
  # built from, or the precompiled artifact's checksum.
  @stamp @dest <> ".sources"
  # The worker process of `isolation: :process` sessions, built beside it,
  # and the launcher of workers forked by the zygote.
  @worker "ex_bashkit_worker"
  @launcher "ex_bashkit_worker_stub"
  @features [:python, :cpython, :jq, :network, :mounts, :javascript, :git, :sqlite]
  @default_url "https://github.com/ex-bashkit/ex_bashkit/releases/download/v"

  def checksum_file, do: @checksums
  def installed, do: @dest
  @doc false
  def installed_worker, do: worker_dest()

  @impl Mix.Task.Compiler
  def run(_args) do
    case plan() do
      {:installed, _stamp} -> {:noop, []}
      plan -> carry_out(plan)
    end
  end

  @impl Mix.Task.Compiler
  def clean do
    File.rm(@stamp)
    File.rm(@dest)
  end

  # What to do: nothing (the library in place is the one wanted), fetch a
  # precompiled artifact, or build from source.
  defp plan do
    features = features!()
    version = Mix.Project.config()[:version]
    artifact = Precompiled.artifact(version, Precompiled.target())
    checksum = Map.get(Precompiled.checksums(@checksums), artifact)

    wanted =
      cond do
        from_source?() ->
          {:source, features, "explicitly asked for"}

        features != @features ->
          {:source, features, "features #{inspect(features)} were chosen"}

        checksum == nil ->
          {:source, features, "no precompiled library for #{Precompiled.target()}"}

        true ->
          {:precompiled, artifact, checksum, url(version, artifact)}
      end

    stamp = stamp(wanted)

    if File.exists?(@dest) and File.read(@stamp) == {:ok, stamp},
      do: {:installed, stamp},
      else: wanted
  end

  defp stamp({:precompiled, _artifact, checksum, _url}), do: "precompiled " <> checksum
  defp stamp({:source, features, _why}), do: "source " <> sources_digest(features)

  defp carry_out({:precompiled, artifact, checksum, url} = wanted) do
    Mix.shell().info("Downloading the precompiled NIF library #{artifact}")

    with {:ok, bytes} <- Precompiled.download(url),
         :ok <- verify(bytes, checksum, url),
         {:ok, library, executables} <- Precompiled.unpack(bytes) do
      for {name, bytes} <- executables, do: install_executable(name, bytes)
      install_bytes(library, stamp(wanted))
    else
      {:refused, message} ->
        error(message)

      {:error, reason} ->
        if cargo() do
          Mix.shell().info(
            "Could not fetch #{url} (#{reason}); building the NIF library from source with cargo instead"
          )

          # Marked as the precompiled one, so a later compile does not try
          # the download again.
          build(features!(), stamp(wanted))
        else
          error(
            "Could not fetch the precompiled NIF library #{url} (#{reason}), and cargo is not " <>
              "on PATH to build it instead: fix the URL or the network (config :ex_bashkit, " <>
              "precompiled_url: …), or install Rust (https://rustup.rs)"
          )
        end
    end
  end

  defp carry_out({:source, features, why} = wanted) do
    Mix.shell().info("Building the NIF library from source (#{why})")
    build(features, stamp(wanted))
  end

  defp verify(bytes, checksum, url) do
    case Precompiled.sha256(bytes) do
      ^checksum ->
        :ok

      actual ->
        {:refused,
         "The NIF library downloaded from #{url} does not match the checksum this package " <>
           "lists (expected #{checksum}, got #{actual}); it was not installed. A file changed " <>
           "on the server or on the way: build from source with EX_BASHKIT_BUILD=1 if in doubt"}
    end
  end

  defp from_source? do
    System.get_env("EX_BASHKIT_BUILD") in ["1", "true"] or
      Application.get_env(:ex_bashkit, :build_from_source, false) == true
  end

  defp url(version, artifact) do
    base =
      System.get_env("EX_BASHKIT_PRECOMPILED_URL") ||
        Application.get_env(:ex_bashkit, :precompiled_url, @default_url <> version)

    String.trim_trailing(base, "/") <> "/" <> artifact
  end

  defp features! do
    case Application.get_env(:ex_bashkit, :features, @features) do
      features when is_list(features) ->
        case features -- @features do
          [] ->
            Enum.filter(@features, &(&1 in features))

          unknown ->
            Mix.raise(
              "config :ex_bashkit, features: unknown #{inspect(unknown)}; known: #{inspect(@features)}"
            )
        end

      other ->
        Mix.raise(
          "config :ex_bashkit, features: must be a list of #{inspect(@features)}, got: #{inspect(other)}"
        )
    end
  end

  # Staleness is decided by the sources' content, not their mtimes: a
  # checkout of older sources, or an edit in the second of the last build,
  # must rebuild all the same.
  defp sources_digest(features) do
    # The workspace: the NIF crate at its root, the core and the worker
    # under crates/.
    crates = [@crate | Path.wildcard(Path.join(@crate, "crates/*"))]

    sources =
      [Path.join(@crate, "Cargo.lock"), Path.join(@crate, "limits.table")] ++
        (Enum.flat_map(crates, fn dir ->
           Path.wildcard(Path.join(dir, "{Cargo.toml,build.rs}")) ++
             Path.wildcard(Path.join(dir, "src/**/*.{rs,js,json}"))
         end) -- Path.wildcard(Path.join(@crate, "crates/*/src/bin/bench_*.rs")))

    sources
    |> Enum.sort()
    |> Enum.reduce(:crypto.hash_init(:sha256), fn path, hash ->
      hash |> :crypto.hash_update(path) |> :crypto.hash_update(File.read!(path))
    end)
    |> :crypto.hash_update(inspect(features))
    |> :crypto.hash_final()
    |> Base.encode16(case: :lower)
  end

  # $CARGO names the cargo to run, as cargo itself does for build scripts;
  # else the one on PATH.
  defp cargo do
    case System.get_env("CARGO") do
      path when path in [nil, ""] -> System.find_executable("cargo")
      path -> if File.regular?(path), do: path
    end
  end

  @doc false
  # What `mix ex_bashkit.package` ships: the library with every feature,
  # built from this checkout.
  def build_from_source, do: build(@features, stamp({:source, @features, "packaging"}))

  # Builds the library with cargo and installs it; `stamp` records what it is.
  defp build(features, stamp) do
    cargo = cargo()

    if cargo == nil do
      error(
        "cargo not found on PATH: install Rust (https://rustup.rs) to build ex_bashkit, " <>
          "or use a precompiled library (see the README's \"Installing\")"
      )
    else
      # One cargo run for the NIF library and the worker's executables,
      # so the core they share is compiled once.
      args =
        ["build", "--release", "-p", "ex_bashkit", "-p", @worker] ++
          ["--lib", "--bin", @worker, "--bin", @launcher] ++
          ["--manifest-path", Path.join(@crate, "Cargo.toml")] ++
          if features == @features,
            do: [],
            else: ["--no-default-features", "--features", package_features(features)]

      Mix.shell().info(
        "Compiling the NIF workspace native/ex_bashkit (cargo #{Enum.join(args, " ")})"
      )

      case System.cmd(cargo, args, into: IO.stream(:stdio, :line), stderr_to_stdout: true) do
        {_, 0} -> install_built(stamp)
        {_, status} -> error("cargo build failed with exit status #{status}")
      end
    end
  end

  # `--features` names each package's own when cargo builds several.
  defp package_features(features) do
    for package <- ["ex_bashkit", @worker], feature <- features, into: [] do
      "#{package}/#{feature}"
    end
    |> Enum.join(",")
  end

  defp install_built(stamp) do
    target = System.get_env("CARGO_TARGET_DIR") || Path.join(@crate, "target")

    built =
      Enum.find(
        ["libex_bashkit.so", "libex_bashkit.dylib"],
        &File.exists?(Path.join([target, "release", &1]))
      )

    if built do
      # The executables of `isolation: :process` go first: the stamp,
      # written with the library, says all are in place.
      for name <- [@worker, @launcher],
          do: install_file(Path.join([target, "release", name]), executable_dest(name), 0o755)

      install_bytes(File.read!(Path.join([target, "release", built])), stamp)
    else
      error("cargo succeeded but no library was found under #{target}/release")
    end
  end

  # A running VM may have the old library loaded: overwriting its file in
  # place can crash it, while a rename leaves its inode alone.
  defp install_bytes(library, stamp) do
    replace(@dest, &File.write!(&1, library))
    File.write!(@stamp, stamp)
    {:ok, []}
  end

  # Running workers keep the old executable's inode, as the VM keeps the
  # old library's.
  defp install_file(source, dest, mode) do
    replace(dest, fn partial ->
      File.cp!(source, partial)
      File.chmod!(partial, mode)
    end)
  end

  defp install_executable(name, bytes) do
    replace(executable_dest(name), fn partial ->
      File.write!(partial, bytes)
      File.chmod!(partial, 0o755)
    end)
  end

  defp replace(dest, write) do
    File.mkdir_p!(Path.dirname(dest))
    # Named by the OS process too: two builds of one checkout at once.
    partial = "#{dest}.#{System.pid()}.#{System.unique_integer([:positive])}.partial"
    write.(partial)
    File.rename!(partial, dest)
  end

  defp worker_dest, do: executable_dest(@worker)
  defp executable_dest(name), do: Path.join(Path.dirname(@dest), name)

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
