defmodule ExBashkit.Test.Probe do
  @moduledoc false
  # The probe worker (cargo feature `escape_probe`): the real worker plus
  # an `escape` builtin that makes raw system calls
  # (native/ex_bashkit/crates/core/src/probes/escape_probe.rs) and a `lie` builtin
  # that writes forged frames to the VM (native/ex_bashkit/crates/core/src/probes/
  # lie_probe.rs). Built for the suite only, never shipped.

  import ExUnit.Assertions

  @doc """
  Builds the probe worker and returns the path of a copy of it (a later
  cargo build may replace the one under target/). The first build
  compiles the crate once more.
  """
  @spec build!() :: String.t()
  def build! do
    crate = Path.expand("../../native/ex_bashkit", __DIR__)
    cargo = System.get_env("CARGO") || System.find_executable("cargo") || flunk("no cargo")

    args =
      ~w(build --release -p ex_bashkit_worker --bin ex_bashkit_worker_probe --features escape_probe)

    {output, status} = System.cmd(cargo, args, cd: crate, stderr_to_stdout: true)
    assert status == 0, output

    dir = ExBashkit.Case.tmp_path("ex_bashkit_probe")

    File.mkdir_p!(dir)
    probe = Path.join(dir, "ex_bashkit_worker_probe")
    File.cp!(Path.join(crate, "target/release/ex_bashkit_worker_probe"), probe)
    File.chmod!(probe, 0o755)
    probe
  end
end
