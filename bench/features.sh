#!/usr/bin/env bash
# Build time and library size of the NIF with every Cargo feature against
# smaller sets (issues 17 and 18). Each build starts from an empty target
# directory, so it measures what a user without a cache waits for; the
# release profile is the one the Mix compiler uses. About 5 minutes per
# set on 2 cores.
#
#   bash bench/features.sh                    # every set below
#   bash bench/features.sh all no-cpython     # only these
set -euo pipefail
cd "$(dirname "$0")/../native/ex_bashkit"
export PATH="$HOME/.cargo/bin:$PATH"

declare -A label=(
  [all]="all (default: python, cpython, jq, network, mounts)"
  [no-cpython]="all but cpython"
  [minimal]="minimal (none)"
  [network]="network only"
)
declare -A flags=(
  [all]=""
  [no-cpython]="--no-default-features --features python,jq,network,mounts"
  [minimal]="--no-default-features"
  [network]="--no-default-features --features network"
)

build() {
  local set=$1
  local dir start end size crates
  dir=$(mktemp -d)
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # flags are words
  CARGO_TARGET_DIR="$dir" cargo build --release --lib --quiet ${flags[$set]}
  end=$(date +%s.%N)
  size=$(stat -c %s "$dir/release/libex_bashkit.so")
  crates=$(ls "$dir/release/deps" | grep -c '\.rlib$' || true)
  printf '| %s | %.0f s | %.1f MB | %s |\n' "${label[$set]}" "$(echo "$end - $start" | bc)" \
    "$(echo "$size / 1000000" | bc -l)" "$crates"
  rm -rf "$dir"
}

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(all no-cpython minimal network)
echo "| features | clean release build | libex_bashkit.so | crates compiled |"
echo "|---|---|---|---|"
for set in "${sets[@]}"; do
  [ -n "${label[$set]+x}" ] || { echo "unknown set $set: ${!label[*]}" >&2; exit 2; }
  build "$set"
done
