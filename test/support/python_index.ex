defmodule ExBashkit.Test.PythonIndex do
  @moduledoc false
  # What the `pip` tests install from: real wheels fetched by real pip at
  # setup (pure-Python ones, for any platform), and for each project the
  # document an index's JSON API answers (`pypi/<name>/json`), made from
  # the wheel's own METADATA and pointing at `base`. Wheels are kept in
  # the system's tmp between runs.

  @doc """
  Prepares (once) the wheels of `requirements` and writes the index's
  documents under `dir`, for a server at `base` (`http://127.0.0.1:port/`).
  Returns `[{project, version, wheel file name}]`.
  """
  def prepare!(requirements, dir, base) do
    wheels = wheels!(requirements)
    File.mkdir_p!(Path.join(dir, "files"))

    for wheel <- Path.wildcard(Path.join(wheels, "*.whl")) do
      file = Path.basename(wheel)
      File.cp!(wheel, Path.join([dir, "files", file]))
      metadata = metadata(wheel)
      name = String.downcase(String.replace(metadata["Name"], ~r/[-_.]+/, "-"))
      version = metadata["Version"]
      bytes = File.read!(wheel)

      release = %{
        "filename" => file,
        "url" => "#{base}files/#{file}",
        "digests" => %{"sha256" => Base.encode16(:crypto.hash(:sha256, bytes), case: :lower)},
        "requires_python" => metadata["Requires-Python"],
        "packagetype" => "bdist_wheel",
        "yanked" => false
      }

      document = %{
        "info" => %{
          "name" => metadata["Name"],
          "version" => version,
          "requires_dist" => metadata[:requires]
        },
        "releases" => %{version => [release]}
      }

      write!(dir, name, document)
      {name, version, file}
    end
  end

  @doc "Writes the index's document for project `name`."
  def write!(dir, name, document) do
    path = Path.join([dir, "pypi", name, "json"])
    File.mkdir_p!(Path.dirname(path))
    File.write!(path, ExBashkit.JSON.encode!(document))
  end

  defp wheels!(requirements) do
    dir = Path.join([System.tmp_dir!(), "ex_bashkit_wheels", "#{:erlang.phash2(requirements)}"])
    ready = Path.join(dir, ".ready")

    unless File.exists?(ready) do
      File.rm_rf!(dir)
      File.mkdir_p!(dir)

      args =
        ~w(-m pip download --no-deps --only-binary=:all: --implementation py --abi none) ++
          ~w(--platform any --python-version 3.14 -d) ++ [dir | requirements]

      {out, status} = System.cmd(python_with_pip!(dir), args, stderr_to_stdout: true)
      if status != 0, do: raise("real pip could not fetch the test wheels:\n#{out}")
      File.write!(ready, "")
    end

    dir
  end

  # A Python that has pip: the system's, or a venv made beside the wheels
  # (Debian's python3 has pip only in a venv).
  defp python_with_pip!(dir) do
    case System.cmd("python3", ~w(-m pip --version), stderr_to_stdout: true) do
      {_, 0} ->
        "python3"

      _ ->
        venv = Path.join(Path.dirname(dir), "venv")
        {out, status} = System.cmd("python3", ["-m", "venv", venv], stderr_to_stdout: true)
        if status != 0, do: raise("real pip is needed to fetch the test wheels:\n#{out}")
        Path.join([venv, "bin", "python3"])
    end
  end

  # The wheel's METADATA headers, with its Requires-Dist lines as :requires.
  defp metadata(wheel) do
    {:ok, files} = :zip.extract(String.to_charlist(wheel), [:memory])

    {_, text} =
      Enum.find(files, fn {name, _} ->
        String.ends_with?(to_string(name), ".dist-info/METADATA")
      end)

    lines = text |> String.split("\n\n", parts: 2) |> hd() |> String.split("\n")

    headers =
      for line <- lines, [k, v] = String.split(line, ": ", parts: 2), into: %{}, do: {k, v}

    requires =
      for line <- lines,
          String.starts_with?(line, "Requires-Dist: "),
          do: String.replace_prefix(line, "Requires-Dist: ", "")

    Map.put(headers, :requires, requires)
  end
end
