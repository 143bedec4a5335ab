# Installing packages in a session, from a registry on loopback serving
# real packages, into the session's in-memory files, in the VM and in a
# worker, without the host's package cache (every file downloaded) and
# with it warm (no download):
#
# * `npm ci` of a real lockfile (77 packages: express, js-yaml, semver,
#   uuid, mkdirp; made by real npm), from a registry that answers at once
#   and from one whose answers come 20 ms late (a registry across a
#   network), side by side with real npm from its own cache;
# * `pip install requests attrs six` (7 wheels, fetched by real pip).
#
#   mix run bench/packages.exs
#
# Median (min–max) of 5 runs, milliseconds.

Code.require_file("support.exs", __DIR__)

for file <- ~w(http_server.ex file_server.ex npm_registry.ex python_index.ex),
    do: Code.require_file("../test/support/#{file}", __DIR__)

defmodule PackagesBench do
  alias ExBashkit.Session
  alias ExBashkit.Test.{FileServer, NpmRegistry, PythonIndex}

  @runs 5

  def run do
    npm()
    pip()
  end

  defp pip do
    index = Path.join(System.tmp_dir!(), "ex_bashkit_bench_index")
    File.rm_rf!(index)
    File.mkdir_p!(index)
    {_server, port} = FileServer.start(index)
    url = "http://127.0.0.1:#{port}/"
    wheels = ~w(requests==2.32.3 urllib3==2.2.3 idna==3.10 certifi==2024.8.30
                charset-normalizer==3.4.0 attrs==24.2.0 six==1.16.0)
    PythonIndex.prepare!(wheels, index, url)
    cache = Path.join(System.tmp_dir!(), "ex_bashkit_bench_pip_cache")
    File.rm_rf!(cache)

    IO.puts("""

    ## `pip install requests attrs six` (7 wheels) from a loopback index, ms: median (min–max) of #{@runs}
    | installer | no cache | cache warm |
    |---|---|---|\
    """)

    for isolation <- [:none, :process] do
      install = fn cache ->
        session =
          Session.new(
            isolation: isolation,
            python: :cpython,
            allow_net: [url],
            block_private_ips: false,
            package_cache: cache,
            limits: [timeout_ms: 120_000]
          )

        {:ok, %{exit_code: 0}} =
          Session.exec(session, "pip install -q -i #{url} requests attrs six")
      end

      cold = times(fn -> install.(false) end)
      install.(cache)
      warm = times(fn -> install.(cache) end)
      row("the sandbox's pip (isolation: #{isolation})", cold, warm)
    end
  end

  defp npm do
    registry = NpmRegistry.prepare!(Path.expand("../test/fixtures/npm_install", __DIR__))
    cache = Path.join(System.tmp_dir!(), "ex_bashkit_bench_npm_cache")

    IO.puts("""

    ## `npm ci` of 77 packages from a loopback registry, ms: median (min–max) of #{@runs}
    | installer | no cache | cache warm |
    |---|---|---|\
    """)

    # The registry answers at once, then 20 ms late (as one across a
    # network would: the cache saves those waits).
    for latency <- [0, 20], isolation <- [:none, :process] do
      {server, port} = FileServer.start(Path.join(registry.dir, "registry"), latency_ms: latency)

      url = "http://127.0.0.1:#{port}/"
      File.rm_rf!(cache)
      cold = times(fn -> ours(registry, url, isolation, false) end)
      ours(registry, url, isolation, cache)
      warm = times(fn -> ours(registry, url, isolation, cache) end)
      where = if latency == 0, do: "", else: ", each answer #{latency} ms late"
      row("the sandbox's npm (isolation: #{isolation}#{where})", cold, warm)
      Process.unlink(server)
      Process.exit(server, :kill)
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

BenchSupport.publish(__ENV__.file, &PackagesBench.run/0)
