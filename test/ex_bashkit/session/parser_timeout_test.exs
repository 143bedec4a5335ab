defmodule ExBashkit.ParserTimeoutTest do
  # bashkit parses a script over 16 KB on a blocking thread and checks
  # :parser_timeout_ms on the session's interpreter thread, which in-VM
  # sessions share. A parse that ends while that thread is busy with
  # another session's script is accepted (tokio's timeout looks at the
  # parse first): with the suite's other modules beside it, this test failed
  # under load. Alone in the VM (async: false), the thread is free to look.
  use ExBashkit.Case, async: false

  # 940 KB: parsed for about 400 ms, so the 1 ms timeout wins.
  @script "a=(" <> Enum.join(1..150_000, " ") <> ")"

  test "parser_timeout_ms is reported as an error naming it, and the session survives" do
    session = Session.new(limits: [parser_timeout_ms: 1])
    Session.exec(session, "marker=alive")

    assert {:error, message} = Session.exec(session, @script)
    assert message =~ "parser timeout"
    assert message =~ "(limit :parser_timeout_ms)"
    assert {:ok, %Result{stdout: "alive\n"}} = Session.exec(session, "echo $marker")
  end

  test "a worker has its interpreter thread to itself" do
    session = Session.new(isolation: :process, limits: [parser_timeout_ms: 1])

    assert {:error, message} = Session.exec(session, @script)
    assert message =~ "(limit :parser_timeout_ms)"
  end
end
