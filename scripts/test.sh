#!/usr/bin/env bash
# Every check CI runs: formatting, warnings, the Elixir suite (with doctests),
# and the Rust crate's fmt, clippy and tests.
cd "$(dirname "$0")/.."
export EX_BASHKIT_NEED_TMUX=1
source scripts/toolchain.sh
export MIX_ENV=test

echo "==> mix format --check-formatted"
mix format --check-formatted
echo "==> mix compile --warnings-as-errors"
mix compile --warnings-as-errors
echo "==> mix test"
mix test

cd native/ex_bashkit
echo "==> cargo fmt --check"
cargo fmt --check
# --release reuses the artifacts the NIF build above already produced.
echo "==> cargo clippy -- -D warnings"
cargo clippy --release --all-targets -- -D warnings
echo "==> cargo test"
cargo test --release

cd ../..
echo "==> the Elixir suite on Debian 13's Elixir/OTP"
bash scripts/test_trixie.sh
