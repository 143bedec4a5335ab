# `npm ci` of a real lockfile (77 packages: express, js-yaml, semver, uuid,
# mkdirp; made by real npm) from a registry on loopback serving the real
# tarballs, into an in-memory session's files, in the VM and in a worker:
# without the host's package cache (every tarball downloaded) and with it
# warm (no request made), side by side with real npm from its own cache:
#
#   mix run bench/npm_install.exs
#
# Median (min–max) of 5 runs, milliseconds.

Code.require_file("support.exs", __DIR__)

for file <- ~w(http_server.ex file_server.ex npm_registry.ex),
    do: Code.require_file("../test/support/#{file}", __DIR__)

defmodule NpmInstallBench do
  alias ExBashkit.Session
  alias ExBashkit.Test.{FileServer, NpmRegistry}

  @runs 5

  def run do
    registry = NpmRegistry.prepare!(Path.expand("../test/fixtures/npm_install", __DIR__))
    {_server, port} = FileServer.start(Path.join(registry.dir, "registry"))
    url = "http://127.0.0.1:#{port}/"
    cache = Path.join(System.tmp_dir!(), "ex_bashkit_bench_npm_cache")
    File.rm_rf!(cache)

    IO.puts("""

    ## `npm ci` of 77 packages from a loopback registry, ms: median (min–max) of #{@runs}
    | installer | no cache | cache warm |
    |---|---|---|\
    """)

    for isolation <- [:none, :process] do
      cold = times(fn -> ours(registry, url, isolation, false) end)
      ours(registry, url, isolation, cache)
      warm = times(fn -> ours(registry, url, isolation, cache) end)
      row("the sandbox's npm (isolation: #{isolation})", cold, warm)
    end

    # Real npm asks for each package's registry document, which this
    # registry does not serve: its row is from its own cache (filled when
    # the lockfile was made), offline.
    warm = times(fn -> real(registry) end)
    version = String.trim(NpmRegistry.npm!(registry.npm, ["--version"], "."))
    IO.puts("| real npm #{version} (`--offline`, its own cache) | — | #{spread(warm)} |")
  end

  defp row(name, cold, warm) do
    IO.puts("| #{name} | #{spread(cold)} | #{spread(warm)} |")
  end

  defp spread(values) do
    "#{BenchSupport.median(values)} (#{Enum.min(values)}–#{Enum.max(values)})"
  end

  defp times(fun), do: for(_ <- 1..@runs, do: div(BenchSupport.elapsed_ns(fun), 1_000_000))

  defp ours(registry, url, isolation, cache) do
    session =
      Session.new(
        isolation: isolation,
        cwd: "/app",
        files: %{
          "/app/package.json" => registry.manifest,
          "/app/package-lock.json" => registry.lock
        },
        allow_net: [url],
        block_private_ips: false,
        package_cache: cache,
        limits: [timeout_ms: 120_000]
      )

    {:ok, %{exit_code: 0}} = Session.exec(session, "npm ci --registry=#{url}")
  end

  defp real(registry) do
    dir = Path.join(System.tmp_dir!(), "ex_bashkit_bench_real_npm")
    File.rm_rf!(dir)
    File.mkdir_p!(dir)
    File.write!(Path.join(dir, "package.json"), registry.manifest)
    File.write!(Path.join(dir, "package-lock.json"), registry.lock)
    args = ~w(ci --ignore-scripts --no-audit --no-fund --offline)
    NpmRegistry.npm!(registry.npm, args, dir)
  end
end

NpmInstallBench.run()
