#!/usr/bin/env bash
# Build time and library size of the NIF with every Cargo feature against
# the minimal set (issue 17). Each build starts from an empty target
# directory, so it measures what a user without a cache waits for; the
# release profile is the one the Mix compiler uses. Takes ~10 minutes on
# 2 cores.
#
#   bash bench/features.sh
set -euo pipefail
cd "$(dirname "$0")/../native/ex_bashkit"
export PATH="$HOME/.cargo/bin:$PATH"

build() {
  local label=$1; shift
  local dir
  dir=$(mktemp -d)
  local start end
  start=$(date +%s.%N)
  CARGO_TARGET_DIR="$dir" cargo build --release --lib --quiet "$@"
  end=$(date +%s.%N)
  local size
  size=$(stat -c %s "$dir/release/libex_bashkit.so")
  local crates
  crates=$(ls "$dir/release/deps" | grep -c '\.rlib$' || true)
  printf '| %s | %.0f s | %.1f MB | %s |\n' "$label" "$(echo "$end - $start" | bc)" \
    "$(echo "$size / 1000000" | bc -l)" "$crates"
  rm -rf "$dir"
}

echo "| features | clean release build | libex_bashkit.so | crates compiled |"
echo "|---|---|---|---|"
build "all (default: python, jq, network, mounts)"
build "minimal (none)" --no-default-features
build "network only" --no-default-features --features network
