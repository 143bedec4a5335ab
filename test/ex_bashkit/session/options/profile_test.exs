defmodule ExBashkit.ProfileTest do
  # `:profile`: a script run once when the session is built, whose shell
  # options, functions and variables every later script starts with; in
  # the VM and in a worker process alike.
  use ExBashkit.Case, async: true

  @profile """
  shopt -s nullglob
  greet() { echo "hello $1"; }
  export STAGE=ready
  mkdir -p /work && cd /work
  """

  for isolation <- [:none, :process] do
    @isolation isolation

    test "what the profile sets, every later script starts with (isolation: #{isolation})" do
      session = Session.new(profile: @profile, isolation: @isolation)

      {:ok, result} = Session.exec(session, ~S[greet ada; echo "$STAGE $(pwd)"])
      assert result.stdout == "hello ada\nready /work\n"
      # nullglob: a pattern that matches nothing expands to nothing.
      assert {:ok, %{stdout: "0\n"}} =
               Session.exec(session, ~S|files=(/nothing*); echo ${#files[@]}|)
    end

    test "a profile that fails stops new/1, saying why (isolation: #{isolation})" do
      message =
        assert_raise ArgumentError, fn ->
          Session.new(profile: "echo nope >&2; exit 3", isolation: @isolation)
        end

      assert message.message =~ "profile exited with status 3: nope"
    end
  end

  test "the profile runs where the mounts already are, under the session's policy" do
    dir = host_dir!("profile")
    File.write!(Path.join(dir, "motd"), "from the host\n")

    session =
      Session.new(
        mounts: [{"/host", dir, :read_only}],
        profile: "MOTD=$(cat /host/motd)"
      )

    assert {:ok, %{stdout: "from the host\n"}} = Session.exec(session, ~S[echo "$MOTD"])

    assert_raise ArgumentError, ~r/profile exited with status 1/, fn ->
      Session.new(profile: "curl -s http://127.0.0.1:1/", command_policy: {:deny, ["curl"]})
    end
  end

  test "a snapshot keeps what the profile set" do
    session = Session.new(profile: "greet() { echo hi; }")
    {:ok, snapshot} = Session.snapshot(session)
    {:ok, restored} = Session.restore(Session.new(), snapshot)
    assert {:ok, %{stdout: "hi\n"}} = Session.exec(restored, "greet")
  end

  test "a profile that is not a string is refused naming the option" do
    for bad <- [:set, 42, <<0xFF>>, ["set -e"]] do
      assert_raise ArgumentError, ~r/:profile must be a UTF-8 string/, fn ->
        Session.new(profile: bad)
      end
    end
  end
end
