defmodule ExBashkit.PathDependencyTest do
  # Builds a throw-away Mix project that depends on ex_bashkit by path and
  # runs a script from it: proves the cargo compiler and NIF loading work
  # from another project's build, not just our own.
  use ExUnit.Case, async: true

  @moduletag timeout: 600_000
  @moduletag :tmp_dir

  @root Path.expand("..", __DIR__)

  test "a project depending on ex_bashkit by path can run scripts", %{tmp_dir: dir} do
    File.write!(Path.join(dir, "mix.exs"), """
    defmodule Consumer.MixProject do
      use Mix.Project

      def project do
        [app: :consumer, version: "0.1.0", deps: [{:ex_bashkit, path: #{inspect(@root)}}]]
      end
    end
    """)

    script = ~S"""
    {:ok, result} = ExBashkit.exec("echo from-consumer")
    session = ExBashkit.Session.new(files: %{"/in" => "x"})
    {:ok, session_result} = ExBashkit.Session.exec(session, "cat /in")
    IO.write(result.stdout <> session_result.stdout)
    """

    {output, status} =
      System.cmd("mix", ["run", "-e", script],
        cd: dir,
        env: [{"MIX_ENV", "dev"}],
        stderr_to_stdout: true
      )

    assert status == 0, output
    assert String.ends_with?(output, "from-consumer\nx")
  end
end
