#!/usr/bin/env bash
# Every check CI runs: formatting, warnings, the Elixir suite (with doctests),
# and the Rust crate's fmt, clippy and tests.
cd "$(dirname "$0")/.."
export EX_BASHKIT_NEED_TMUX=1 EX_BASHKIT_NEED_NODE=1 EX_BASHKIT_NEED_GIT=1 EX_BASHKIT_NEED_SQLITE=1
source scripts/toolchain.sh
export MIX_ENV=test
# The official MCP SDK, which the MCP server's tests drive it with.
source scripts/mcp_client.sh _build/mcp_client
export EX_BASHKIT_NEED_MCP_CLIENT=1

echo "==> mix format --check-formatted (at ${SECONDS}s)"
mix format --check-formatted
echo "==> mix compile --warnings-as-errors (at ${SECONDS}s)"
mix compile --warnings-as-errors
echo "==> mix xref graph --format cycles (the module graph stays acyclic) (at ${SECONDS}s)"
mix xref graph --format cycles --fail-above 0
echo "==> mix test (at ${SECONDS}s)"
mix test
echo "==> the Session contract and the hostile corpus, every session in a hardened worker process (at ${SECONDS}s)"
EX_BASHKIT_ISOLATION=process mix test test/ex_bashkit/session_test.exs \
  test/ex_bashkit/session/live_control_test.exs test/ex_bashkit/session/snapshot_test.exs \
  test/ex_bashkit/builtins_test.exs test/ex_bashkit/virtual_fs_test.exs \
  test/ex_bashkit/virtual_fs_compat_test.exs test/ex_bashkit/session/options/limits_test.exs \
  test/ex_bashkit/compat_phrases_test.exs test/ex_bashkit/session/options/mounts_test.exs \
  test/ex_bashkit/session/options/network_test.exs test/ex_bashkit/code/python_test.exs \
  test/ex_bashkit/bad_arguments_test.exs test/ex_bashkit/tool_test.exs \
  test/ex_bashkit/hostile_test.exs

cd native/ex_bashkit
echo "==> cargo fmt --all --check (at ${SECONDS}s)"
cargo fmt --all --check
# --release reuses the artifacts the NIF build above already produced.
echo "==> cargo clippy -- -D warnings (at ${SECONDS}s)"
cargo clippy --release --workspace --all-targets -- -D warnings
# The escape probe's worker (test builds only, test/ex_bashkit/worker/escape_test.exs).
cargo clippy --release -p ex_bashkit_worker --bin ex_bashkit_worker_probe \
  --features escape_probe -- -D warnings
# The smallest build (`config :ex_bashkit, features: []`): every part a
# feature gates must compile without it.
cargo clippy --release -p ex_bashkit -p ex_bashkit_worker --lib --bins \
  --no-default-features -- -D warnings
echo "==> cargo test (at ${SECONDS}s)"
cargo test --release --workspace

cd ../..
echo "==> the Elixir suite on Debian 13's Elixir/OTP (at ${SECONDS}s)"
bash scripts/test_trixie.sh
