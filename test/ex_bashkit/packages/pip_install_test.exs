defmodule ExBashkit.PipInstallTest do
  # The sandbox's `pip install` against an index on loopback serving real
  # wheels (fetched by real pip at setup), into the CPython guest's
  # site-packages, in the VM and in a worker.
  use ExBashkit.Case, async: true

  alias ExBashkit.Session
  alias ExBashkit.Test.{FileServer, PythonIndex}

  @moduletag timeout: 300_000
  @moduletag :tmp_dir

  # requests and what it needs, and two more everyday packages.
  @wheels ~w(requests==2.32.3 urllib3==2.2.3 idna==3.10 certifi==2024.8.30
             charset-normalizer==3.4.0 attrs==24.2.0 six==1.16.0)

  setup ctx do
    index = Path.join(ctx.tmp_dir, "index")
    File.mkdir_p!(index)
    {_server, port} = FileServer.start(index)
    base = "http://127.0.0.1:#{port}/"
    wheels = PythonIndex.prepare!(@wheels, index, base)

    # PyYAML as the index lists it: compiled wheels and a source archive.
    PythonIndex.write!(index, "pyyaml", %{
      "info" => %{"name" => "PyYAML", "version" => "6.0.2", "requires_dist" => []},
      "releases" => %{
        "6.0.2" => [
          %{
            "filename" => "PyYAML-6.0.2-cp314-cp314-manylinux_2_17_x86_64.whl",
            "yanked" => false
          },
          %{"filename" => "pyyaml-6.0.2.tar.gz", "yanked" => false}
        ]
      }
    })

    %{index: index, base: base, port: port, wheels: wheels}
  end

  defp session(ctx, isolation, opts) do
    Session.new(
      [
        isolation: isolation,
        python: :cpython,
        allow_net: [ctx.base],
        block_private_ips: false,
        env: %{"PIP_INDEX_URL" => ctx.base <> "simple"},
        limits: [timeout_ms: 120_000]
      ] ++ opts
    )
  end

  for isolation <- [:none, :process] do
    @isolation isolation

    test "pip install resolves requests' dependencies and each package imports " <>
           "(isolation: #{isolation}); the second install downloads no wheel",
         ctx do
      cache = Path.join(ctx.tmp_dir, "cache")
      session = session(ctx, @isolation, package_cache: cache)
      {:ok, result} = Session.exec(session, "pip install requests attrs six")
      assert result.exit_code == 0, result.stderr
      assert result.stdout =~ "Successfully installed requests-2.32.3"

      for {name, version, _} <- ctx.wheels do
        assert result.stdout =~ "#{version}"
        assert result.stdout =~ ~r/#{name}/i
      end

      assert Enum.count(FileServer.requests(), &String.starts_with?(&1, "files/")) == 7

      program = """
      import attrs, six, idna, certifi, urllib3, charset_normalizer
      @attrs.define
      class Point:
          x: int
      print(Point(1), six.PY3, idna.encode("ünicode.example").decode(), urllib3.__version__,
            charset_normalizer.from_bytes("héllo wörld".encode("utf-8")).best().encoding)
      """

      expected = "Point(x=1) True xn--nicode-2ya.example 2.2.3 utf_8\n"
      {:ok, result} = Session.exec(session, "python3 -c '#{program}'")
      assert result.stdout == expected, result.stderr

      # A program in a file, and one on stdin, import them too; an error
      # in the program is reported as Python reports it.
      {:ok, _} = Session.exec(session, "cat > /tmp/p.py <<'EOF'\n#{program}EOF")
      {:ok, result} = Session.exec(session, "python3 /tmp/p.py && python3 < /tmp/p.py")
      assert result.stdout == expected <> expected, result.stderr
      {:ok, result} = Session.exec(session, "python3 -c 'import sys; print(sys.argv); 1/0' a")
      assert result.stdout == "['-c', 'a']\n"
      assert result.exit_code == 1

      assert result.stderr ==
               "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n" <>
                 "ZeroDivisionError: division by zero\n"

      {:ok, result} = Session.exec(session, "pip list")
      assert result.stdout =~ ~r/^attrs\s+24\.2\.0$/m

      # Another session, the same packages: from the host's cache.
      again = session(ctx, @isolation, package_cache: cache)
      {:ok, result} = Session.exec(again, "pip install requests attrs six")
      assert result.exit_code == 0, result.stderr
      assert Enum.filter(FileServer.requests(), &String.starts_with?(&1, "files/")) == []
    end
  end

  test "a tampered wheel, a compiled-only project and an index :allow_net does not allow " <>
         "are refused",
       ctx do
    [{_, _, six} | _] = Enum.filter(ctx.wheels, &match?({"six", _, _}, &1))
    path = Path.join([ctx.index, "files", six])
    File.write!(path, File.read!(path) <> "tampered")
    session = session(ctx, :none, package_cache: false)
    {:ok, result} = Session.exec(session, "pip install six")
    assert result.exit_code == 1
    assert result.stderr =~ "integrity check failed"
    {:ok, result} = Session.exec(session, "python3 -c 'import six'")
    assert result.stderr =~ "No module named 'six'"

    {:ok, result} = Session.exec(session, "pip install pyyaml")
    assert result.exit_code == 1
    assert result.stderr =~ "pyyaml 6.0.2 has no pure-Python wheel"
    FileServer.requests()

    for isolation <- [:none, :process] do
      refused =
        Session.new(
          isolation: isolation,
          python: :cpython,
          allow_net: ["http://127.0.0.1:1/"],
          block_private_ips: false,
          package_cache: false
        )

      {:ok, result} = Session.exec(refused, "pip install --index-url #{ctx.base} attrs")
      assert result.exit_code == 1
      assert result.stderr =~ "is not allowed"
      assert FileServer.requests() == []
    end
  end
end
