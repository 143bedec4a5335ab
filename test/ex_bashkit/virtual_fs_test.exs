defmodule ExBashkit.VirtualFsTest do
  use ExBashkit.Case, async: true

  alias ExBashkit.Test.MapFs

  @moduletag timeout: 120_000

  @poisons ["empty", "dot", "dotdot", "slash", "nul", "type", "shape", "size", "improper"]

  doctest ExBashkit.VirtualFs

  test "the example module in the moduledoc compiles and works as shown" do
    {:docs_v1, _, :elixir, _, %{"en" => moduledoc}, _, _} = Code.fetch_docs(ExBashkit.VirtualFs)
    [_, example] = String.split(moduledoc, "## Example\n", parts: 2)
    [code | _] = String.split(example, "\nThe function form receives")

    code =
      code
      |> String.split("\n")
      |> Enum.filter(&String.starts_with?(&1, "    "))
      |> Enum.map_join("\n", &String.replace_prefix(&1, "    ", ""))

    # The example ends in a match on the expected result: it raises if not.
    assert {%{"answer" => "42\n", "greeting" => "hello\n"}, _} = Code.eval_string(code)
  end

  defp session_with(backend, opts \\ []) do
    Session.new([virtual_fs: %{"/api" => backend}] ++ opts)
  end

  describe "a module backend, driven by ordinary commands" do
    setup do
      agent = MapFs.start(%{"/a.txt" => "A\n", "/d" => :dir, "/d/b.txt" => "B\n"})
      %{agent: agent, session: session_with({MapFs, agent})}
    end

    test "cat reads, and a missing file is the usual error", %{session: session} do
      assert %Result{stdout: "A\nB\n"} = run(session, "cat /api/a.txt /api/d/b.txt")

      assert %Result{exit_code: 1, stderr: "cat: /api/nope: No such file or directory\n"} =
               run(session, "cat /api/nope")
    end

    test "> writes, >> appends, paths arrive rooted at the mount", %{session: s, agent: agent} do
      run(s, "echo one > /api/new.txt; echo two >> /api/new.txt; cd /api/d; echo rel > c.txt")

      assert %{"/new.txt" => "one\ntwo\n", "/d/c.txt" => "rel\n"} = MapFs.dump(agent)
    end

    test "mkdir, ls, rm and mv", %{session: session, agent: agent} do
      assert %Result{stdout: "a.txt\nd\nsub\n"} = run(session, "mkdir /api/sub; ls /api")
      assert %Result{exit_code: 0} = run(session, "mkdir -p /api/x/y/z")
      assert MapFs.dump(agent)["/x/y/z"] == :dir

      assert %Result{exit_code: 1, stderr: stderr} = run(session, "mkdir /api/sub")
      assert stderr =~ "File exists"

      run(session, "mv /api/a.txt /api/renamed.txt")
      assert %Result{stdout: "A\n"} = run(session, "cat /api/renamed.txt")

      assert %Result{exit_code: 1, stderr: stderr} = run(session, "rm /api/d")
      assert stderr =~ "Is a directory" or stderr =~ "Directory not empty"
      assert %Result{exit_code: 0} = run(session, "rm -r /api/d")
      refute Map.has_key?(MapFs.dump(agent), "/d/b.txt")
    end

    test "stat, test and find see the backend's tree", %{session: session} do
      assert %Result{stdout: "2\n"} = run(session, "stat -c %s /api/a.txt")

      assert %Result{stdout: "file dir\n"} =
               run(session, "[ -f /api/a.txt ] && f=file; [ -d /api/d ] && d=dir; echo $f $d")

      assert %Result{stdout: "/api\n/api/a.txt\n/api/d\n/api/d/b.txt\n"} =
               run(session, "find /api | sort")
    end

    test "it composes with the in-memory filesystem, :files and host mounts", %{agent: agent} do
      host = host_dir!("vfs")
      File.write!(Path.join(host, "h.txt"), "host\n")

      session =
        Session.new(
          files: %{"/seed.txt" => "seed\n"},
          mounts: [{"/host", host, :read_only}],
          virtual_fs: %{"/api" => {MapFs, agent}}
        )

      run(session, "cp /seed.txt /api/seed.txt; cat /host/h.txt >> /api/seed.txt")
      run(session, "cp /api/a.txt /tmp/copy.txt")

      assert MapFs.dump(agent)["/seed.txt"] == "seed\nhost\n"
      assert {:ok, "A\n"} = Session.read_file(session, "/tmp/copy.txt")
      assert %Result{stdout: stdout} = run(session, "ls /")
      assert stdout =~ "api\n" and stdout =~ "host\n"
    end

    test "the file API refuses paths under the mount, even spelled indirectly", %{session: s} do
      assert {:error, message} = Session.read_file(s, "/api/a.txt")
      assert message =~ ":virtual_fs mount /api"
      assert {:error, _} = Session.read_file(s, "/tmp/../api/a.txt")
      assert {:error, _} = Session.write_file(s, "/api/new", "x")
      assert {:error, _} = Session.stat(s, "/api")
      assert {:error, _} = Session.list_dir(s, "/api/d")
      assert {:error, _} = Session.rename(s, "/tmp", "/api/t")
      assert :ok = Session.write_file(s, "/apiary/x", "not under the mount")
    end
  end

  describe "backend forms" do
    defmodule ReadOnly do
      @behaviour ExBashkit.VirtualFs
      @impl true
      def read(arg, path), do: {:ok, "#{path} #{inspect(arg)}\n"}
    end

    test "a bare module gets nil as its argument; missing callbacks are :enotsup" do
      session = session_with(ReadOnly)

      assert %Result{stdout: "/x nil\n"} = run(session, "cat /api/x")
      assert %Result{exit_code: 1, stderr: stderr} = run(session, "echo hi > /api/x")
      assert stderr =~ "Operation not supported"
    end

    test "{module, arg} passes the argument" do
      assert %Result{stdout: "/x :config\n"} =
               run(session_with({ReadOnly, :config}), "cat /api/x")
    end

    test "a function receives one request map per operation" do
      test = self()

      backend = fn request ->
        send(test, request)

        case request do
          %{op: :read} -> {:ok, "content\n"}
          %{op: :stat, path: "/f"} -> {:ok, %{type: :file, size: 8}}
          %{op: :stat, path: "/r"} -> {:ok, %{type: :dir}}
          %{op: :stat} -> {:error, :enoent}
          _ -> :ok
        end
      end

      session = session_with(backend)
      run(session, "cat /api/f; echo x > /api/w; echo y >> /api/w; mkdir -p /api/m; rm -r /api/r")

      assert_received %{op: :read, path: "/f"}
      assert_received %{op: :write, path: "/w", data: "x\n"}
      assert_received %{op: :append, path: "/w", data: "y\n"}
      assert_received %{op: :mkdir, path: "/m", recursive: true}
      assert_received %{op: :remove, path: "/r", recursive: true}
    end
  end

  describe "failures fail one operation" do
    setup do
      backend = fn
        %{op: :read, path: "/raise"} -> raise "backend bug"
        %{op: :read, path: "/exit"} -> exit(:gone)
        %{op: :read, path: "/throw"} -> throw(:up)
        %{op: :read, path: "/junk"} -> {:ok, :not_iodata}
        %{op: :read, path: "/slow"} -> Process.sleep(10_000)
        %{op: :read, path: "/message"} -> {:error, "quota exceeded"}
        %{op: :read, path: "/denied"} -> {:error, :eacces}
        %{op: :read} -> {:ok, "fine\n"}
        %{op: :list, path: "/" <> poison} -> {:ok, poisoned(poison)}
        %{op: :stat, path: "/" <> poison} when poison in @poisons -> {:ok, %{type: :dir}}
        _ -> {:error, :enotsup}
      end

      session = session_with(backend, builtin_timeout_ms: 200)
      Session.exec(session, "marker=alive")
      %{session: session}
    end

    for {path, stderr} <- [
          {"raise", "the virtual_fs backend at /api failed: raised RuntimeError: backend bug"},
          {"exit", "failed: exited: :gone"},
          {"throw", "failed: threw :up"},
          {"junk", "answered read with an invalid value: {:ok, :not_iodata}"},
          {"slow", "Timed out"},
          {"message", "quota exceeded"},
          {"denied", "Permission denied"}
        ] do
      @path path
      @stderr stderr

      test "a backend that misbehaves on /#{path}", %{session: session} do
        result = run(session, "cat /api/#{@path}; echo \"exit $?\"; echo $marker; cat /api/ok")

        assert result.stdout == "exit 1\nalive\nfine\n"
        assert result.stderr =~ @stderr
      end
    end

    for poison <- @poisons do
      @poison poison

      test "a listing with a poisoned entry (#{poison}) is rejected whole", %{session: session} do
        result = run(session, "ls /api/#{@poison}; echo \"exit $?\"")

        assert result.stdout =~ "exit "
        refute result.stdout =~ "exit 0"
        assert result.stderr =~ "invalid value"
        refute result.stdout =~ "good"
      end
    end
  end

  describe "validation" do
    test "malformed virtual_fs options raise ArgumentError" do
      for {opts, message} <- [
            {[virtual_fs: %{"api" => fn _ -> :ok end}], ~r/must be an absolute path/},
            {[virtual_fs: %{"/" => fn _ -> :ok end}], ~r/must not be the root/},
            {[virtual_fs: %{"//" => fn _ -> :ok end}], ~r/must not be the root/},
            {[virtual_fs: %{"/api/../x" => fn _ -> :ok end}], ~r/must be normalized/},
            {[virtual_fs: %{"/api" => fn -> :ok end}], ~r/backend for "\/api" must be/},
            {[virtual_fs: %{"/api" => String}], ~r/String does not implement any/},
            {[virtual_fs: %{"/api" => NoSuchModule}], ~r/NoSuchModule does not implement/},
            {[virtual_fs: %{"/api" => 42}], ~r/must be a module/},
            {[virtual_fs: [:x]], ~r/:virtual_fs entries/},
            {[virtual_fs: "x"], ~r/:virtual_fs must be a map/}
          ] do
        assert_raise ArgumentError, message, fn -> Session.new(opts) end
      end
    end

    test "a virtual mount cannot share its path with a host mount" do
      assert_raise ArgumentError,
                   ~r/mount .*"\/api".* and :virtual_fs mount "\/api" overlap/,
                   fn ->
                     Session.new(
                       mounts: [{"/api", System.tmp_dir!(), :read_only}],
                       virtual_fs: %{"/api" => fn _ -> :ok end}
                     )
                   end
    end
  end

  defp poisoned("empty"), do: [{"good", :file}, {"", :file}]
  defp poisoned("dot"), do: [{"good", :file}, {".", :dir}]
  defp poisoned("dotdot"), do: [{"good", :file}, {"..", :dir}]
  defp poisoned("slash"), do: [{"good", :file}, {"../../etc/passwd", :file}]
  defp poisoned("nul"), do: [{"good", :file}, {"a\0b", :file}]
  defp poisoned("type"), do: [{"good", :file}, {"x", :socket}]
  defp poisoned("shape"), do: [{"good", :file}, {:bare}]
  defp poisoned("size"), do: [{"good", :file}, {"big", %{type: :file, size: 2 ** 64}}]
  defp poisoned("improper"), do: [{"good", :file} | {"x", :file}]
  defp poisoned(_), do: []
end
