defmodule ExBashkit.PythonDeadlineTest do
  # With no :timeout_ms given, Python still ends at four fifths of the
  # session's default 30 s, so the script goes on after it rather than
  # racing it for the same instant. Async: the guest only sleeps.
  use ExBashkit.Case, async: true

  @moduletag timeout: 120_000

  test "CPython under the default timeout ends at four fifths of it, and the script goes on" do
    session = Session.new(python: :cpython)
    script = "python3 -c 'import time; time.sleep(27)'; echo \"after $?\""

    assert {:ok, %Result{stdout: "after " <> status, stderr: stderr}} =
             Session.exec(session, script)

    assert status == "124\n"
    assert stderr =~ "timed out after 24.0s"
  end
end
