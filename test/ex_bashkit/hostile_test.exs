defmodule ExBashkit.HostileTest do
  # Scripts an attacker or a confused agent might send. Each must end in a
  # result or an error — never a crash of the VM — and leave the session
  # usable.
  use ExBashkit.Case, async: true

  # Work that never yields (the fork bomb: 9 s at idle, at lowered
  # priority) keeps its session busy after its caller is answered; on a
  # loaded machine, for minutes.
  @moduletag timeout: 400_000

  @corpus [
    {"5,000 nested command substitutions",
     String.duplicate("$(", 5_000) <> "echo hi" <> String.duplicate(")", 5_000)},
    {"20,000 nested subshells",
     String.duplicate("(", 20_000) <> "echo hi" <> String.duplicate(")", 20_000)},
    {"20,000 nested braces",
     String.duplicate("{ ", 20_000) <> "echo hi; " <> String.duplicate("}; ", 20_000)},
    {"infinite function recursion", "f() { f; }; f"},
    {"mutual recursion", "a() { b; }; b() { a; }; a"},
    {"fork bomb", ":(){ :|:& };:"},
    {"source recursion", "echo 'source /r.sh' > /r.sh; source /r.sh"},
    {"runaway loop", "while true; do :; done"},
    {"runaway nested loops", "while true; do while true; do :; done; done"},
    {"string doubling", "x=a; while true; do x=$x$x; done"},
    {"endless output", "yes"},
    {"huge output", "yes | head -c 200000000"},
    {"deep arithmetic",
     "echo $((" <> String.duplicate("(", 10_000) <> "1" <> String.duplicate(")", 10_000) <> "))"},
    {"huge brace expansion", "echo {1..100000000}"},
    {"eval recursion", ~S|e='eval "$e"'; eval "$e"|}
  ]

  for {name, script} <- @corpus do
    @script script
    test "#{name} ends in a result or an error and the session survives" do
      session = Session.new()
      Session.exec(session, "marker=alive")

      assert_bounded(Session.exec(session, @script))

      # Survives: answers once what the script started is over (a CI run
      # beside a second suite took over a minute for the fork bomb).
      assert {:ok, %Result{stdout: "alive\n"}} = once_free(session, "echo $marker", 8)
    end
  end

  # A call's deadline is at most the session's (30 s): a call that timed
  # out waiting behind the earlier script is sent again, up to `attempts`
  # times, so the session has minutes to finish what it was given.
  defp once_free(session, script, attempts) do
    case Session.exec(session, script) do
      {:error, "timed out" <> _ = message} when attempts > 1 ->
        if message =~ "an earlier script is still running",
          do: once_free(session, script, attempts - 1),
          else: {:error, message}

      outcome ->
        outcome
    end
  end

  test "the whole corpus through ExBashkit.exec/1" do
    for {_name, script} <- Enum.reject(@corpus, &match?({"eval recursion", _}, &1)) do
      assert_bounded(ExBashkit.exec(script))
    end
  end

  test "random bytes as scripts" do
    :rand.seed(:exsss, {1, 2, 3})
    session = Session.new()

    for size <- [1, 7, 64, 512, 4096], _ <- 1..20 do
      assert_bounded(Session.exec(session, :crypto.strong_rand_bytes(size)))
      printable = for _ <- 1..size, into: "", do: <<Enum.random(32..126)>>
      assert_bounded(Session.exec(session, printable))
    end

    assert {:ok, %Result{stdout: "ok\n"}} = Session.exec(session, "echo ok")
  end

  test "output past the 1 MiB cap is cut and flagged, never buffered without bound" do
    script = ~S|for i in $(seq 1 9000); do printf "%0200d\n" $i; done|
    assert {:ok, %Result{truncated: true} = result} = ExBashkit.exec(script)
    assert byte_size(result.stdout) == 1_048_576
    assert String.starts_with?(result.stdout, String.duplicate("0", 199) <> "1\n")
  end

  defp assert_bounded({:ok, %Result{stdout: out, stderr: err}}) do
    assert is_binary(out) and is_binary(err)
  end

  defp assert_bounded({:error, message}), do: assert(is_binary(message))
end
