# The interactive shell's end-to-end tests drive a real terminal through
# tmux; scripts/test.sh (and so CI) installs it.
unless System.find_executable("tmux") do
  IO.puts(:stderr, "tmux not found: skipping the tests tagged :tmux (install tmux to run them)")
  ExUnit.configure(exclude: [:tmux])
end

# The MCP server's end-to-end tests drive `mix ex_bashkit.mcp` with the
# official Python SDK; scripts/test.sh (and so CI) installs it
# (scripts/mcp_client.sh) and requires it.
mcp_python = System.get_env("EX_BASHKIT_MCP_PYTHON", "_build/mcp_client/bin/python")

unless File.exists?(mcp_python) and
         match?({_, 0}, System.cmd(mcp_python, ["-c", "import mcp"], stderr_to_stdout: true)) do
  if System.get_env("EX_BASHKIT_NEED_MCP_CLIENT") == "1",
    do: raise("EX_BASHKIT_NEED_MCP_CLIENT=1, but #{mcp_python} cannot import mcp")

  IO.puts(
    :stderr,
    "the MCP SDK not found: skipping the tests tagged :mcp_client (scripts/mcp_client.sh)"
  )

  ExUnit.configure(exclude: [:mcp_client | ExUnit.configuration()[:exclude]])
end

Application.put_env(:ex_bashkit, :test_mcp_python, Path.expand(mcp_python))

# Distribution starts here, before any test file is compiled, as
# ExBashkit.Peer.ensure_distributed!/0 advises: started by the first test
# that needs it, it renamed the node while Elixir 1.18 was still compiling
# test files, and the compiler's checker, whose pid it had kept under the
# old name, could no longer be reached ("no connection to nonode@nohost").
# ExBashkit.DistributionStartTest starts a VM of its own that is not.
ExBashkit.Peer.ensure_distributed!()

# A test that waits for something to happen asserts that it happens, not how
# fast: on a loaded machine (CI, or two suites at once) a script can take
# seconds to be scheduled. Waits that are the behaviour under test say so
# with their own bound; latency is measured in bench/.
ExUnit.start(assert_receive_timeout: 30_000)

# EX_BASHKIT_ISOLATION=process runs the Session contract with every session
# that does not choose in a worker process (scripts/test.sh does, for the
# contract's files).
if isolation = System.get_env("EX_BASHKIT_ISOLATION") do
  Application.put_env(:ex_bashkit, :isolation, String.to_existing_atom(isolation))
end

# EX_BASHKIT_WORKER=path runs workers from another executable: a wrapper
# that execs the real one under `strace -f`, to review the system calls
# workers make (native/ex_bashkit/crates/jail/src/syscalls.rs).
if worker = System.get_env("EX_BASHKIT_WORKER"),
  do: Application.put_env(:ex_bashkit, :worker_executable, worker)
