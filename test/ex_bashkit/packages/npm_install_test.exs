defmodule ExBashkit.NpmInstallTest do
  # The sandbox's `npm ci` and `npm install` against a registry on
  # loopback that serves real tarballs: a real lockfile of 77 packages made
  # by real npm at setup (its tarballs fetched then, not in the tests),
  # installed into a host directory the session mounts, and compared file
  # by file with what real npm installs from the same lockfile.
  use ExBashkit.Case, async: true

  alias ExBashkit.Session
  alias ExBashkit.Test.{FileServer, NpmRegistry}

  @moduletag timeout: 600_000

  @fixture Path.expand("../../fixtures/npm_install", __DIR__)

  setup_all do
    NpmRegistry.prepare!(@fixture)
  end

  defp npm!(npm, args, dir), do: NpmRegistry.npm!(npm, args, dir)
  defp tarball_name(name, version), do: NpmRegistry.tarball_name(name, version)

  # A project directory holding the fixture's package.json and lockfile.
  defp project(ctx, name) do
    dir = host_dir!("npm_" <> name)
    File.write!(Path.join(dir, "package.json"), ctx.manifest)
    File.write!(Path.join(dir, "package-lock.json"), ctx.lock)
    worker_may_write!(dir)
  end

  defp session(dir, isolation, port, opts) do
    Session.new(
      [
        isolation: isolation,
        mounts: [{"/app", dir, :read_write}],
        cwd: "/app",
        allow_net: ["http://127.0.0.1:#{port}/"],
        block_private_ips: false,
        env: %{"npm_config_registry" => "http://127.0.0.1:#{port}/"},
        limits: [timeout_ms: 120_000]
      ] ++ opts
    )
  end

  # Every file and link under `dir`/node_modules: its bytes (or target)
  # and its mode.
  defp tree(dir) do
    root = Path.join(dir, "node_modules")

    Path.wildcard(Path.join(root, "**"), match_dot: true)
    |> Enum.flat_map(fn path ->
      {:ok, stat} = File.lstat(path)
      relative = Path.relative_to(path, root)

      case stat.type do
        :regular -> [{relative, File.read!(path), Bitwise.band(stat.mode, 0o7777)}]
        :symlink -> [{relative, {:link, elem(:file.read_link(path), 1)}}]
        _ -> []
      end
    end)
    |> Enum.sort()
  end

  defp differences(ours, real) do
    a = Map.new(ours, &{elem(&1, 0), &1})
    b = Map.new(real, &{elem(&1, 0), &1})

    (Map.keys(a) ++ Map.keys(b))
    |> Enum.uniq()
    |> Enum.reject(&(a[&1] == b[&1]))
    |> Enum.take(10)
  end

  @moduletag :tmp_dir

  for isolation <- [:none, :process] do
    @isolation isolation

    test "npm ci installs node_modules as real npm does (isolation: #{isolation}); the " <>
           "cached second install downloads nothing",
         ctx do
      {_server, port} = FileServer.start(Path.join(ctx.dir, "registry"))
      cache = Path.join(ctx.tmp_dir, "cache")
      first = project(ctx, "first")
      session = session(first, @isolation, port, package_cache: cache)
      {:ok, result} = Session.exec(session, "npm ci")
      assert result.exit_code == 0, result.stderr
      assert result.stdout =~ ~r/^\nadded 77 packages in \d+m?s\n$/
      downloads = FileServer.requests()
      assert length(downloads) == 77

      real = tree(Path.join(ctx.dir, "real"))
      assert length(real) > 700
      assert differences(tree(first), real) == []

      # The same lockfile again, from another session: from the cache.
      second = project(ctx, "second")
      again = session(second, @isolation, port, package_cache: cache)
      {:ok, result} = Session.exec(again, "npm ci && readlink node_modules/.bin/semver")
      assert result.exit_code == 0, result.stderr
      assert result.stdout =~ ~r/added 77 packages in \d+m?s\n..\/semver\/bin\/semver.js\n$/
      assert FileServer.requests() == []
      assert differences(tree(second), real) == []
    end
  end

  test "a tampered tarball is refused by its integrity, and nothing of it is installed", ctx do
    registry = Path.join(ctx.tmp_dir, "registry")
    File.cp_r!(Path.join(ctx.dir, "registry"), registry)
    tarball = Path.join(registry, "semver-7.6.3.tgz")
    File.write!(tarball, File.read!(tarball) <> "tampered")
    {_server, port} = FileServer.start(registry)

    for isolation <- [:none, :process] do
      dir = project(ctx, "tampered_#{isolation}")
      session = session(dir, isolation, port, package_cache: false)
      {:ok, result} = Session.exec(session, "npm ci")
      assert result.exit_code == 1
      assert result.stderr =~ "semver@7.6.3"
      assert result.stderr =~ "integrity check failed"
      refute File.exists?(Path.join(dir, "node_modules/semver/package.json"))
    end
  end

  test "a registry the session's :allow_net does not allow is refused before any request",
       ctx do
    {_server, port} = FileServer.start(Path.join(ctx.dir, "registry"))

    for isolation <- [:none, :process], allow_net <- [[], ["http://127.0.0.1:1/"]] do
      dir = project(ctx, "refused_#{isolation}")

      session =
        Session.new(
          isolation: isolation,
          mounts: [{"/app", dir, :read_write}],
          cwd: "/app",
          allow_net: allow_net,
          block_private_ips: false,
          package_cache: false
        )

      {:ok, result} = Session.exec(session, "npm ci --registry=http://127.0.0.1:#{port}/")
      assert result.exit_code == 1
      assert result.stderr =~ "is not allowed"
      assert FileServer.requests() == []
    end
  end

  test "npm install of a package by name writes package.json and a lockfile real npm " <>
         "accepts, and node loads it",
       ctx do
    registry = Path.join(ctx.tmp_dir, "registry")
    File.mkdir_p!(registry)
    {_server, port} = FileServer.start(registry)
    # A registry document for js-yaml and argparse, as a registry answers
    # it, pointing at the tarballs served here.
    for {name, version} <- [{"js-yaml", "4.1.0"}, {"argparse", "2.0.1"}] do
      file = tarball_name(name, version)
      File.cp!(Path.join([ctx.dir, "registry", file]), Path.join(registry, file))
      {:ok, manifest} = tarball_manifest(Path.join(registry, file))
      tgz = File.read!(Path.join(registry, file))

      dist = %{
        "tarball" => "http://127.0.0.1:#{port}/#{name}/-/#{file}",
        "integrity" => "sha512-" <> Base.encode64(:crypto.hash(:sha512, tgz))
      }

      document = %{
        "name" => name,
        "dist-tags" => %{"latest" => version},
        "versions" => %{version => Map.put(manifest, "dist", dist)}
      }

      File.write!(Path.join(registry, name), ExBashkit.JSON.encode!(document))
    end

    dir = host_dir!("npm_fresh")

    File.write!(
      Path.join(dir, "package.json"),
      ~s({\n  "name": "fresh",\n  "version": "0.1.0"\n}\n)
    )

    worker_may_write!(dir)

    session = session(dir, :process, port, javascript: true, package_cache: false)
    {:ok, result} = Session.exec(session, "npm install js-yaml")
    assert result.exit_code == 0, result.stderr
    assert result.stdout =~ "added 2 packages"

    assert NpmRegistry.decode!(File.read!(Path.join(dir, "package.json")))["dependencies"] ==
             %{"js-yaml" => "^4.1.0"}

    # Real npm reads the tree and the lockfile back without a complaint
    # (where it is installed: not in the Debian 13 chroot).
    if ctx.npm do
      out = npm!(ctx.npm, ~w(ls --all), dir)
      assert out =~ "js-yaml@4.1.0"
      assert out =~ "argparse@2.0.1"
    end

    {:ok, result} =
      Session.exec(session, ~S|node -e "console.log(require('js-yaml').dump({a: [1, 2]}))"|)

    assert result.stdout == "a:\n  - 1\n  - 2\n\n"

    {:ok, result} = Session.exec(session, "npm install")
    assert result.stdout =~ "up to date"
  end

  test "a tarball that inflates past the session's files, and a lockfile path that climbs " <>
         "out, are refused, a hundred times over, leaving nothing behind",
       ctx do
    registry = Path.join(ctx.tmp_dir, "registry")
    File.mkdir_p!(registry)
    tgz = Path.join(registry, "bomb-1.0.0.tgz")
    {:ok, tar} = :erl_tar.open(String.to_charlist(tgz), [:write, :compressed])
    :ok = :erl_tar.add(tar, {~c"package/package.json", ~s({"name":"bomb"})}, [])
    :ok = :erl_tar.add(tar, {~c"package/zeros", :binary.copy(<<0>>, 64_000_000)}, [])
    :ok = :erl_tar.close(tar)
    integrity = "sha512-" <> Base.encode64(:crypto.hash(:sha512, File.read!(tgz)))
    {_server, port} = FileServer.start(registry)

    lock = fn path ->
      ExBashkit.JSON.encode!(%{
        "name" => "app",
        "lockfileVersion" => 3,
        "requires" => true,
        "packages" => %{
          "" => %{"name" => "app", "dependencies" => %{"bomb" => "1.0.0"}},
          path => %{"version" => "1.0.0", "integrity" => integrity}
        }
      })
    end

    for isolation <- [:none, :process] do
      session =
        Session.new(
          isolation: isolation,
          cwd: "/app",
          files: %{
            "/app/package.json" => ~s({"name": "app", "dependencies": {"bomb": "1.0.0"}}),
            "/app/package-lock.json" => lock.("node_modules/bomb"),
            "/escape/package.json" => ~s({"name": "app", "dependencies": {"bomb": "1.0.0"}}),
            "/escape/package-lock.json" => lock.("node_modules/../../etc/bomb")
          },
          allow_net: ["http://127.0.0.1:#{port}/"],
          block_private_ips: false,
          env: %{"npm_config_registry" => "http://127.0.0.1:#{port}/"},
          package_cache: false,
          limits: [max_fs_bytes: 5_000_000, timeout_ms: 60_000]
        )

      for _ <- 1..100 do
        {:ok, result} = Session.exec(session, "npm ci")
        assert result.exit_code == 1
        assert result.stderr =~ "node_modules/bomb: unpacks to more than 5000000 bytes"
      end

      {:ok, result} =
        Session.exec(
          session,
          "cd /escape && npm ci; ls -A /app /escape; test -e /etc/bomb && echo escaped"
        )

      assert result.stderr =~ "not a path inside node_modules"

      assert result.stdout ==
               "/app:\npackage-lock.json\npackage.json\n\n/escape:\npackage-lock.json\npackage.json\n"
    end
  end

  defp tarball_manifest(tgz) do
    {:ok, files} = :erl_tar.extract(tgz, [:compressed, :memory])

    Enum.find_value(files, {:error, :none}, fn
      {~c"package/package.json", json} -> {:ok, NpmRegistry.decode!(json)}
      _ -> nil
    end)
  end
end
