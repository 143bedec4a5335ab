defmodule ExBashkit.Test.NpmRegistry do
  @moduledoc false
  # What the `npm` tests and bench/npm_install.exs install from: a real
  # lockfile made by real npm for a fixture's package.json, real npm's own
  # `node_modules` for it, and each package's tarball as the registry
  # serves it (from npm's cache, checked against the lockfile), in a
  # directory a loopback server (`ExBashkit.Test.FileServer`) serves. Made
  # once and kept in the system's tmp, where a worker's user can read it.

  @doc "Prepares (once) the registry for the fixture directory `fixture`."
  # `npm` is nil where real npm is missing and the registry was made
  # already (the Debian 13 run, in a chroot without npm).
  @spec prepare!(Path.t()) :: %{
          npm: String.t() | nil,
          dir: Path.t(),
          lock: binary,
          manifest: binary
        }
  def prepare!(fixture) do
    npm = System.find_executable("npm")

    manifest = File.read!(Path.join(fixture, "package.json"))
    dir = Path.join([System.tmp_dir!(), "ex_bashkit_npm_install", "#{:erlang.phash2(manifest)}"])
    ready = Path.join(dir, ".ready")

    unless File.exists?(ready) do
      npm ||
        raise "real npm is needed to make the lockfile these tests install: apt-get install npm"

      File.rm_rf!(dir)
      real = Path.join(dir, "real")
      tarballs = Path.join(dir, "registry")
      File.mkdir_p!(real)
      File.mkdir_p!(tarballs)
      File.write!(Path.join(real, "package.json"), manifest)
      quiet = ~w(--ignore-scripts --no-audit --no-fund)
      npm!(npm, ["install", "--package-lock-only" | quiet], real)
      npm!(npm, ["ci" | quiet], real)
      fetch_tarballs!(npm, real, tarballs)
      File.write!(ready, "")
    end

    lock = Path.join([dir, "real", "package-lock.json"]) |> File.read!()
    %{npm: npm, dir: dir, lock: lock, manifest: manifest}
  end

  @doc "Runs real npm in `dir`, raising with its output when it fails."
  def npm!(npm, args, dir) do
    {out, status} = System.cmd(npm, args, cd: dir, stderr_to_stdout: true)
    if status != 0, do: raise("npm #{Enum.join(args, " ")} failed:\n#{out}")
    out
  end

  defp fetch_tarballs!(npm, real, tarballs) do
    for {path, entry} <- packages(File.read!(Path.join(real, "package-lock.json"))) do
      name = path |> String.split("node_modules/") |> List.last()
      spec = "#{name}@#{entry["version"]}"
      out = npm!(npm, ["pack", spec, "--pack-destination", tarballs], real)
      packed = Path.join(tarballs, out |> String.split("\n", trim: true) |> List.last())
      file = Path.join(tarballs, tarball_name(name, entry["version"]))
      File.rename!(packed, file)
      [algorithm, digest] = String.split(entry["integrity"], "-", parts: 2)
      ^digest = Base.encode64(:crypto.hash(String.to_atom(algorithm), File.read!(file)))
    end
  end

  defp packages(lock), do: lock |> decode!() |> Map.fetch!("packages") |> Map.delete("")

  @doc "The file name a registry serves a package's tarball under."
  def tarball_name(name, version),
    do: "#{name |> String.split("/") |> List.last()}-#{version}.tgz"

  @doc "Decodes JSON, raising when it is not."
  def decode!(text) do
    {:ok, term} = ExBashkit.JSON.decode(text)
    term
  end
end
