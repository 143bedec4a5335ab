defmodule ExBashkitTest do
  use ExUnit.Case, async: true

  doctest ExBashkit
  doctest ExBashkit.Result
  doctest ExBashkit.Result.Stats
  doctest ExBashkit.Error

  alias ExBashkit.Result

  test "runs a script and reports stdout, stderr and the exit code" do
    assert {:ok, %Result{stdout: "out\n", stderr: "err\n", exit_code: 3, truncated: false}} =
             ExBashkit.exec("echo out; echo err >&2; exit 3")
  end

  test "keeps nothing between calls" do
    assert {:ok, _} =
             ExBashkit.exec("export A=1; f() { echo f; }; alias l=ls; cd /tmp; echo x > /kept")

    assert {:ok, result} = ExBashkit.exec(~s|echo "${A:-none}"; type f; alias l; pwd; cat /kept|)

    assert result.stdout == "none\n/\n"
    assert result.stderr =~ "f: not found"
    assert result.stderr =~ "/kept"
  end

  test "stdout is raw bytes, never re-encoded" do
    assert {:ok, %Result{stdout: <<0xFF, 0xFE, 0x80, ?\n>>}} =
             ExBashkit.exec(~S"printf '\xff\xfe\x80\n'")
  end

  test "a syntax error is an {:error, message}" do
    assert {:error, message} = ExBashkit.exec("if then fi")
    assert is_binary(message)
  end

  test "a script that is not UTF-8 is refused with a message" do
    assert {:error, message} = ExBashkit.exec(<<"echo ", 0xFF>>)
    assert message =~ "UTF-8"
  end

  test "a non-binary script raises ArgumentError" do
    assert_raise ArgumentError, ~r/script must be a binary/, fn -> ExBashkit.exec(:ls) end
    assert_raise ArgumentError, ~r/script must be a binary/, fn -> ExBashkit.exec(~c"ls") end
  end

  test "many calls at once all answer, each with its own result" do
    results =
      1..50
      |> Task.async_stream(fn i -> ExBashkit.exec("echo #{i}") end, max_concurrency: 50)
      |> Enum.map(fn {:ok, {:ok, result}} -> result.stdout end)

    assert results == Enum.map(1..50, &"#{&1}\n")
  end
end
