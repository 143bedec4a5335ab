defmodule ExBashkit.EscapeTest do
  # The hardening of worker processes, attacked from inside. The worker
  # here is built with the escape probe (cargo feature `escape_probe`,
  # native/ex_bashkit/crates/core/src/probes/escape_probe.rs): an `escape` builtin
  # making the raw system calls a script that took over its worker would.
  # Every attempt must fail and leave the host untouched; each family has a
  # positive control, so a probe that cannot do anything passes nothing.
  use ExBashkit.Case, async: false

  alias ExBashkit.Session

  # The first build of the probe compiles the crate once more.
  @moduletag timeout: 900_000

  @marker "ex_bashkit escape probe: test builds only"
  @eacces "denied 13"
  @eperm "denied 1"

  setup_all do
    probe = ExBashkit.Test.Probe.build!()
    put_config(:worker_executable, probe)

    %{probe: probe}
  end

  defp escape(session, op, arg \\ "") do
    case Session.exec(session, "escape #{op} '#{arg}'") do
      {:ok, %{stdout: out, exit_code: 0}} -> String.trim(out)
      {:ok, result} -> flunk("escape #{op} failed: #{inspect(result)}")
      {:error, message} -> {:worker_gone, message}
    end
  end

  defp hardened(opts \\ []) do
    session = Session.new([isolation: :process] ++ opts)
    layers = Session.info(session).layers

    for layer <- [:no_new_privs, :seccomp, :landlock, :rlimits, :unprivileged_user],
        do: assert(layer in layers, "#{layer} not in force: #{inspect(layers)}")

    session
  end

  setup do
    root = host_dir!("escape")
    for dir <- ["ro", "rw", "secret"], do: File.mkdir_p!(Path.join(root, dir))
    File.write!(Path.join(root, "ro/a.txt"), "mounted\n")
    File.write!(Path.join(root, "secret/key"), "TOP SECRET\n")
    File.ln_s!(Path.join(root, "secret/key"), Path.join(root, "ro/link"))
    worker_may_write!(Path.join(root, "rw"))
    %{root: root}
  end

  defp mounted(root),
    do:
      hardened(
        mounts: [
          {"/data", Path.join(root, "ro"), :read_only},
          {"/work", Path.join(root, "rw"), :read_write}
        ]
      )

  test "the probe is in the probe worker, and never in the shipped one", %{probe: probe} do
    assert escape(hardened(), "marker") == @marker
    assert File.read!(probe) =~ @marker

    # What the compiler installs, and `mix ex_bashkit.package` ships.
    shipped = Path.join(:code.priv_dir(:ex_bashkit), "native/ex_bashkit_worker")
    assert File.read!(shipped) =~ "ExBashkit"
    refute File.read!(shipped) =~ @marker
  end

  describe "files" do
    test "only the mounts are reachable, each as mounted", %{root: root} do
      session = mounted(root)

      # Positive controls: what the session mounted.
      assert escape(session, "read", Path.join(root, "ro/a.txt")) == "allowed"
      assert escape(session, "create", Path.join(root, "rw/new.txt")) == "allowed"
      assert File.read!(Path.join(root, "rw/new.txt")) == "escaped\n"

      # Everything else on the host.
      assert escape(session, "read", Path.join(root, "secret/key")) == @eacces
      assert escape(session, "read", "/etc/passwd") == @eacces
      assert escape(session, "read", "/proc/#{System.pid()}/environ") == @eacces
      assert escape(session, "list", "/") == @eacces
      assert escape(session, "list", root) == @eacces
      # A symlink in a mount that leads out of it.
      assert escape(session, "read", Path.join(root, "ro/link")) == @eacces

      for path <- [Path.join(root, "secret/new.txt"), Path.join(root, "new.txt"), "/tmp/escaped"] do
        assert escape(session, "create", path) == @eacces
        refute File.exists?(path)
      end

      # A read-only mount stays read-only.
      assert escape(session, "append", Path.join(root, "ro/a.txt")) == @eacces
      assert File.read!(Path.join(root, "ro/a.txt")) == "mounted\n"

      # Landlock does not cover chmod; the worker's user owns nothing here.
      for path <- [Path.join(root, "ro/a.txt"), Path.join(root, "secret/key")] do
        mode = File.stat!(path).mode
        assert escape(session, "chmod", path) == @eperm
        assert File.stat!(path).mode == mode
      end
    end
  end

  describe "network" do
    setup do
      {:ok, target} = :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false])
      {:ok, allowed} = :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false])
      {:ok, target_port} = :inet.port(target)
      {:ok, allowed_port} = :inet.port(allowed)

      on_exit(fn ->
        :gen_tcp.close(target)
        :gen_tcp.close(allowed)
      end)

      %{target: target, port: target_port, allowed: allowed, allowed_port: allowed_port}
    end

    test "without :allow_net, no socket at all", ctx do
      session = hardened()
      assert :network_namespace in Session.info(session).layers
      assert escape(session, "socket") == @eperm
      assert escape(session, "connect", ctx.port) == @eperm
      assert :gen_tcp.accept(ctx.target, 0) == {:error, :timeout}
    end

    test "with :allow_net, still no socket: its requests go through the host", ctx do
      session =
        hardened(allow_net: ["http://127.0.0.1:#{ctx.allowed_port}"], block_private_ips: false)

      assert :network_namespace in Session.info(session).layers

      # Not even the allowlist's own port, from inside.
      assert escape(session, "socket") == @eperm
      assert escape(session, "connect", ctx.allowed_port) == @eperm
      assert escape(session, "connect", ctx.port) == @eperm
      assert escape(session, "unix_socket") == @eperm
      assert :gen_tcp.accept(ctx.allowed, 0) == {:error, :timeout}
      assert :gen_tcp.accept(ctx.target, 0) == {:error, :timeout}

      # Positive control: curl to the allowlist's port reaches it, made by
      # the host for the worker.
      parent = self()

      server =
        spawn_link(fn ->
          {:ok, socket} = :gen_tcp.accept(ctx.allowed, 5_000)
          {:ok, request} = :gen_tcp.recv(socket, 0, 5_000)
          send(parent, {:request, request})

          :gen_tcp.send(
            socket,
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
          )

          :gen_tcp.close(socket)
        end)

      assert {:ok, %{stdout: "ok", exit_code: 0}} =
               Session.exec(session, "curl -s http://127.0.0.1:#{ctx.allowed_port}/x")

      assert_receive {:request, "GET /x" <> _}
      Process.unlink(server)
    end
  end

  describe "processes and privileges" do
    test "no new process, no signal out, no way back to root" do
      session = hardened()
      assert escape(session, "fork") == @eperm
      assert escape(session, "clone_process") == @eperm
      assert escape(session, "signal", System.pid()) == @eperm
      assert escape(session, "setuid") == @eperm
      assert escape(session, "raise_limit") == @eperm
      # Still a working session after all of that.
      assert {:ok, %{stdout: "still here\n"}} = Session.exec(session, "echo still here")
    end

    for {op, arg} <- [
          exec: "",
          ptrace: :vm,
          mount: "/tmp",
          bpf: "",
          io_uring: "",
          unshare: ""
        ] do
      test "#{op} ends the worker on the spot, and nothing else" do
        session = hardened()
        os_pid = Session.info(session).os_pid
        arg = if unquote(arg) == :vm, do: System.pid(), else: unquote(arg)

        assert {:worker_gone, message} = escape(session, unquote(op), arg)
        assert message =~ "worker process"
        assert wait_until(fn -> not process?(os_pid) end)
        assert {:ok, %{stdout: "fine\n"}} = Session.exec(hardened(), "echo fine")
      end
    end
  end

  describe "the kernel's caps" do
    test "a worker has a cgroup of its own, removed once it is gone" do
      assert ExBashkit.isolation_info().cgroup
      session = hardened()
      assert :cgroup in Session.info(session).layers
      os_pid = Session.info(session).os_pid

      dirs =
        for line <- String.split(File.read!("/proc/#{os_pid}/cgroup"), "\n"),
            line =~ "ex_bashkit_workers/#{os_pid}",
            [_, controllers, path] = String.split(line, ":", parts: 3),
            do: {controllers, path}

      assert dirs != []
      {:ok, cgroups} = Session.exec(session, "echo alive")
      assert cgroups.stdout == "alive\n"

      mounts = File.read!("/proc/self/mounts")

      paths =
        for {controllers, path} <- dirs do
          mount =
            Regex.run(~r/^\S+ (\S+) cgroup2? \S*#{controllers}\S* /m, mounts,
              capture: :all_but_first
            ) ||
              Regex.run(~r/^\S+ (\S+) cgroup2 /m, mounts, capture: :all_but_first)

          Path.join(hd(mount), path)
        end

      assert Enum.all?(paths, &File.dir?/1)
      Session.close(session)
      assert wait_until(fn -> not Enum.any?(paths, &File.dir?/1) end)
    end

    test "the cgroups of workers no owner removed are swept" do
      # As a worker of an earlier VM leaves one: named by a pid no process has.
      stale = for base <- ExBashkit.Native.worker_cgroup_bases(), do: Path.join(base, "999999999")
      assert stale != []
      Enum.each(stale, &File.mkdir_p!/1)

      send(ExBashkit.Worker.Cgroups, :sweep)
      assert wait_until(fn -> not Enum.any?(stale, &File.dir?/1) end)
    end
  end

  describe "config" do
    setup do
      on_exit(fn ->
        for key <- [:worker_user, :require_layers, :harden_workers],
            do: Application.delete_env(:ex_bashkit, key)
      end)
    end

    test "a missing layer is reported, logged once, and an error when required" do
      Application.put_env(:ex_bashkit, :worker_user, :keep)

      log =
        ExUnit.CaptureLog.capture_log(fn ->
          :persistent_term.erase({ExBashkit.Worker.Hardening, :logged, :unprivileged_user})
          # Where it has a user to become, a non-root VM's workers already are one.
          assert ExBashkit.isolation_info().root
          session = Session.new(isolation: :process)
          refute :unprivileged_user in Session.info(session).layers
          assert :seccomp in Session.info(session).layers
          Session.new(isolation: :process)
        end)

      assert [_once] = Regex.scan(~r/without the :unprivileged_user layer/, log)

      Application.put_env(:ex_bashkit, :require_layers, [:unprivileged_user])

      assert_raise ArgumentError, ~r/:unprivileged_user is required.*worker_user is :keep/, fn ->
        Session.new(isolation: :process)
      end
    end

    test "bad values are ArgumentErrors naming the key" do
      for {key, value} <- [worker_user: "nobody", require_layers: [:moat], harden_workers: :yes] do
        Application.put_env(:ex_bashkit, key, value)

        assert_raise ArgumentError, ~r/config :ex_bashkit, #{inspect(key)}/, fn ->
          Session.new(isolation: :process)
        end

        Application.delete_env(:ex_bashkit, key)
      end
    end

    test "harden_workers: false turns every layer off: the probe then reaches the host" do
      Application.put_env(:ex_bashkit, :harden_workers, false)

      log =
        ExUnit.CaptureLog.capture_log(fn ->
          :persistent_term.erase({ExBashkit.Worker.Hardening, :logged, :harden_workers})
          session = Session.new(isolation: :process)
          assert Session.info(session).layers == []
          assert escape(session, "read", "/etc/passwd") == "allowed"
        end)

      assert log =~ "without any kernel layer"
    end
  end

  test "every system call off the reviewed list is refused" do
    assert escape(hardened(), "sweep") =~ ~r/^tried \d+, leaks none$/
    assert escape(hardened(allow_net: :all), "sweep") =~ ~r/^tried \d+, leaks none$/
  end
end
