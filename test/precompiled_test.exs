defmodule ExBashkit.PrecompiledTest do
  # Precompiled NIF libraries (issue 17), end to end: `mix ex_bashkit.package`
  # packs the library built from this tree, a loopback HTTP server serves
  # it, and a fresh consumer project depending on a copy of this package
  # compiles with a `cargo` on its PATH that only records being called.
  use ExUnit.Case, async: false

  alias ExBashkit.Precompiled
  alias ExBashkit.Test.FileServer

  @moduletag :tmp_dir
  @moduletag timeout: 600_000

  setup %{tmp_dir: dir} do
    artifacts = Path.join(dir, "artifacts")
    package = Path.join(dir, "ex_bashkit")
    copy_package(package)

    # The task's messages (and cargo's) stay out of the test output.
    Mix.shell(Mix.Shell.Process)
    on_exit(fn -> Mix.shell(Mix.Shell.IO) end)

    Mix.Tasks.ExBashkit.Package.run([
      "--output",
      artifacts,
      "--checksum-file",
      Path.join(package, "checksum-ex_bashkit.exs")
    ])

    assert_received {:mix_shell, :info, ["Packed " <> _]}
    [name] = File.ls!(artifacts)
    {:ok, artifacts: artifacts, package: package, name: name, cargo_log: fake_cargo(dir)}
  end

  test "the package task packs the library and records its checksum", ctx do
    bytes = File.read!(Path.join(ctx.artifacts, ctx.name))
    version = Mix.Project.config()[:version]
    assert ctx.name == Precompiled.artifact(version, Precompiled.target())

    assert ctx.name =~
             ~r/^libex_bashkit-v#{version}-nif-2\.16-[a-z0-9_]+-[a-z0-9_-]+\.so\.tar\.gz$/

    assert Precompiled.checksums(Path.join(ctx.package, "checksum-ex_bashkit.exs")) == %{
             ctx.name => Precompiled.sha256(bytes)
           }

    assert {:ok, library, executables} = Precompiled.unpack(bytes)
    assert library == File.read!(Path.expand("../priv/native/libex_bashkit.so", __DIR__))

    for name <- ~w(ex_bashkit_worker ex_bashkit_worker_stub),
        do:
          assert(executables[name] == File.read!(Path.expand("../priv/native/#{name}", __DIR__)))
  end

  test "a fresh project installs the precompiled library without running cargo", ctx do
    {_server, port} = FileServer.start(ctx.artifacts)
    consumer = consumer(ctx.tmp_dir, "http://127.0.0.1:#{port}")

    {output, status} = mix(consumer, ctx, ["compile"])
    assert status == 0, output
    assert output =~ "Downloading the precompiled NIF library #{ctx.name}"
    assert_received {:file_server, name} when name == ctx.name
    refute File.exists?(ctx.cargo_log)

    {output, 0} =
      mix(consumer, ctx, [
        "run",
        "-e",
        ~S|{:ok, r} = ExBashkit.exec("echo from a download"); IO.write(r.stdout)| <>
          ~S|; {:ok, r} = ExBashkit.exec("echo from its worker", isolation: :process)| <>
          ~S|; IO.write(r.stdout)|
      ])

    assert output =~ "from a download\nfrom its worker\n"

    # A second compile finds the library in place: nothing is fetched.
    {_, 0} = mix(consumer, ctx, ["compile"])
    refute_received {:file_server, _}
  end

  test "a tampered artifact is refused and never installed", ctx do
    bytes = File.read!(Path.join(ctx.artifacts, ctx.name))
    <<first, rest::binary>> = bytes
    tampered = Path.join(ctx.tmp_dir, "tampered")
    File.mkdir_p!(tampered)
    File.write!(Path.join(tampered, ctx.name), <<Bitwise.bxor(first, 1), rest::binary>>)
    {_server, port} = FileServer.start(tampered)
    consumer = consumer(ctx.tmp_dir, "http://127.0.0.1:#{port}")

    {output, status} = mix(consumer, ctx, ["compile"])
    assert status != 0
    assert output =~ "does not match the checksum this package lists"
    refute File.exists?(Path.join(ctx.package, "priv/native/libex_bashkit.so"))
    refute File.exists?(ctx.cargo_log)
  end

  test "an unreachable URL falls back to cargo, saying so", ctx do
    consumer = consumer(ctx.tmp_dir, "http://127.0.0.1:1")

    {output, status} = mix(consumer, ctx, ["compile"])
    assert output =~ "Could not fetch http://127.0.0.1:1/#{ctx.name}"
    assert output =~ "building the NIF library from source with cargo instead"
    assert File.read!(ctx.cargo_log) =~ "build --release -p ex_bashkit -p ex_bashkit_worker --lib"
    # The stand-in cargo fails, so the compile does too.
    assert status != 0
  end

  test "with neither a download nor cargo, the message says what to install", ctx do
    File.rm!(Path.join([ctx.tmp_dir, "bin", "cargo"]))
    consumer = consumer(ctx.tmp_dir, "http://127.0.0.1:1")

    {output, status} = mix(consumer, ctx, ["compile"])
    assert status != 0
    assert output =~ "Could not fetch the precompiled NIF library http://127.0.0.1:1/#{ctx.name}"
    assert output =~ "cargo is not on PATH"
    assert output =~ "install Rust (https://rustup.rs)"
  end

  test "features other than all build from source", ctx do
    consumer = consumer(ctx.tmp_dir, "http://127.0.0.1:1", features: [:jq])

    {output, _status} = mix(consumer, ctx, ["compile"])
    assert output =~ "Building the NIF library from source (features [:jq] were chosen)"
    # Each package's own feature: the NIF's and the worker's are built together.
    assert File.read!(ctx.cargo_log) =~
             "--no-default-features --features ex_bashkit/jq,ex_bashkit_worker/jq"
  end

  # This package as Hex would ship it (its `files`), without a library.
  defp copy_package(to) do
    root = Path.expand("..", __DIR__)

    for entry <- Mix.Project.config()[:package][:files] do
      source = Path.join(root, entry)
      target = Path.join(to, entry)
      File.mkdir_p!(Path.dirname(target))
      File.cp_r!(source, target)
    end
  end

  # A `cargo` that records its arguments and fails.
  defp fake_cargo(dir) do
    bin = Path.join(dir, "bin")
    log = Path.join(dir, "cargo.log")
    File.mkdir_p!(bin)
    File.write!(Path.join(bin, "cargo"), "#!/bin/sh\necho \"$@\" >> #{log}\nexit 1\n")
    File.chmod!(Path.join(bin, "cargo"), 0o755)
    log
  end

  defp consumer(dir, url, config \\ []) do
    project = Path.join(dir, "consumer")
    File.mkdir_p!(Path.join(project, "config"))

    File.write!(Path.join(project, "mix.exs"), """
    defmodule Consumer.MixProject do
      use Mix.Project
      def project, do: [app: :consumer, version: "0.1.0", deps: [{:ex_bashkit, path: "../ex_bashkit"}]]
    end
    """)

    File.write!(Path.join(project, "config/config.exs"), """
    import Config
    config :ex_bashkit, #{inspect([precompiled_url: url] ++ config)}
    """)

    project
  end

  # Runs mix in `project` with the recording cargo as $CARGO (or a path
  # with nothing there, once a test removed it) and the real one off PATH.
  defp mix(project, ctx, args) do
    path =
      [Path.join(ctx.tmp_dir, "bin") | System.get_env("PATH") |> String.split(":")]
      |> Enum.reject(&String.ends_with?(&1, ".cargo/bin"))
      |> Enum.join(":")

    cargo = Path.join([ctx.tmp_dir, "bin", "cargo"])

    env = [
      {"PATH", path},
      {"CARGO", if(File.exists?(cargo), do: cargo, else: Path.join(ctx.tmp_dir, "no-cargo"))},
      {"MIX_ENV", "dev"},
      {"EX_BASHKIT_BUILD", nil},
      {"CARGO_TARGET_DIR", nil}
    ]

    System.cmd("mix", args, cd: project, env: env, stderr_to_stdout: true)
  end
end
