defmodule ExBashkit.Session.AnswersTest do
  # How a caller receives a queued script's answer (ExBashkit.Caller, on its own).
  # The NIF answers `{tag, outcome}` and streams `{:ex_bashkit, tag, chunk}`;
  # here this process sends those messages itself, as the NIF would, so
  # each rule of the wait is seen without an interpreter in between.
  use ExBashkit.Case, async: true

  alias ExBashkit.{Caller, Error}
  alias ExBashkit.Session.ExecOptions

  defp call(opts \\ []), do: ExecOptions.validate!(opts, 30_000, "test")

  # A queued job's handle: only abandoning a job looks at it.
  defp queued, do: {:ok, make_ref()}

  describe "await/4" do
    test "a script's answer is a result" do
      tag = make_ref()
      send(self(), {tag, {:ok, {"out\n", "err\n", 3, false, [], {1, 1, 0, 0, 1, 1}}}})

      assert {:ok, %Result{stdout: "out\n", stderr: "err\n", exit_code: 3, truncated: false}} =
               Caller.await(queued(), tag, call())
    end

    test "an error is a struct, with what the script printed" do
      tag = make_ref()
      send(self(), {tag, {:error, {:limit, :max_commands, "too many", "so far\n", ""}}})

      assert {:error, %Error{reason: :limit, limit: :max_commands, stdout: "so far\n"}} =
               Caller.await(queued(), tag, call())
    end

    test "a job that could not be queued answers at once" do
      assert {:error, %Error{reason: :error, message: "busy"}} =
               Caller.await({:error, "busy"}, make_ref(), call())
    end

    test "stdout chunks go into :into as they arrive, in order" do
      call = call(into: [])
      tag = make_ref()
      send(self(), {:ex_bashkit, call.output_tag, {:stdout, "a\n"}})
      send(self(), {:ex_bashkit, call.output_tag, {:stderr, "ignored\n"}})
      send(self(), {:ex_bashkit, call.output_tag, {:stdout, "b\n"}})
      send(self(), {tag, {:ok, {"a\nb\n", "", 0, false, [], {1, 1, 0, 0, 1, 1}}}})

      assert {:ok, %Result{stdout: ["a\n", "b\n"]}} = Caller.await(queued(), tag, call)
    end

    test "chunks of an answer no longer read are flushed with the error" do
      call = call(into: [])
      tag = make_ref()
      send(self(), {tag, {:error, "failed"}})
      send(self(), {:ex_bashkit, call.output_tag, {:stdout, "late\n"}})

      assert {:error, %Error{message: "failed"}} = Caller.await(queued(), tag, call)
      refute_received {:ex_bashkit, _, _}
    end

    test "callback calls go to forward while the script runs" do
      tag = make_ref()
      test = self()
      send(self(), {:ex_bashkit_call, :pending, {:builtin, "x"}, %{}})
      send(self(), {tag, {:ok, {"", "", 0, false, [], {1, 1, 0, 0, 1, 1}}}})
      forward = &send(test, {:forwarded, &1})

      assert {:ok, %Result{}} = Caller.await(queued(), tag, call(), forward)
      assert_received {:forwarded, {:ex_bashkit_call, :pending, {:builtin, "x"}, %{}}}
    end

    test "answers of other calls stay in the mailbox" do
      tag = make_ref()
      other = make_ref()
      send(self(), {other, :not_mine})
      send(self(), {tag, {:ok, {"", "", 0, false, [], {1, 1, 0, 0, 1, 1}}}})

      assert {:ok, %Result{}} = Caller.await(queued(), tag, call())
      assert_received {^other, :not_mine}
    end
  end

  describe "finish/2" do
    test "errors are messages unless the call asked for structs" do
      error = {:error, %Error{reason: :timeout, message: "too slow"}}
      assert Caller.finish(error, call()) == {:error, "too slow"}
      assert Caller.finish(error, call(errors: :struct)) == error
    end

    test "a :stream_to listener gets the outcome, errors as structs" do
      tag = make_ref()
      error = {:error, %Error{reason: :timeout, message: "too slow"}}

      assert {:error, "too slow"} = Caller.finish(error, call(stream_to: {self(), tag}))
      assert_received {:ex_bashkit, ^tag, {:exit, ^error}}
    end
  end

  describe "reply/2" do
    test "the value a job sent, or the error it was refused with" do
      tag = make_ref()
      send(self(), {tag, {:ok, "bytes"}})
      assert Caller.reply(queued(), tag) == {:ok, "bytes"}
      assert Caller.reply({:error, "no"}, tag) == {:error, "no"}
    end
  end

  describe "spinning" do
    test "a caller spins only before its deadline" do
      assert System.monotonic_time() < Caller.deadline()
      refute Caller.spin?(System.monotonic_time() - 1)
    end
  end

  test "script!/1 takes a binary and names what it got otherwise" do
    assert Caller.script!("echo") == "echo"

    assert_raise ArgumentError, "script must be a binary, got: :echo", fn ->
      Caller.script!(:echo)
    end
  end
end
