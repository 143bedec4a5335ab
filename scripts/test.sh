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
# The suite again on Debian 13's Elixir/OTP, beside what follows: a suite
# spends three quarters of its time waiting (14.6 min of wall time for 7
# of CPU on 2 cores), and the npm and pip fixtures it loads again from the
# host now exist. The Rust checks run at the lowest priority meanwhile.
echo "==> the Elixir suite on Debian 13's Elixir/OTP, in the background (at ${SECONDS}s)"
trixie_log="$PWD/_build/trixie.log"
setsid -w bash scripts/test_trixie.sh >"$trixie_log" 2>&1 &
trixie=$!
# A check that fails stops the suite too (its group: the chroot's VM with it).
trap 'kill -TERM -- "-$trixie" 2>/dev/null || true' EXIT

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
nice -n 19 cargo clippy --release --workspace --all-targets -- -D warnings
# The escape probe's worker (test builds only, test/ex_bashkit/worker/escape_test.exs).
nice -n 19 cargo clippy --release -p ex_bashkit_worker --bin ex_bashkit_worker_probe \
  --features escape_probe -- -D warnings
# The smallest build (`config :ex_bashkit, features: []`): every part a
# feature gates must compile without it.
nice -n 19 cargo clippy --release -p ex_bashkit -p ex_bashkit_worker --lib --bins \
  --no-default-features -- -D warnings
echo "==> cargo test (at ${SECONDS}s)"
nice -n 19 cargo test --release --workspace

cd ../..
echo "==> waiting for the Elixir suite on Debian 13's Elixir/OTP (at ${SECONDS}s)"
status=0
wait "$trixie" || status=$?
trap - EXIT
cat "$trixie_log"
echo "==> done (at ${SECONDS}s)"
exit "$status"
