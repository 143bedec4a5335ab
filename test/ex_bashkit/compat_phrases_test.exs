defmodule ExBashkit.CompatPhrasesTest do
  # Code written against ex_bashkit 0.1.7 matches on the words of its
  # errors; ours keep those words beside our own.
  use ExBashkit.Case, async: true

  test "an unknown limit says \"unknown limit\", naming the option" do
    assert_raise ArgumentError, ~r/unknown limit :max_cpu in :limits/, fn ->
      Session.new(limits: [max_cpu: 1])
    end
  end

  test "a refused mount says \"rejected\"" do
    assert_raise ArgumentError, ~r/mount "\/x" -> "\/etc": .*rejected/, fn ->
      Session.new(mounts: [{"/x", "/etc", :read_only}])
    end

    dir = host_dir!("compat")

    assert_raise ArgumentError, ~r/rejected: it is not under any :allowed_mount_paths/, fn ->
      Session.new(mounts: [{"/x", dir, :read_only}], allowed_mount_paths: ["/nonexistent_root"])
    end
  end

  test "a builtin whose process is killed says \"stopped\"" do
    session = Session.new(builtins: %{"die" => fn _ -> Process.exit(self(), :kill) end})
    assert %Result{exit_code: 1, stderr: stderr} = run(session, "die")
    assert stderr =~ "die: the callback process stopped"
  end

  test "a bad Python command name says \"python builtin name\"" do
    assert_raise ArgumentError, ~r/:python builtin names must be non-empty/, fn ->
      Session.new(python: [name: "py thon"])
    end
  end

  test "a builtin's exit code outside 0..255 is named with the range" do
    session =
      Session.new(
        builtins: %{
          "big" => fn _ -> %Result{stdout: "", stderr: "", exit_code: 300} end,
          "negative" => fn _ -> %Result{stdout: "", stderr: "", exit_code: -1} end
        }
      )

    for name <- ["big", "negative"] do
      assert %Result{exit_code: 1, stderr: stderr} = run(session, name)
      assert stderr =~ "exit code"
      assert stderr =~ "outside 0..255"
    end
  end
end
